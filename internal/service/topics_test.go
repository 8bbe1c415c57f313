package service

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/testutil/hung"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cluster is the kfake broker the package's tests share.
var cluster *kfake.Cluster

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
}

// testCtx returns a context that bounds a test's waits on a broker.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestCheckDelayTopics: the delay topics of the tiers exist, or
// CheckDelayTopics fails naming --tiers, HOURGLASS_TIERS and the missing
// topics.
func TestCheckDelayTopics(t *testing.T) {
	old := delayWait
	delayWait = 200 * time.Millisecond
	t.Cleanup(func() { delayWait = old })
	ctx := testCtx(t)
	opts := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prefix := kfaketest.TopicName(t, "") + "."
	have, _ := tiers.Parse("1m,5m")
	if _, err := topics.Provision(ctx, opts, topics.Specs(topics.Set{Prefix: prefix, Tiers: have}, 1, -1), true); err != nil {
		t.Fatal(err)
	}
	if err := CheckDelayTopics(ctx, opts, prefix, have, log); err != nil {
		t.Errorf("CheckDelayTopics(%s) = %v, want nil: every delay topic exists", have, err)
	}
	more, _ := tiers.Parse("1m,5m,2h")
	err := CheckDelayTopics(ctx, opts, prefix, more, log)
	if err == nil {
		t.Fatalf("CheckDelayTopics(%s) = nil, want an error: %sdelay.2h is missing", more, prefix)
	}
	for _, want := range []string{"--tiers", "HOURGLASS_TIERS", prefix + "delay.2h", "`hourglass topics --tiers 1m,5m,2h --topic-prefix " + prefix + "`"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), prefix+"delay.1m") {
		t.Errorf("error %q names %sdelay.1m, which exists", err, prefix)
	}
}

// TestEnsureTopicsSaysWhyItWaits: brokers that accept connections and
// never answer hold a service's start for up to topics.ProvisionTimeout;
// it says so in the log after a few seconds, naming the brokers, instead of
// starting silently.
func TestEnsureTopicsSaysWhyItWaits(t *testing.T) {
	old := slowStart
	slowStart = 200 * time.Millisecond
	t.Cleanup(func() { slowStart = old })
	addr := hung.Listen(t)
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second)
	defer cancel()
	// The client's own timeouts, not ctx, end its tries: shortened here.
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second), kgo.RequestTimeoutOverhead(time.Second)}
	if err := EnsureTopics(ctx, opts, topics.Specs(topics.Set{Prefix: "x.", Tiers: tiers.DefaultTable()}, 1, -1), true, log); err == nil {
		t.Fatal("EnsureTopics = nil against brokers that never answer")
	}
	if out := logged.String(); !strings.Contains(out, "no answer from the brokers") || !strings.Contains(out, addr) {
		t.Errorf("log does not say it waits for the brokers, naming them:\n%s", out)
	}
}

// TestEnsureTopicsConfigsDenied runs EnsureTopics as a principal that may
// describe and create the topics but not describe their configs, as a
// service with the ACLs of docs/security.md: the service starts, creating
// the missing topic, and the log says which topic configs went unchecked,
// and why.
func TestEnsureTopicsConfigsDenied(t *testing.T) {
	t.Parallel()
	const prefix = "acl."
	allow := func(op kmsg.ACLOperation) kfake.ACL {
		return kfake.ACL{Resource: kmsg.ACLResourceTypeTopic, Name: prefix, Pattern: kmsg.ACLResourcePatternTypePrefixed, Operation: op, Allow: true}
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("SCRAM-SHA-256", "admin", "admin-secret"),
		kfake.User("SCRAM-SHA-256", "service", "service-secret", allow(kmsg.ACLOperationDescribe), allow(kmsg.ACLOperationCreate)))
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
	existing, missing := prefix+"existing", prefix+"missing"
	if _, err := kadm.NewClient(admin).CreateTopic(ctx, 1, -1, nil, existing); err != nil {
		t.Fatal(err)
	}
	specs := []topics.Spec{
		{Name: existing, Partitions: 1, Replicas: -1, Configs: map[string]string{"retention.ms": "1000", "cleanup.policy": "compact"}},
		{Name: missing, Partitions: 1, Replicas: -1, Configs: map[string]string{"retention.ms": "1000"}},
	}
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := EnsureTopics(ctx, as("service", "service-secret"), specs, true, log); err != nil {
		t.Fatalf("EnsureTopics without DescribeConfigs: %v", err)
	}
	l := logged.String()
	if !strings.Contains(l, "topic configs not checked") || !strings.Contains(l, "DescribeConfigs") || !strings.Contains(l, "topics="+existing+"\n") {
		t.Errorf("EnsureTopics does not say which topic configs went unchecked, and why:\n%s", l)
	}
	if !strings.Contains(l, `msg="created topic" topic=`+missing) {
		t.Errorf("EnsureTopics does not say it created %s:\n%s", missing, l)
	}
}

