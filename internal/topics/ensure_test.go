package topics

import (
	"bytes"
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// kfakeTopicDefaults are the topic configs kfake reports for a topic with no
// configs of its own (measured by TestKfakeDescribeConfigs).
var kfakeTopicDefaults = map[string]string{
	"cleanup.policy":         "delete",
	"compression.type":       "producer",
	"delete.retention.ms":    "86400000",
	"max.message.bytes":      "1048588",
	"message.timestamp.type": "CreateTime",
	"min.insync.replicas":    "1",
	"retention.bytes":        "-1",
	"retention.ms":           "604800000",
	"segment.bytes":          "104857600",
	"segment.ms":             "604800000",
}

// TestKfakeDescribeConfigs measures what kfake answers to DescribeConfigs for
// a topic, the answer Ensure compares against:
//   - a topic created without configs: exactly the ten defaults above, each
//     with source DEFAULT_CONFIG; nothing else (a real Kafka reports every
//     topic config, e.g. min.compaction.lag.ms);
//   - a topic created with configs: those configs as DYNAMIC_TOPIC_CONFIG,
//     the default kept as a synonym; a config name Kafka does not know is
//     accepted at create and reported back (kfake does not validate);
//   - a config kfake has no default for and that was not set is absent.
func TestKfakeDescribeConfigs(t *testing.T) {
	t.Parallel()
	ctx, adm := testCtx(t), newAdmin(t, nil)
	plain, custom := topicName(t, "plain"), topicName(t, "custom")
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, plain); err != nil {
		t.Fatalf("create %s: %v", plain, err)
	}
	if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{
		"retention.ms":     kadm.StringPtr("1209600000"),
		"hourglass.bogus":  kadm.StringPtr("x"),
		"segment.index.ms": kadm.StringPtr("5"),
	}, custom); err != nil {
		t.Fatalf("create %s with unknown configs: %v (kfake is expected not to validate configs)", custom, err)
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, plain, custom)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	got := make(map[string]map[string]kadm.Config)
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("describe configs %s: %v", rc.Name, rc.Err)
		}
		got[rc.Name] = make(map[string]kadm.Config)
		for _, c := range rc.Configs {
			got[rc.Name][c.Key] = c
			t.Logf("%s: %s=%q source=%v synonyms=%d", rc.Name, c.Key, c.MaybeValue(), c.Source, len(c.Synonyms))
		}
	}

	plainGot := make(map[string]string)
	for k, c := range got[plain] {
		plainGot[k] = c.MaybeValue()
		if c.Source != kmsg.ConfigSourceDefaultConfig {
			t.Errorf("%s: %s source %v, want DEFAULT_CONFIG", plain, k, c.Source)
		}
	}
	if !maps.Equal(plainGot, kfakeTopicDefaults) {
		t.Errorf("%s configs = %v\nwant %v", plain, plainGot, kfakeTopicDefaults)
	}

	for k, want := range map[string]string{"retention.ms": "1209600000", "hourglass.bogus": "x", "segment.index.ms": "5"} {
		c, ok := got[custom][k]
		if !ok {
			t.Errorf("%s: %s not reported", custom, k)
			continue
		}
		if c.MaybeValue() != want || c.Source != kmsg.ConfigSourceDynamicTopicConfig {
			t.Errorf("%s: %s = %q from %v, want %q from DYNAMIC_TOPIC_CONFIG", custom, k, c.MaybeValue(), c.Source, want)
		}
	}
	if syn := got[custom]["retention.ms"].Synonyms; len(syn) != 1 || syn[0].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("%s: retention.ms synonyms = %+v, want the default", custom, syn)
	}
	if _, ok := got[custom]["min.compaction.lag.ms"]; ok {
		t.Errorf("kfake now reports min.compaction.lag.ms; update the notes on unverified configs")
	}
}

func TestEnsureTopicsCreateThenExisted(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	specs := []Spec{
		{Name: topicName(t, "a"), Partitions: 6, Replicas: 1, Configs: map[string]string{"retention.ms": "1209600000"}},
		{Name: topicName(t, "b"), Partitions: 2, Replicas: -1, Configs: map[string]string{"cleanup.policy": "compact,delete"}},
	}

	st, err := Ensure(ctx, newAdmin(t, nil), specs, true)
	if err != nil {
		t.Fatalf("first Ensure: %v", err)
	}
	want := []Status{
		{Spec: specs[0], Created: true, Partitions: 6},
		{Spec: specs[1], Created: true, Partitions: 2},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("first Ensure =\n%+v\nwant\n%+v", st, want)
	}

	// A second run, as a restarted process would do it: a new client.
	// The list config is compared as a set.
	specs[1].Configs["cleanup.policy"] = "delete, compact"
	st, err = Ensure(ctx, newAdmin(t, nil), specs, true)
	if err != nil {
		t.Fatalf("second Ensure: %v", err)
	}
	want = []Status{
		{Spec: specs[0], Existed: true, Partitions: 6},
		{Spec: specs[1], Existed: true, Partitions: 2},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("second Ensure =\n%+v\nwant\n%+v", st, want)
	}
	for _, s := range st {
		if !s.OK() {
			t.Errorf("%s: OK() = false", s.Spec.Name)
		}
	}
}

