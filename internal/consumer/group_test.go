package consumer

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/testutil/fieldtest"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
)

// TestSkipBatch: a record batch over the decompression cap is skipped with
// kafka.SkipBatch and the records after it are read, also when it is the first
// batch of a partition the group has no committed offset for (franz-go
// ignores SetOffsets on a partition it has no position for; NewClient gives
// it one).
func TestSkipBatch(t *testing.T) {
	for _, first := range []bool{true, false} {
		t.Run(fmt.Sprint("first=", first), func(t *testing.T) {
			topic := "skip-" + strconv.FormatInt(time.Now().UnixNano(), 36)
			admCl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
			if err != nil {
				t.Fatal(err)
			}
			defer admCl.Close()
			adm := kadm.NewClient(admCl)
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
			prod, err := kgo.NewClient(seeds)
			if err != nil {
				t.Fatal(err)
			}
			defer prod.Close()
			if !first {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("before")}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			if err := hostile.ZstdBomb(ctx, prod, topic, 0, []byte("bomb"), 32, 1<<20); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("after" + strconv.Itoa(i))}).FirstErr(); err != nil {
					t.Fatal(err)
				}
			}
			g := Group{Name: topic + "-group", Topics: []string{topic}, MaxDecompressBatchBytes: 1 << 20}
			cl, err := g.NewClient(seeds)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			var skipped []*kgo.ErrDecompressTooLarge
			var after int
			for after < 3 {
				fs := cl.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("read %d records after the batch, skipped %d batches", after, len(skipped))
				}
				fs.EachError(func(_ string, _ int32, err error) {
					if b := kafka.SkipBatch(cl, err); b != nil {
						skipped = append(skipped, b)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					if len(r.Value) == 6 && string(r.Value[:5]) == "after" {
						after++
					}
				})
				cl.AllowRebalance()
			}
			if len(skipped) != 1 {
				t.Errorf("skipped %d batches, want 1", len(skipped))
			}
		})
	}
}

func TestGroupCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		g    Group
		want []string // the fields named, in order
	}{
		{"defaults", Group{Name: "g", SessionTimeout: DefaultSessionTimeout}, nil},
		{"static", Group{Name: "g", InstanceID: "router-0", SessionTimeout: 45 * time.Second}, nil},
		{"no name", Group{SessionTimeout: DefaultSessionTimeout}, []string{"Name"}},
		{"no session timeout", Group{Name: "g"}, []string{"SessionTimeout"}},
		{"instance id with a space", Group{Name: "g", InstanceID: "router 0", SessionTimeout: DefaultSessionTimeout}, []string{"InstanceID"}},
		{"instance id too long", Group{Name: "g", InstanceID: strings.Repeat("x", 250), SessionTimeout: DefaultSessionTimeout}, []string{"InstanceID"}},
		{"session too short", Group{Name: "g", SessionTimeout: 500 * time.Millisecond}, []string{"SessionTimeout"}},
		{"session too long", Group{Name: "g", SessionTimeout: time.Hour}, []string{"SessionTimeout"}},
		{"matching", Group{Name: "g", TopicsMatching: `^a\.delay\.`, SessionTimeout: DefaultSessionTimeout}, nil},
		{"matching not a pattern", Group{Name: "g", TopicsMatching: `(`, SessionTimeout: DefaultSessionTimeout}, []string{"TopicsMatching"}},
		{"everything", Group{InstanceID: "a b"}, []string{"Name", "InstanceID", "SessionTimeout"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fieldtest.Fields(tc.g.Check()); !slices.Equal(got, tc.want) {
				t.Errorf("Check() names %q, want %q", got, tc.want)
			}
		})
	}
}

// groupSettings are the settings of a group client that the services'
// punctuality and safety rest on.
type groupSettings struct {
	Session, Heartbeat time.Duration
	ReadCommitted      bool
	InstanceID         string // "" for a dynamic member
	AutoCommit         bool
	BlockOnPoll        bool
}

func settingsOf(cl *kgo.Client) groupSettings {
	id := cl.OptValues(kgo.InstanceID)
	s := groupSettings{
		Session:   cl.OptValue(kgo.SessionTimeout).(time.Duration),
		Heartbeat: cl.OptValue(kgo.HeartbeatInterval).(time.Duration),
		// kgo keeps the isolation level as Kafka's number: 1 is read
		// committed.
		ReadCommitted: cl.OptValue(kgo.FetchIsolationLevel).(int8) == 1,
		AutoCommit:    !cl.OptValue(kgo.DisableAutoCommit).(bool),
		BlockOnPoll:   cl.OptValue(kgo.BlockRebalanceOnPoll).(bool),
	}
	if id[1].(bool) {
		s.InstanceID = id[0].(string)
	}
	return s
}