// TestEnsureTopicsDelayRetention: a service's start warns about a delay
// topic that keeps records for less than twice its tier, naming the
// retention it needs, and about each missing topic with the command that
// creates it; a delay topic that keeps records longer is no difference.
func TestEnsureTopicsDelayRetention(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	opts := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	prefix := kfaketest.TopicName(t, "") + "."
	adm := kfaketest.Admin(t, cluster)
	short, long, missing := tiers.Topic(prefix, 720*time.Hour), tiers.Topic(prefix, time.Minute), tiers.Topic(prefix, 168*time.Hour)
	for topic, ms := range map[string]string{short: "604800000", long: "1209600000"} {
		if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr(ms)}, topic); err != nil {
			t.Fatal(err)
		}
	}
	table, _ := tiers.Parse("1m,168h,720h")
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	if err := EnsureTopics(ctx, opts, topics.Specs(topics.Set{Prefix: prefix, Tiers: table}, 1, -1), false, log); err != nil {
		t.Fatal(err)
	}
	l := logged.String()
	if want := `topic=` + short + ` differences="retention.ms: have \"604800000\", want at least \"5184000000\""`; !strings.Contains(l, want) {
		t.Errorf("log does not say %s:\n%s", want, l)
	}
	if strings.Contains(l, "topic="+long+" ") {
		t.Errorf("log reports %s, which keeps records longer than it needs:\n%s", long, l)
	}
	if want := "create it with `hourglass topics`"; !strings.Contains(l, want) || !strings.Contains(l, "topic="+missing+"\n") {
		t.Errorf("log does not name the missing %s and say %s:\n%s", missing, want, l)
	}
}

// TestEnsureTopicsPartitions: an existing topic with another partition
// count than --partitions is a difference only when --partitions (or
// HOURGLASS_PARTITIONS) was given: a service started against topics someone
// else created (the demo's 3 partitions) does not warn about a count nobody
// asked for.
func TestEnsureTopicsPartitions(t *testing.T) {
	ctx := testCtx(t)
	opts := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	topic := kfaketest.TopicName(t, "outcomes")
	if _, err := kfaketest.Admin(t, cluster).CreateTopic(ctx, 3, -1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  string // HOURGLASS_PARTITIONS
		warn bool
	}{
		{nil, "", false},
		{[]string{"--partitions", "6"}, "", true},
		{[]string{"--partitions", "3"}, "", false},
		{nil, "6", true},
	} {
		t.Setenv("HOURGLASS_PARTITIONS", tc.env)
		var c Common
		fs := cli.NewFlagSet("recorder", "")
		c.Register(fs, "recorder", "")
		if stop, err := Parse(fs, append([]string{"--brokers", "127.0.0.1:9092"}, tc.args...), io.Discard, &c, func() error { return nil }); stop || err != nil {
			t.Fatalf("%q: stop %v, %v", tc.args, stop, err)
		}
		var logged syncbuf.Buffer
		log := slog.New(slog.NewTextHandler(&logged, nil))
		if err := EnsureTopics(ctx, opts, c.Specs(topics.Set{Outcomes: topic}), false, log); err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(logged.String(), "partitions: have 3, want 6")
		if warned != tc.warn {
			t.Errorf("%q, HOURGLASS_PARTITIONS=%q: warned about the partitions %v, want %v:\n%s", tc.args, tc.env, warned, tc.warn, logged.String())
		}
	}
}
