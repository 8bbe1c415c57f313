package statuscmd_test

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestStatusIndex runs a recorder with the index over a pipeline's topics
// and asks status --clickhouse for a waiting, a cancelled, a closed and a
// dead-lettered task: each deadline is in the state a scan of Kafka finds,
// and the lookup reads no partition.
func TestStatusIndex(t *testing.T) {
	p := newPipeline(t, nil)
	cfg := chtest.Config(t)
	store := chtest.OpenConfig(t, cfg)
	now := time.Now().Truncate(time.Millisecond)
	p.schedule("waiting", now.Add(-time.Minute), now.Add(time.Hour))
	p.schedule("cancelled", now.Add(-time.Minute), now.Add(time.Hour))
	p.cancelAt("cancelled", now.Add(-30*time.Second), time.Time{})
	f := p.forward(p.hop(p.schedule("closed", now.Add(-time.Hour), now.Add(-10*time.Minute)), time.Minute, now.Add(-11*time.Minute)), now.Add(-10*time.Minute))
	p.outcome(f, outcome.Closed, now.Add(-10*time.Minute+time.Second), "")
	bad := &kgo.Record{Topic: p.delay(time.Minute), Key: []byte("dead"), Headers: []kgo.RecordHeader{hdr(tiers.HeaderDue, "1767225600")}}
	p.produce(bad)
	p.deadLetter(bad, "due_implausible: 1767225600 is seconds", now.Add(-time.Minute))

	rec, err := recorder.New(recorder.Config{Topic: p.outcomes(), Group: p.prefix + "recorder", FlushInterval: 50 * time.Millisecond,
		Index: &recorder.Index{Prefix: p.prefix}}, recorder.Options{
		Kafka: []kgo.Opt{kgo.SeedBrokers(p.c.ListenAddrs()...)}, Store: store,
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = rec.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	poll.Until(t, time.Minute, "the recorder indexes the pipeline's records", func() bool {
		s := rec.Stats()
		return s.Indexed >= 5 && s.Inserted >= 1
	}, func() string { return fmt.Sprintf("%+v", rec.Stats()) })

	chFlags := []string{"--clickhouse", "--clickhouse-addr", cfg.Addr, "--clickhouse-database", cfg.Database}
	for _, tt := range []struct{ id, state string }{
		{"waiting", taskstatus.StateWaiting},
		{"cancelled", taskstatus.StateWaiting}, // covered by a cancellation made before it is due
		{"closed", taskstatus.StateClosed},
		{"dead", taskstatus.StateDeadLettered},
	} {
		scanned, _ := p.status(tt.id)
		indexed, out := p.status(tt.id, chFlags...)
		if indexed.Index == nil || indexed.Index.Error != "" || len(indexed.Read) != 0 || !indexed.Complete {
			t.Errorf("%s: index %+v, %d partitions read, complete %v; want a lookup alone:\n%s", tt.id, indexed.Index, len(indexed.Read), indexed.Complete, out)
			continue
		}
		got, want := only(t, indexed), only(t, scanned)
		if got.State != tt.state || want.State != tt.state || got.DeadlineMs != want.DeadlineMs {
			t.Errorf("%s: index says %s of %d, scan %s of %d; want %s:\n%s", tt.id, got.State, got.DeadlineMs, want.State, want.DeadlineMs, tt.state, out)
		}
		if (got.Cancellation != nil) != (tt.id == "cancelled") || (got.Cancellation != nil && got.Cancellation.Relation != want.Cancellation.Relation) {
			t.Errorf("%s: cancellation %+v, scan %+v", tt.id, got.Cancellation, want.Cancellation)
		}
	}
	if st, _ := p.status("nobody", chFlags...); len(st.Deadlines) != 0 || st.Index == nil || st.Index.Rows != 0 {
		t.Errorf("an unknown task: %+v", st)
	}
}
