package canceller

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// givenUp is a canceller holding records it will give up at a revoke or a
// stop, and what must follow.
type givenUp struct {
	b *bundle
	// want is the offset the group must commit: the first record given up.
	want int64
	// closes are the closes per task id a canceller started afterwards
	// must reach: the given-up records closed by the next owner.
	closes map[string]int
	// unblock lets the records that are not given up finish; after is
	// called before the canceller starts again.
	unblock, after func()
}

// closeLog is a closer that counts closes per task id; the first close of
// task "slow" waits for release.
type closeLog struct {
	mu      sync.Mutex
	n       map[string]int
	entered chan struct{}
	release chan struct{}
}

func newCloseLog() *closeLog {
	return &closeLog{n: map[string]int{}, entered: make(chan struct{}), release: make(chan struct{})}
}

func (l *closeLog) Close(_ context.Context, tk closer.Task) (closer.Result, error) {
	l.mu.Lock()
	l.n[tk.ID]++
	first := l.n[tk.ID] == 1
	l.mu.Unlock()
	if tk.ID == "slow" && first {
		close(l.entered)
		<-l.release
	}
	return closer.Result{Outcome: outcome.Closed}, nil
}

func (l *closeLog) count(id string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n[id]
}

// counters returns the canceller's pending and unacknowledged records.
func (b *bundle) counters() (pending, unacked int) {
	b.c.mu.Lock()
	defer b.c.mu.Unlock()
	return b.c.pending, b.c.unacked
}

// TestGivenUpNotDone: a record the canceller gives up at a revoke or a
// stop (queued behind a close of its task id, waiting for the rate limit,
// or with its outcome event refused) is left uncommitted, and the next
// canceller closes it. Counted as done, its offset would be committed and
// its order never closed.
func TestGivenUpNotDone(t *testing.T) {
	paths := []struct {
		name string
		hold func(*testing.T, *closeLog) givenUp
	}{
		{"queued behind its task id", queuedBehindTask},
		{"waiting for the rate limit", waitingForRate},
		{"outcome event refused", outcomeRefused},
	}
	for _, path := range paths {
		for _, at := range []string{"stop", "revoke"} {
			t.Run(path.name+" at "+at, func(t *testing.T) {
				log := newCloseLog()
				g := path.hold(t, log)
				b := g.b
				b.c.mu.Lock()
				p := b.c.parts[tp{b.cfg.Topics[0], 0}]
				b.c.mu.Unlock()
				ended := make(chan error, 1)
				go func() {
					if at == "revoke" {
						b.c.member.Revoked(map[string][]int32{b.cfg.Topics[0]: {0}})
					}
					ended <- b.stop()
				}()
				waitFor(t, "the partition let go", func() bool { return p.ctx.Err() != nil }, func() string { return "" })
				g.unblock()
				if err := <-ended; err != nil {
					t.Fatalf("Run: %v", err)
				}
				if got := b.committed(t); got != g.want {
					t.Fatalf("committed %d after the %s, want %d: a record given up was counted as done", got, at, g.want)
				}
				g.after()
				b.start(t, Options{Closer: log})
				for id, n := range g.closes {
					waitFor(t, fmt.Sprintf("%d closes of %s", n, id), func() bool { return log.count(id) >= n },
						func() string { return fmt.Sprint(log.count(id)) })
				}
			})
		}
	}
}

// queuedBehindTask: "a" closes, the first "slow" close runs until
// unblock, and the two "slow" records after it wait their turn; those two
// are given up.
func queuedBehindTask(t *testing.T, log *closeLog) givenUp {
	b := setup(t, Config{MaxInFlight: 2}, log)
	due := hdrMillis(tiers.HeaderDue, t0)
	rs := []*kgo.Record{{Key: []byte("a")}, {Key: []byte("slow")}, {Key: []byte("slow")}, {Key: []byte("slow")}}
	for _, r := range rs {
		r.Topic, r.Headers = b.cfg.Topics[0], []kgo.RecordHeader{due}
	}
	if err := b.cl.ProduceSync(context.Background(), rs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	<-log.entered
	waitFor(t, "a finished, slow closing and two records waiting behind it", func() bool {
		_, unacked := b.counters()
		b.c.mu.Lock()
		defer b.c.mu.Unlock()
		return unacked == 3 && len(b.c.keys["slow"]) == 2
	}, func() string { return fmt.Sprint(b.counters()) })
	release := sync.OnceFunc(func() { close(log.release) })
	t.Cleanup(release)
	return givenUp{b: b, want: 2, closes: map[string]int{"slow": 3}, unblock: release, after: func() {}}
}

// waitingForRate: "a" takes the rate limit's only token, and "b" waits
// for the next one, far away; "b" is given up.
func waitingForRate(t *testing.T, log *closeLog) givenUp {
	b := setup(t, Config{RateLimit: 0.001, RateBurst: 1}, log)
	due := hdrMillis(tiers.HeaderDue, t0)
	b.produce(t, "a", "", due)
	waitFor(t, "a finished", func() bool {
		_, unacked := b.counters()
		return unacked == 0 && log.count("a") == 1
	}, func() string { return fmt.Sprint(b.counters()) })
	b.produce(t, "b", "", due)
	waitFor(t, "b taken", func() bool {
		pending, _ := b.counters()
		return pending == 1
	}, func() string { return fmt.Sprint(b.counters()) })
	return givenUp{b: b, want: 1, closes: map[string]int{"b": 1}, unblock: func() {}, after: func() {}}
}

// outcomeRefused: "a" is finished; the outcome event of "b" is refused
// until the fault is removed, so "b" waits to produce it again and is
// given up.
func outcomeRefused(t *testing.T, log *closeLog) givenUp {
	b := setup(t, Config{}, log)
	due := hdrMillis(tiers.HeaderDue, t0)
	b.produce(t, "a", "", due)
	waitFor(t, "a finished", func() bool {
		_, unacked := b.counters()
		return unacked == 0 && log.count("a") == 1
	}, func() string { return fmt.Sprint(b.counters()) })
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Outcomes, Err: kerr.TopicAuthorizationFailed, Count: -1})
	t.Cleanup(fault.Remove)
	b.produce(t, "b", "", due)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := fault.Wait(ctx, 1); err != nil {
		t.Fatalf("the outcome of b was not refused: %v", err)
	}
	return givenUp{b: b, want: 1, closes: map[string]int{"b": 2}, unblock: func() {}, after: fault.Remove}
}