// TestEnsureTopicsSecondRunSameClient proves Ensure does not answer
// from kgo's metadata cache, which would still hold "unknown topic" from the
// first run: the second run on the same client must see the topic and send
// no CreateTopics at all.
func TestEnsureTopicsSecondRunSameClient(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var creates atomic.Int32
	c.ControlKey(kmsg.CreateTopics.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		creates.Add(1)
		return nil, nil, false
	})

	ctx, adm := testCtx(t), newAdmin(t, c)
	specs := []Spec{{Name: topicName(t, "a"), Partitions: 3, Replicas: -1}}
	for i, want := range []struct {
		state   string
		creates int32
	}{{"created", 1}, {"exists", 1}} {
		st, err := Ensure(ctx, adm, specs, true)
		if err != nil {
			t.Fatalf("run %d: %v", i+1, err)
		}
		if st[0].State() != want.state || len(st[0].Mismatches) != 0 || st[0].Partitions != 3 {
			t.Fatalf("run %d: %+v, want %s with 3 partitions and no mismatches", i+1, st[0], want.state)
		}
		if n := creates.Load(); n != want.creates {
			t.Fatalf("after run %d: %d CreateTopics requests, want %d", i+1, n, want.creates)
		}
	}
}

func TestEnsureTopicsMismatchNotAltered(t *testing.T) {
	t.Parallel()
	ctx, adm := testCtx(t), newAdmin(t, nil)
	name := topicName(t, "a")
	if _, err := adm.CreateTopic(ctx, 3, -1, map[string]*string{"retention.ms": kadm.StringPtr("604800000")}, name); err != nil {
		t.Fatalf("pre-create %s: %v", name, err)
	}
	spec := Spec{Name: name, Partitions: 6, Replicas: -1, Configs: map[string]string{
		"retention.ms":     "1209600000",
		"cleanup.policy":   "delete",   // kfake default: reported, matches
		"min.cleanable.dr": "0.5",      // not reported by kfake: unknown
		"compression.type": "producer", // kfake default: reported, matches
	}}
	st, err := Ensure(ctx, adm, []Spec{spec}, true)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	want := []Status{{
		Spec:       spec,
		Existed:    true,
		Partitions: 3,
		Mismatches: []string{
			"partitions: have 3, want 6",
			`retention.ms: have "604800000", want "1209600000"`,
		},
		Unverified: []string{"min.cleanable.dr"},
	}}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("Ensure =\n%+v\nwant\n%+v", st, want)
	}
	if st[0].OK() {
		t.Error("OK() = true for a mismatched topic")
	}

	// Not altered.
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), name)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(details[name].Partitions); n != 3 {
		t.Errorf("partitions after Ensure = %d, want 3 (unaltered)", n)
	}
	rc, err := adm.DescribeTopicConfigs(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc[0].Configs {
		if c.Key == "retention.ms" && c.MaybeValue() != "604800000" {
			t.Errorf("retention.ms after Ensure = %q, want 604800000 (unaltered)", c.MaybeValue())
		}
	}
}

// TestEnsureTopicsRetentionFloor: the retention of a delay topic is a
// floor: an existing topic that keeps records longer, or forever (-1),
// passes; one that keeps them shorter is a mismatch saying so.
func TestEnsureTopicsRetentionFloor(t *testing.T) {
	t.Parallel()
	ctx, adm := testCtx(t), newAdmin(t, nil)
	prefix := topicName(t, "") + "."
	table, _ := tiers.Parse("1m,168h,720h,2160h")
	have := map[time.Duration]string{
		time.Minute:      "604800000",  // 7 days, as wanted
		168 * time.Hour:  "8640000000", // 100 days, longer than 14
		720 * time.Hour:  "-1",         // forever
		2160 * time.Hour: "1209600000", // 14 days, shorter than 180
	}
	for d, ms := range have {
		if _, err := adm.CreateTopic(ctx, 1, -1, map[string]*string{"retention.ms": kadm.StringPtr(ms)}, tiers.Topic(prefix, d)); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Ensure(ctx, adm, Specs(Set{Prefix: prefix, Tiers: table}, 1, -1), false)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		d, _ := tiers.TierOf(prefix, s.Spec.Name)
		switch d {
		case 2160 * time.Hour:
			if want := []string{`retention.ms: have "1209600000", want at least "15552000000"`}; !slices.Equal(s.Mismatches, want) || s.OK() {
				t.Errorf("%s: mismatches %q, OK %v; want %q", s.Spec.Name, s.Mismatches, s.OK(), want)
			}
		default:
			if !s.OK() {
				t.Errorf("%s (retention.ms %s): mismatches %q, want none", s.Spec.Name, have[d], s.Mismatches)
			}
		}
	}
}

