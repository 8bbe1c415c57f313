package statuscmd_test

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cluster is the kfake broker the package's tests share; each test has
// topics of its own prefix.
var cluster *kfake.Cluster

// partitions of every test topic.
const partitions = 4

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
}

// pipeline is the topics of one test on a cluster: the delay topics of the
// default ladder (tiers.DefaultTiers, the default of --tiers) and the
// others, under a prefix of the test's own.
type pipeline struct {
	t      *testing.T
	c      *kfake.Cluster
	prefix string
	cl     *kgo.Client
}

// newPipeline creates the topics of a pipeline on c (the shared cluster
// when nil).
func newPipeline(t *testing.T, c *kfake.Cluster) *pipeline {
	t.Helper()
	if c == nil {
		c = cluster
	}
	p := &pipeline{t: t, c: c, prefix: kfaketest.TopicName(t, "p") + "."}
	names := append(tiers.DefaultTable().Topics(p.prefix), p.cancel(), p.outcomes(), p.dlq(), tiers.CancellationsTopic(p.prefix))
	for _, n := range names {
		if err := c.CreateTopic(n, partitions, nil); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	p.cl = cl
	return p
}

func (p *pipeline) cancel() string   { return tiers.CancelTopic(p.prefix) }
func (p *pipeline) outcomes() string { return tiers.OutcomesTopic(p.prefix) }
func (p *pipeline) dlq() string      { return tiers.DeadLetterTopic(p.prefix) }
func (p *pipeline) delay(d time.Duration) string {
	return tiers.Topic(p.prefix, d)
}

// flags point a command at the pipeline.
func (p *pipeline) flags() []string {
	return []string{"--brokers", strings.Join(p.c.ListenAddrs(), ","), "--topic-prefix", p.prefix}
}

// produce produces rs, which get their partitions and offsets.
func (p *pipeline) produce(rs ...*kgo.Record) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := p.cl.ProduceSync(ctx, rs...).FirstErr(); err != nil {
		p.t.Fatal(err)
	}
}

// schedule produces the record that schedules id at scheduled, due at
// due, into the tier topic of the delay, as tiers.Scheduler does.
func (p *pipeline) schedule(id string, scheduled, due time.Time) *kgo.Record {
	p.t.Helper()
	r, err := tiers.BuildRecord(p.prefix, tiers.DefaultTable(), scheduled, tiers.Task{ID: id, Due: due, Kind: "order-timeout", Payload: []byte("{}")})
	if err != nil {
		p.t.Fatal(err)
	}
	p.produce(r)
	return r
}

// onward produces r again in topic at now, with headers set, as the
// router does on a hop or a forward.
func (p *pipeline) onward(r *kgo.Record, topic string, now time.Time, set ...kgo.RecordHeader) *kgo.Record {
	p.t.Helper()
	out := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: now, Headers: record.SetHeaders(r.Headers, set...)}
	p.produce(out)
	return out
}

// hop produces r into the delay topic of tier at now, as the router does.
func (p *pipeline) hop(r *kgo.Record, tier time.Duration, now time.Time) *kgo.Record {
	from, _ := record.TierOf(p.prefix, r.Topic)
	return p.onward(r, p.delay(tier), now, hdr(tiers.HeaderHops, "1"), hdr(tiers.HeaderPath, tiers.Name(from)))
}

// forward produces r into the cancel topic at now, as the router does.
func (p *pipeline) forward(r *kgo.Record, now time.Time) *kgo.Record {
	return p.onward(r, p.cancel(), now, hdr(tiers.HeaderForwarded, strconv.FormatInt(now.UnixMilli(), 10)))
}

// outcome produces the outcome event of the attempt of r (a forwarded
// record, or a delay record the router dropped), closed at closed.
func (p *pipeline) outcome(r *kgo.Record, o outcome.Outcome, closed time.Time, errText string) *kgo.Record {
	p.t.Helper()
	m, err := tiers.DecodeRecord(r)
	if err != nil {
		p.t.Fatal(err)
	}
	deadline := m.Deadline
	if deadline.IsZero() {
		deadline = m.Due
	}
	e := outcome.Event{V: outcome.Version, TaskID: string(r.Key), Kind: m.Kind, Outcome: o, Error: errText, Attempt: max(m.Attempt, 1),
		Hops: m.Hops, Path: m.Path, ScheduledMs: m.Scheduled.UnixMilli(), DueMs: m.Due.UnixMilli(), DeadlineMs: deadline.UnixMilli(),
		ForwardedMs: ms(m.Forwarded), ClosedMs: closed.UnixMilli(), LatenessMs: closed.Sub(m.Due).Milliseconds(), Instance: "test",
		Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	v, err := e.Marshal()
	if err != nil {
		p.t.Fatal(err)
	}
	out := &kgo.Record{Topic: p.outcomes(), Key: r.Key, Value: v, Timestamp: closed}
	p.produce(out)
	return out
}

// cancelAt produces a cancellation of id made at at, of the deadline due
// then (every deadline when due is zero).
func (p *pipeline) cancelAt(id string, at, due time.Time) *kgo.Record {
	p.t.Helper()
	r, err := tiers.BuildCancellation(p.prefix, tiers.Cancellation{ID: id, At: at, Due: due})
	if err != nil {
		p.t.Fatal(err)
	}
	p.produce(r)
	return r
}

// deadLetter produces the dead letter of r for cause at now.
func (p *pipeline) deadLetter(r *kgo.Record, cause string, now time.Time) *kgo.Record {
	dl := record.DeadLetter(r, p.dlq(), errors.New(cause), now)
	p.produce(dl)
	return dl
}

func hdr(k, v string) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: []byte(v)} }

func ms(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// status runs hourglass status --format json with args and decodes it.
func (p *pipeline) status(id string, args ...string) (*statuscmd.Status, string) {
	p.t.Helper()
	stdout, stderr, err := cmdtest.Run(p.t, statuscmd.Run, append(append(p.flags(), "--format", "json", id), args...)...)
	if err != nil {
		p.t.Fatalf("status %s: %v\n%s", id, err, stderr)
	}
	var st statuscmd.Status
	if err := json.Unmarshal([]byte(stdout), &st); err != nil {
		p.t.Fatalf("status %s: %v in\n%s", id, err, stdout)
	}
	return &st, stdout
}

// only returns the one deadline of st.
func only(t *testing.T, st *statuscmd.Status) taskstatus.Deadline {
	t.Helper()
	if len(st.Deadlines) != 1 {
		t.Fatalf("%d deadlines, want 1: %+v", len(st.Deadlines), st.Deadlines)
	}
	return st.Deadlines[0]
}

// formatMs is t in unix milliseconds, as header values are.
func formatMs(t time.Time) string { return string(tiers.FormatMillis(t)) }

// where is topic[partition]@offset of r.
func where(r *kgo.Record) string {
	return r.Topic + "[" + strconv.Itoa(int(r.Partition)) + "]@" + strconv.FormatInt(r.Offset, 10)
}