// TestGroupClientOpts pins what a group client of Group.Opts, alone
// (NewClient) or under a Member (New) with a service's own options, is set
// to: the 6 s session timeout with heartbeats every 250 ms (what a dead
// instance costs), read committed (an aborted schedule never fires),
// manual commits only, rebalances between polls, and the instance id when
// one is given. The values are written out: a change of a default must
// fail here, not pass unseen until the end-to-end crash tests.
func TestGroupClientOpts(t *testing.T) {
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	dynamic := groupSettings{Session: 6 * time.Second, Heartbeat: 250 * time.Millisecond, ReadCommitted: true, BlockOnPoll: true}
	static := dynamic
	static.Session, static.InstanceID = 10*time.Second, "router-0"
	short := dynamic
	short.Session, short.Heartbeat = 600*time.Millisecond, 200*time.Millisecond
	for _, tc := range []struct {
		name   string
		g      Group
		member bool
		want   groupSettings
	}{
		{"defaults", Group{}, false, dynamic},
		{"static", Group{InstanceID: "router-0", SessionTimeout: 10 * time.Second}, false, static},
		{"heartbeat within a short session", Group{SessionTimeout: 600 * time.Millisecond}, false, short},
		{"member defaults", Group{}, true, dynamic},
		{"static member", Group{InstanceID: "router-0", SessionTimeout: 10 * time.Second}, true, static},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.g.Name, tc.g.Topics = "opts-"+strconv.FormatInt(seq.Add(1), 10), []string{"opts"}
			var cl *kgo.Client
			if tc.member {
				// A service's own options come after the group's.
				m, err := New(Config{Group: tc.g, Kafka: []kgo.Opt{seeds}, Opts: []kgo.Opt{kgo.FetchMaxBytes(1 << 20), kgo.ProducerLinger(0)}})
				if err != nil {
					t.Fatal(err)
				}
				cl = m.Client()
			} else {
				var err error
				if cl, err = tc.g.NewClient(seeds); err != nil {
					t.Fatal(err)
				}
			}
			defer cl.Close()
			if got := settingsOf(cl); got != tc.want {
				t.Errorf("client settings %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestFetchErrorsDeferred: partitions of batches near the cap, read in a
// fetch, are over the client's decode budget, and the client leaves their
// batches to a later fetch, reporting it for a partition whose first batch
// it left (kafka.Deferred). That is no error: FetchErrors neither warns nor
// backs off from it, and every record is read.
func TestFetchErrorsDeferred(t *testing.T) {
	const (
		partitions = 3
		batches    = 6
	)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	topic := "deferred-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if _, err := kadm.NewClient(prod).CreateTopic(ctx, partitions, 1, nil, topic); err != nil {
		t.Fatal(err)
	}
	for p := range int32(partitions) {
		for i := range batches {
			recs := make([]kgo.Record, 9) // 900 kB decoded: most of the cap
			for j := range recs {
				recs[j] = kgo.Record{Key: fmt.Appendf(nil, "%d-%d-%d", p, i, j), Value: make([]byte, 100_000)}
			}
			batch, err := hostile.ZstdBatch(recs)
			if err != nil {
				t.Fatal(err)
			}
			if err := hostile.ProduceBatch(ctx, prod, topic, p, batch); err != nil {
				t.Fatal(err)
			}
		}
	}
	var logs syncbuf.Buffer
	m, err := New(Config{
		Group:  Group{Name: topic + "-group", Topics: []string{topic}, MaxDecompressBatchBytes: 1 << 20},
		Kafka:  []kgo.Opt{seeds},
		Opts:   []kgo.Opt{kgo.FetchMaxPartitionBytes(1 << 20)},
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Client().Close()
	var got, deferred int
	for got < partitions*batches*9 {
		fs := m.Client().PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d records; log:\n%s", got, logs.String())
		}
		fs.EachError(func(_ string, _ int32, err error) {
			if kafka.Deferred(err) {
				deferred++
			}
		})
		if err := m.FetchErrors(fs, func(b *kgo.ErrDecompressTooLarge) { t.Errorf("skipped %+v", b) }); err != nil {
			t.Fatal(err)
		}
		got += fs.NumRecords()
		m.Client().AllowRebalance()
	}
	if deferred == 0 {
		t.Error("no poll reported a deferred batch: the test read nothing over the budget")
	}
	if logs.String() != "" {
		t.Errorf("FetchErrors logged:\n%s", logs.String())
	}
}

// TestGroupTopicsMatching: a group with TopicsMatching consumes its Topics,
// the topics the pattern matches, and one created while it runs; not a topic
// whose name only contains a configured one.
func TestGroupTopicsMatching(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	p := "match" + strconv.FormatInt(time.Now().UnixNano(), 36) + "."
	seeds := kgo.SeedBrokers(cluster.ListenAddrs()...)
	prod, err := kgo.NewClient(seeds)
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	adm := kadm.NewClient(prod)
	named, matched, later, other := p+"named", p+"delay.1m", p+"delay.2m", p+"named.x"
	if _, err := adm.CreateTopics(ctx, 1, 1, nil, named, matched, other); err != nil {
		t.Fatal(err)
	}
	g := Group{Name: p + "group", Topics: []string{named}, TopicsMatching: `^` + regexp.QuoteMeta(p+"delay.") + `[0-9]+m$`, SessionTimeout: DefaultSessionTimeout}
	cl, err := g.NewClient(seeds, kgo.MetadataMinAge(50*time.Millisecond), kgo.MetadataMaxAge(100*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for _, topic := range []string{named, matched, other} {
		if err := prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(topic)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	got := map[string]bool{}
	created := false
	for !got[later] {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read from %v, want %s, %s and %s", got, named, matched, later)
		}
		fs.EachRecord(func(r *kgo.Record) { got[r.Topic] = true })
		cl.AllowRebalance()
		if got[named] && got[matched] && !created {
			created = true
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, later); err != nil {
				t.Fatal(err)
			}
			if err := prod.ProduceSync(ctx, &kgo.Record{Topic: later, Value: []byte(later)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got[other] {
		t.Errorf("read %s, which the group neither names nor matches", other)
	}
}