func TestEnsureTopicsReplicasMismatch(t *testing.T) {
	t.Parallel()
	ctx, adm := testCtx(t), newAdmin(t, nil)
	name := topicName(t, "a")
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, name); err != nil {
		t.Fatal(err)
	}
	st, err := Ensure(ctx, adm, []Spec{{Name: name, Partitions: 1, Replicas: 3}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"replicas: have 1, want 3"}; !slices.Equal(st[0].Mismatches, want) {
		t.Errorf("Mismatches = %q, want %q", st[0].Mismatches, want)
	}
}

func TestEnsureTopicsCheckOnly(t *testing.T) {
	t.Parallel()
	ctx, adm := testCtx(t), newAdmin(t, nil)
	present, missing := topicName(t, "present"), topicName(t, "missing")
	if _, err := adm.CreateTopic(ctx, 2, -1, nil, present); err != nil {
		t.Fatal(err)
	}
	specs := []Spec{
		{Name: missing, Partitions: 4, Replicas: -1},
		{Name: present, Partitions: 2, Replicas: -1},
	}
	st, err := Ensure(ctx, adm, specs, false)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	want := []Status{
		{Spec: specs[0]},
		{Spec: specs[1], Existed: true, Partitions: 2},
	}
	if !reflect.DeepEqual(st, want) {
		t.Fatalf("Ensure =\n%+v\nwant\n%+v", st, want)
	}
	if st[0].State() != "missing" || st[0].OK() {
		t.Errorf("missing topic: State %q OK %v", st[0].State(), st[0].OK())
	}
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), missing)
	if err != nil {
		t.Fatal(err)
	}
	if details[missing].Err == nil {
		t.Errorf("check-only Ensure created %s", missing)
	}
}

// TestEnsureTopicsConcurrent runs Ensure from two goroutines with two
// clients, as two processes starting at once would. A control function holds
// the first metadata request naming the topics until the second arrives, so
// both runs see the topics missing and both try to create them: one create of
// each topic must fail with TOPIC_ALREADY_EXISTS, which must count as existed.
func TestEnsureTopicsConcurrent(t *testing.T) {
	t.Parallel()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)

	specs := []Spec{
		{Name: topicName(t, "a"), Partitions: 3, Replicas: -1, Configs: map[string]string{"retention.ms": "60000"}},
		{Name: topicName(t, "b"), Partitions: 1, Replicas: -1},
	}
	var (
		mu         sync.Mutex
		lists      int
		bothListed = make(chan struct{})
		raced      = true
	)
	c.ControlKey(kmsg.Metadata.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		req := kreq.(*kmsg.MetadataRequest)
		if !slices.ContainsFunc(req.Topics, func(rt kmsg.MetadataRequestTopic) bool {
			return rt.Topic != nil && *rt.Topic == specs[0].Name
		}) {
			return nil, nil, false
		}
		c.KeepControl()
		mu.Lock()
		lists++
		n := lists
		mu.Unlock()
		switch n {
		case 1:
			// Yields to the other connections until the
			// second list arrives; bounded so a broken test
			// cannot hang.
			c.SleepControl(func() {
				select {
				case <-bothListed:
				case <-time.After(testTimeout / 2):
					mu.Lock()
					raced = false
					mu.Unlock()
				}
			})
		case 2:
			close(bothListed)
		}
		return nil, nil, false
	})

	ctx := testCtx(t)
	var (
		wg   sync.WaitGroup
		sts  [2][]Status
		errs [2]error
	)
	for i := range 2 {
		adm := newAdmin(t, c)
		wg.Go(func() { sts[i], errs[i] = Ensure(ctx, adm, specs, true) })
	}
	wg.Wait()
	mu.Lock()
	if !raced {
		t.Error("the two runs did not list the topics at the same time; the race was not exercised")
	}
	mu.Unlock()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("Ensure %d: %v", i, err)
		}
	}
	for j, spec := range specs {
		var created, existed int
		for i := range 2 {
			s := sts[i][j]
			if s.Created {
				created++
			}
			if s.Existed {
				existed++
			}
			if !s.OK() || s.Partitions != spec.Partitions || len(s.Unverified) != 0 {
				t.Errorf("run %d, %s: %+v, want OK with %d partitions", i, spec.Name, s, spec.Partitions)
			}
		}
		if created != 1 || existed != 1 {
			t.Errorf("%s: created by %d runs, existed for %d; want 1 and 1", spec.Name, created, existed)
		}
	}
}

