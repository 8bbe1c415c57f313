package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestAbortedSchedules schedules deadlines through a transactional producer,
// committing some transactions and aborting others, with plain records
// produced between them to the same partitions (DESIGN.md invariant 6: only
// committed data fires). The router and canceller run with their default
// isolation (read committed): no record of an aborted transaction may reach
// the cancel topic or an outcome, and every committed one must be closed,
// once and on time. Each partition ends with a committed record due after
// everything before it, so that once those are closed the router has passed
// every aborted record it could have seen.
func TestAbortedSchedules(t *testing.T) {
	const (
		partitions = 2
		rounds     = 8
		perPart    = 5 // records per topic partition and transaction
	)
	p := newPipe(t, "txn", "200ms,1s", partitions)
	store := newStore()
	rt := p.defaultRouter("router")
	stopRouter := start(t, "router", rt.Run)
	cn := p.newCanceller(store)
	stopCanceller := start(t, "canceller", cn.Run)
	col := p.collectOutcomes()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.waitRunning(ctx, 1); err != nil {
		t.Fatal(err)
	}

	manual := kgo.RecordPartitioner(kgo.ManualPartitioner())
	txn, err := kgo.NewClient(append(slices.Clone(p.seeds), manual, kgo.TransactionalID(p.prefix+"scheduler"))...)
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	plain, err := kgo.NewClient(append(slices.Clone(p.seeds), manual)...)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()

	var (
		committed []*order
		aborted   []string
	)
	// build returns the record of an order due delay from now, in the
	// delay topic of tier and its partition part.
	build := func(id, class string, tier time.Duration, part int32, delay time.Duration) (*kgo.Record, *order) {
		now := time.Now()
		o := &order{id: id, class: class, delay: delay, sent: now, due: now.Add(delay)}
		store.Put(id, closer.StateUnpaid)
		rec, err := tiers.BuildRecord(p.prefix, p.table, now, tiers.Task{ID: id, Due: o.due})
		if err != nil {
			t.Fatal(err)
		}
		rec.Topic, rec.Partition = tiers.Topic(p.prefix, tier), part
		return rec, o
	}
	// Delays per tier: in the timer, or a wait in the 1s tier.
	delays := map[time.Duration][2]time.Duration{
		200 * time.Millisecond: {50 * time.Millisecond, 150 * time.Millisecond},
		time.Second:            {time.Second, 1500 * time.Millisecond},
	}
	for r := range rounds {
		commit := r%2 == 0
		outcome := map[bool]string{true: "committed", false: "aborted"}[commit]
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var recs []*kgo.Record
		for tier, d := range delays {
			for part := range int32(partitions) {
				for i := range perPart {
					id := fmt.Sprintf("txn-%d-%s-%d-%d", r, tiers.Name(tier), part, i)
					delay := d[0] + time.Duration(i)*(d[1]-d[0])/perPart
					rec, o := build(id, "txn-"+outcome, tier, part, delay)
					recs = append(recs, rec)
					if commit {
						committed = append(committed, o)
					} else {
						aborted = append(aborted, id)
					}
				}
				// A plain record in the same partition while the
				// transaction is open.
				rec, o := build(fmt.Sprintf("plain-%d-%s-%d", r, tiers.Name(tier), part), "plain", tier, part, d[1])
				if err := plain.ProduceSync(ctx, rec).FirstErr(); err != nil {
					t.Fatal(err)
				}
				committed = append(committed, o)
			}
		}
		if err := txn.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: produce in the transaction: %v", r, err)
		}
		end := kgo.TryAbort
		if commit {
			end = kgo.TryCommit
		}
		if err := txn.EndTransaction(ctx, end); err != nil {
			t.Fatalf("round %d: end the transaction (%s): %v", r, outcome, err)
		}
	}
	// The last record of each partition: due after every record before it.
	for tier, d := range delays {
		for part := range int32(partitions) {
			rec, o := build(fmt.Sprintf("last-%s-%d", tiers.Name(tier), part), "last", tier, part, d[1]+100*time.Millisecond)
			if err := plain.ProduceSync(ctx, rec).FirstErr(); err != nil {
				t.Fatal(err)
			}
			committed = append(committed, o)
		}
	}

	wctx, wcancel := allDue(ctx, committed, 15*time.Second)
	defer wcancel()
	if err := waitFor(wctx, t, func() bool { return col.seen() >= len(committed) }); err != nil {
		t.Fatalf("waiting for the committed orders' outcomes: %v; %s; router %+v", err, missing(committed, col), rt.Stats())
	}
	p.settle(ctx, col, stopRouter, stopCanceller)
	// Every committed order closed once, none early; an outcome for any
	// other id (an aborted one) is reported as never scheduled.
	v := p.checkOrders(committed, col, store)
	for _, id := range aborted {
		if n := len(store.called(id)); n > 0 {
			t.Errorf("%s, scheduled in an aborted transaction, was closed %d times", id, n)
		}
	}
	for _, r := range readAll(t, p, p.cancelTopic()) {
		if slices.Contains(aborted, string(r.Key)) {
			t.Errorf("%s, scheduled in an aborted transaction, reached %s[%d]@%d", r.Key, r.Topic, r.Partition, r.Offset)
		}
	}
	if v.dups != 0 {
		t.Errorf("%d duplicate outcomes without a crash, want 0", v.dups)
	}
	late := checkFaultlessLateness(t, "committed orders", v.late)
	t.Logf("%d committed orders closed, %d aborted ones not; lateness %s; router %+v", len(committed), len(aborted), late, rt.Stats())
}
