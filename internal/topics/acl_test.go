package topics

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// TestEnsureConfigsDenied runs Ensure as a principal that may describe and
// create the topics but not describe their configs, as a service with the
// ACLs of docs/security.md: the configs go unchecked and are said to be,
// instead of failing the start of the service. The configs of a topic it
// may describe (open) are checked all the same.
func TestEnsureConfigsDenied(t *testing.T) {
	t.Parallel()
	const prefix = "acl."
	allow := func(op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: prefix, Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.User("SCRAM-SHA-256", "service", "service-secret", allow(kmsg.ACLOperationDescribe), allow(kmsg.ACLOperationCreate),
			kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: prefix + "open", Pattern: kmsg.ACLResourcePatternTypeLiteral,
				Operation: kmsg.ACLOperationDescribeConfigs, Allow: true}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	as := func(user, pass string) []kgo.Opt {
		return []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: user, Pass: pass}.AsSha256Mechanism())}
	}
	ctx := testCtx(t)
	admin, err := kgo.NewClient(as("admin", "admin-secret")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	existing, missing, open := prefix+"existing", prefix+"missing", prefix+"open"
	for _, n := range []string{existing, open} {
		if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, -1, nil, n); err != nil {
			t.Fatal(err)
		}
	}
	specs := []Spec{
		{Name: existing, Partitions: 1, Replicas: -1, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}},
		{Name: missing, Partitions: 1, Replicas: -1, Configs: map[string]string{"retention.ms": "1000"}},
		{Name: open, Partitions: 1, Replicas: -1, Configs: map[string]string{"retention.ms": "1000"}},
	}
	svc, err := kgo.NewClient(as("service", "service-secret")...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(svc.Close)
	st, err := Ensure(ctx, kadm.NewClient(svc), specs, true)
	if err != nil {
		t.Fatalf("Ensure without DescribeConfigs: %v", err)
	}
	if s := st[0]; !s.Existed || !s.ConfigsDenied || s.OK() || !slices.Equal(s.Unverified, []string{"cleanup.policy", "retention.ms"}) || len(s.Mismatches) > 0 {
		t.Errorf("existing topic: %+v; want existed, configs denied and unverified, not OK", s)
	}
	if s := st[1]; !s.Created || s.ConfigsDenied || !s.OK() {
		t.Errorf("missing topic: %+v; want created and OK", s)
	}
	if s := st[2]; !s.Existed || s.ConfigsDenied || !slices.Equal(s.Mismatches, []string{`retention.ms: have "604800000", want "1000"`}) {
		t.Errorf("topic whose configs it may describe: %+v; want its retention.ms checked", s)
	}
	var out strings.Builder
	FormatStatus(&out, st[:1])
	if want := "configs not checked, DescribeConfigs denied: cleanup.policy, retention.ms"; !strings.Contains(out.String(), want) {
		t.Errorf("FormatStatus:\n%s\nwant it to say %q", out.String(), want)
	}
}
