package consumer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// TestFailures: runs of fetch errors, on a timeline of errors, successes,
// assignments and revokes: how long the longest run still going has lasted
// at the end, and of what.
func TestFailures(t *testing.T) {
	t.Parallel()

	t0 := time.UnixMilli(1_800_000_000_000)
	p0, p1 := tp{"t", 0}, tp{"t", 1}
	errFetch := kerr.UnknownServerError
	errGroup := &kgo.ErrGroupSession{Err: kerr.GroupAuthorizationFailed}
	type step struct {
		at       time.Duration // after t0
		k        tp
		wait     time.Duration // the backoff's pause
		err      error         // nil: records of k arrived
		assigned bool          // the member joined its group
		revoked  bool          // k was revoked
	}
	tests := []struct {
		name    string
		steps   []step
		at      time.Duration // when the runs are read
		wantFor time.Duration
		wantKey tp
	}{
		{name: "nothing failed", at: time.Minute},
		{
			name:  "a partition failing every 5s",
			steps: []step{{at: 0, k: p0, err: errFetch}, {at: 5 * time.Second, k: p0, wait: 5 * time.Second, err: errFetch}, {at: 10 * time.Second, k: p0, wait: 5 * time.Second, err: errFetch}},
			at:    12 * time.Second, wantFor: 12 * time.Second, wantKey: p0,
		},
		{
			name:  "one error, then a fetch that worked",
			steps: []step{{at: 0, k: p0, wait: time.Second, err: errFetch}},
			at:    time.Second + fetchErrorSlack + time.Millisecond,
		},
		{
			name:  "one error, not yet known to be over",
			steps: []step{{at: 0, k: p0, wait: time.Second, err: errFetch}},
			at:    time.Second + fetchErrorSlack, wantFor: time.Second + fetchErrorSlack, wantKey: p0,
		},
		{
			name:  "records end the run",
			steps: []step{{at: 0, k: p0, err: errFetch}, {at: time.Second, k: p0}},
			at:    2 * time.Second,
		},
		{
			name:  "records of another partition do not",
			steps: []step{{at: 0, k: p0, err: errFetch}, {at: time.Second, k: p1}},
			at:    2 * time.Second, wantFor: 2 * time.Second, wantKey: p0,
		},
		{
			name:  "a run after a gap starts anew",
			steps: []step{{at: 0, k: p0, err: errFetch}, {at: time.Minute, k: p0, err: errFetch}},
			at:    time.Minute + time.Second, wantFor: time.Second, wantKey: p0,
		},
		{
			name:  "the longest of two runs",
			steps: []step{{at: 0, k: p1, wait: time.Minute, err: errFetch}, {at: time.Second, k: p0, wait: time.Minute, err: errFetch}},
			at:    3 * time.Second, wantFor: 3 * time.Second, wantKey: p1,
		},
		{
			name:  "a revoke ends its partition's run",
			steps: []step{{at: 0, k: p0, err: errFetch}, {at: time.Second, k: p0, revoked: true}},
			at:    2 * time.Second,
		},
		{
			name:  "the group session fails until a join works, however far apart its errors",
			steps: []step{{at: 0, err: errGroup}, {at: 40 * time.Second, err: errGroup}},
			at:    2 * time.Minute, wantFor: 2 * time.Minute, wantKey: groupSession,
		},
		{
			name:  "a join that works ends the group session's run",
			steps: []step{{at: 0, err: errGroup}, {at: 40 * time.Second, assigned: true}},
			at:    2 * time.Minute,
		},
		{
			name:  "records end the group session's run",
			steps: []step{{at: 0, err: errGroup}, {at: 40 * time.Second, k: p1}},
			at:    2 * time.Minute,
		},
		{
			name:  "an error that names no partition",
			steps: []step{{at: 0, k: tp{"", -1}, err: errFetch}, {at: 5 * time.Second, k: tp{"", -1}, err: errFetch}},
			at:    6 * time.Second, wantFor: 6 * time.Second, wantKey: tp{"", -1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var f failures
			for _, s := range tt.steps {
				switch {
				case s.assigned:
					f.assigned()
				case s.revoked:
					f.forget(map[string][]int32{s.k.topic: {s.k.partition}})
				case s.err != nil:
					f.failed(s.k, t0.Add(s.at), s.wait, s.err)
				default:
					f.succeeded(s.k)
				}
			}
			now := t0.Add(tt.at)
			k, r, ok := f.longest(now)
			var got time.Duration
			if ok {
				got = now.Sub(r.since)
			}
			if got != tt.wantFor || ok && k != tt.wantKey {
				t.Errorf("failing for %v of %v, want %v of %v", got, k, tt.wantFor, tt.wantKey)
			}
		})
	}
}

// TestFetchFailing: a member whose fetches of its partition keep failing
// (UNKNOWN_SERVER_ERROR) reports it from FetchFailingAfter on, naming the
// partition and the error, and the gauge says for how long; once the
// partition returns records, it reports nothing. The member's clock is
// moved in steps shorter than a run's gap, each after a failed fetch.
func TestFetchFailing(t *testing.T) {
	fc := clock.NewFake(time.UnixMilli(1_800_000_000_000))
	reg := prometheus.NewRegistry()
	b := setup(t, 1, Config{Clock: fc, Registerer: reg}, nil)
	gauge := func() float64 {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == "hourglass_consumer_fetch_failing_seconds" {
				return mf.GetMetric()[0].GetGauge().GetValue()
			}
		}
		t.Fatal("no hourglass_consumer_fetch_failing_seconds")
		return 0
	}
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: b.topic, Count: -1})
	defer fault.Remove()
	ctx := testCtx(t)
	pollOnce := func() {
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		fs := b.m.Client().PollFetches(pctx)
		fs.EachRecord(func(r *kgo.Record) { b.m.Done(b.m.Take(r)) })
		if err := b.m.FetchErrors(fs, func(*kgo.ErrDecompressTooLarge) {}); err != nil {
			t.Fatal(err)
		}
		b.m.Client().AllowRebalance()
	}
	// Each step waits for the next failed fetch (the backoff pauses the
	// partition 250ms, doubling up to 5s, on the wall clock).
	failedFetch := func() {
		hits := fault.Hits()
		poll.Until(t, testTimeout, "a failed fetch", func() bool { pollOnce(); return fault.Hits() > hits }, nil)
		pollOnce() // the poll that returns the fetch's error, if that one did not
	}
	for step := range 3 {
		failedFetch()
		if err := b.m.FetchFailing(); err != nil {
			t.Fatalf("step %d, failing for %v: FetchFailing %v, want nil before %v", step, b.m.FetchFailingFor(), err, FetchFailingAfter)
		}
		fc.Advance(FetchFailingAfter / 3)
	}
	failedFetch()
	err := b.m.FetchFailing()
	want := fmt.Sprintf("fetches of %s[0] failed without a break for 30s: ", b.topic)
	if err == nil || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, kerr.UnknownServerError) {
		t.Fatalf("FetchFailing = %v, want %q and UNKNOWN_SERVER_ERROR", err, want)
	}
	if got := gauge(); got != 30 {
		t.Errorf("hourglass_consumer_fetch_failing_seconds = %v, want 30", got)
	}

	fault.Remove()
	prod, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Topic: b.topic, Value: []byte("healed")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, testTimeout, "FetchFailing nil once records arrive", func() bool { pollOnce(); return b.m.FetchFailing() == nil }, nil)
	if got := gauge(); got != 0 {
		t.Errorf("hourglass_consumer_fetch_failing_seconds = %v after records arrived, want 0", got)
	}
}
