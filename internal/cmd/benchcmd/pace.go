package benchcmd

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/router"
)

// pace calls schedule(i) for i in [0, n) at rate per second, printing
// progress every second, and returns how many it scheduled.
func pace(ctx context.Context, n, rate int, stderr io.Writer, t *embedded.Tally, fires *peak, schedule func(i int)) (int, error) {
	start := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	lastReport := start
	i := 0
	for i < n {
		select {
		case <-ctx.Done():
			return i, fmt.Errorf("bench: %w after scheduling %d orders", ctx.Err(), i)
		case now := <-tick.C:
			want := min(n, int(now.Sub(start).Seconds()*float64(rate))+1)
			for ; i < want; i++ {
				schedule(i)
			}
			if now.Sub(lastReport) >= time.Second {
				lastReport = now
				if t != nil {
					snap, w := t.Snapshot(), fires.take(t)
					if fires.onSecond != nil {
						fires.onSecond(now, snap.Tasks)
					}
					fmt.Fprintf(stderr, "bench: %5.0fs scheduled %d/%d, fired %d, lateness p99 %d ms (last second: p99 %d, max %d)\n",
						now.Sub(start).Seconds(), i, n, snap.Tasks, snap.Late.P99, w.P99, w.Max)
				} else {
					fmt.Fprintf(stderr, "bench: %5.0fs scheduled %d/%d\n", now.Sub(start).Seconds(), i, n)
				}
			}
		}
	}
	return i, nil
}

// peak keeps the highest rate of first closes over the progress intervals
// (about a second each), and the times of the first and the last first
// close.
type peak struct {
	max  int
	last time.Time
	// onSecond, if set, is called at each progress second of pace with the
	// deadlines fired so far.
	onSecond func(now time.Time, fired int)

	mu                  sync.Mutex
	firstFire, lastFire time.Time
}

// see records the time of a first close; the tally calls it with every
// event.
func (p *peak) see(first bool) {
	if !first {
		return
	}
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.firstFire.IsZero() {
		p.firstFire = now
	}
	p.lastFire = now
}

// rate returns fired closes per second from the first close to the last;
// 0 when they are at the same time.
func (p *peak) rate(fired int) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if span := p.lastFire.Sub(p.firstFire).Seconds(); span > 0 {
		return round(float64(fired) / span)
	}
	return 0
}

func (p *peak) take(t *embedded.Tally) embedded.Percentiles {
	w, n := t.TakeWindow()
	now := time.Now()
	if !p.last.IsZero() {
		if d := now.Sub(p.last).Seconds(); d >= 0.5 {
			p.max = max(p.max, int(float64(n)/d))
		}
	}
	p.last = now
	return w
}

func waitGroups(ctx context.Context, broker *kfake.Cluster) error {
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	for _, g := range []string{router.DefaultGroup, canceller.DefaultGroup} {
		if _, err := broker.WaitGroupStable(wctx, g, 1); err != nil {
			return fmt.Errorf("bench: group %s did not form: %w", g, err)
		}
	}
	return nil
}
