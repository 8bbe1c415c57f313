package e2e

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestSmoke(t *testing.T) {
	table, _ := tiers.Parse("200ms,500ms,1s,2s")
	topics := append(table.Topics("hourglass."), "hourglass.cancel", "hourglass.dlq", "hourglass.outcomes")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(4, topics...))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seeds := kgo.SeedBrokers(c.ListenAddrs()...)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rt, err := router.New(router.Config{Tiers: table}, router.Options{Kafka: []kgo.Opt{seeds}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	store := &closer.Memory{}
	cn, err := canceller.New(canceller.Config{}, canceller.Options{Kafka: []kgo.Opt{seeds}, Closer: store, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	rdone := make(chan error, 1)
	cdone := make(chan error, 1)
	go func() { rdone <- rt.Run(ctx) }()
	go func() { cdone <- cn.Run(ctx) }()

	prod, _ := kgo.NewClient(seeds)
	defer prod.Close()
	s, _ := tiers.NewScheduler(prod, table)
	const n = 2000
	now := time.Now()
	due := map[string]int64{}
	for i := 0; i < n; i++ {
		id := fmt.Sprintf("o%d", i)
		d := time.Duration(rand.IntN(5000)-200) * time.Millisecond
		store.Put(id, closer.StateUnpaid)
		due[id] = now.Add(d).UnixMilli()
		s.ScheduleAsync(ctx, tiers.Task{ID: id, Due: now.Add(d)}, func(_ *kgo.Record, err error) {
			if err != nil {
				t.Error(err)
			}
		})
	}
	oc, _ := kgo.NewClient(seeds, kgo.ConsumeTopics("hourglass.outcomes"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	defer oc.Close()
	seen := map[string]int{}
	var maxLate int64
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	for len(seen) < n && wctx.Err() == nil {
		fs := oc.PollFetches(wctx)
		fs.EachRecord(func(r *kgo.Record) {
			ev, err := outcome.Unmarshal(r.Value)
			if err != nil {
				t.Fatal(err)
			}
			seen[ev.TaskID]++
			if ev.ClosedMs < due[ev.TaskID] {
				t.Errorf("%s closed early: %d < %d", ev.TaskID, ev.ClosedMs, due[ev.TaskID])
			}
			maxLate = max(maxLate, ev.LatenessMs-max(0, now.UnixMilli()-due[ev.TaskID]))
		})
	}
	t.Logf("seen %d/%d, max lateness %dms, router %+v, canceller %+v", len(seen), n, maxLate, rt.Stats(), cn.Stats())
	if len(seen) != n {
		t.Fatalf("lost %d", n-len(seen))
	}
	cancel()
	if err := <-rdone; err != nil {
		t.Error(err)
	}
	if err := <-cdone; err != nil {
		t.Error(err)
	}
}