// TestEnsureTopicsConcurrentUnsynchronised runs several Ensure at once
// on the shared cluster without forcing any interleaving.
func TestEnsureTopicsConcurrentUnsynchronised(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	specs := []Spec{{Name: topicName(t, "a"), Partitions: 2, Replicas: -1}}
	const runs = 4
	var (
		wg   sync.WaitGroup
		sts  [runs][]Status
		errs [runs]error
	)
	for i := range runs {
		adm := newAdmin(t, nil)
		wg.Go(func() { sts[i], errs[i] = Ensure(ctx, adm, specs, true) })
	}
	wg.Wait()
	created := 0
	for i := range runs {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if sts[i][0].Created {
			created++
		}
		if !sts[i][0].OK() {
			t.Errorf("run %d: %+v", i, sts[i][0])
		}
	}
	if created != 1 {
		t.Errorf("created by %d runs, want 1", created)
	}
}

func TestEnsureTopicsBadSpecs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		specs []Spec
		want  []string
	}{
		{"empty name", []Spec{{Partitions: 1, Replicas: 1}}, []string{"empty name"}},
		{"duplicate", []Spec{{Name: "x", Partitions: 1, Replicas: 1}, {Name: "x", Partitions: 1, Replicas: 1}}, []string{"topic x: listed twice"}},
		{"zero partitions", []Spec{{Name: "x", Replicas: 1}}, []string{"topic x: partitions 0"}},
		{"bad replicas", []Spec{{Name: "x", Partitions: 1, Replicas: -2}}, []string{"topic x: replicas -2"}},
		{"all reported", []Spec{{Name: "x"}}, []string{"partitions 0", "replicas 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			// A nil client proves no request is made.
			_, err := Ensure(context.Background(), nil, tt.specs, true)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestEnsureTopicsNone(t *testing.T) {
	t.Parallel()
	st, err := Ensure(context.Background(), nil, nil, true)
	if err != nil || len(st) != 0 {
		t.Errorf("Ensure(no specs) = %v, %v; want empty, nil", st, err)
	}
}

func TestFormatStatus(t *testing.T) {
	t.Parallel()
	st := []Status{
		{Spec: Spec{Name: "hourglass.delay.1m", Partitions: 6}, Created: true, Partitions: 6},
		{Spec: Spec{Name: "hourglass.cancel", Partitions: 6}, Existed: true, Partitions: 3,
			Mismatches: []string{"partitions: have 3, want 6", `retention.ms: have "1", want "2"`},
			Unverified: []string{"min.compaction.lag.ms"}},
		{Spec: Spec{Name: "hourglass.dlq", Partitions: 1}},
	}
	var out bytes.Buffer
	FormatStatus(&out, st)
	want := `TOPIC               STATE    PARTITIONS  PROBLEMS
hourglass.delay.1m  created  6           -
hourglass.cancel    exists   3           partitions: have 3, want 6; retention.ms: have "1", want "2"; not reported by broker: min.compaction.lag.ms
hourglass.dlq       missing  -           -
`
	if out.String() != want {
		t.Errorf("FormatStatus:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestSameConfigValue(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have, want string
		same       bool
	}{
		{"604800000", "604800000", true},
		{"604800000", " 604800000 ", true},
		{"604800000", "1209600000", false},
		{"compact,delete", "delete,compact", true},
		{"compact, delete", "delete,compact", true},
		{"compact", "compact,delete", false},
		{"", "", true},
		{"", "x", false},
	}
	for _, tt := range tests {
		if got := sameConfigValue(tt.have, tt.want); got != tt.same {
			t.Errorf("sameConfigValue(%q, %q) = %v, want %v", tt.have, tt.want, got, tt.same)
		}
	}
}

func TestAtLeast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		have, want string
		ok         bool
	}{
		{"604800000", "604800000", true},
		{" 1209600000", "604800000", true},
		{"-1", "604800000", true},
		{"604799999", "604800000", false},
		{"0", "604800000", false},
		{"x", "x", true},
		{"x", "604800000", false},
	}
	for _, tt := range tests {
		if got := atLeast(tt.have, tt.want); got != tt.ok {
			t.Errorf("atLeast(%q, %q) = %v, want %v", tt.have, tt.want, got, tt.ok)
		}
	}
}
