package procs

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// TestStep: the decisions, tick by tick, of a scaler with Max 2, Up 0.5,
// Down 0.3, Settle 1s and 100ms ticks.
func TestStep(t *testing.T) {
	const tick = 100 * time.Millisecond
	for _, tc := range []struct {
		name  string
		cores []float64 // the use of each tick
		want  []int     // what each tick sets (0: nothing)
	}{
		{"busy stays on max", repeat(0.4, 30), make([]int, 30)},
		{"idle goes to one after a settle, not before", repeat(0.1, 11), append(make([]int, 9), 1, 0)},
		{"a busy settle keeps max, the next idle one goes to one",
			append(append(repeat(0.2, 8), 0.9, 0.9), repeat(0.1, 10)...),
			append(make([]int, 19), 1)},
		{"a short spike within an idle settle does not keep max",
			append(append(repeat(0.1, 5), 0.9), repeat(0.1, 4)...),
			append(make([]int, 9), 1)},
		{"on one, a busy tick goes back to max at once",
			append(repeat(0.1, 10), 0.2, 0.49, 0.5, 0.1),
			append(make([]int, 9), 1, 0, 0, 2, 0)},
		{"the use on one that made it go down does not swing it back",
			append(repeat(0.25, 10), repeat(0.2, 50)...),
			append(make([]int, 9), append([]int{1}, make([]int, 50)...)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Config{Max: 2, Up: 0.5, Down: 0.3, Settle: time.Second, Tick: tick})
			for i, c := range tc.cores {
				got := s.step(time.Duration(c*float64(tick)), tick)
				if got != tc.want[i] {
					t.Fatalf("tick %d (%.2f cores): set %d, want %d", i, c, got, tc.want[i])
				}
			}
		})
	}
}

// repeat is n ticks that use v cores each.
func repeat(v float64, n int) []float64 { return slices.Repeat([]float64{v}, n) }

// TestNewNothingToScale: with one processor at most there is no scaler,
// and running none returns.
func TestNewNothingToScale(t *testing.T) {
	s := New(Config{Max: 1})
	if s != nil {
		t.Fatalf("New with Max 1 = %+v, want nil", s)
	}
	s.Run(context.Background()) // returns at once
}

// fakeCPU is a CPU clock that the test moves, and records what is set.
type fakeCPU struct {
	mu  sync.Mutex
	cpu time.Duration
	set []int
	err error
}

func (f *fakeCPU) read() (time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpu, f.err
}

func (f *fakeCPU) add(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cpu += d
}

func (f *fakeCPU) setTo(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.set = append(f.set, n)
}

func (f *fakeCPU) sets() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]int(nil), f.set...)
}

// TestRun: Run reads the CPU time on the clock's ticks, goes to one
// processor when idle, back to Max when busy, and leaves Max when it
// returns.
func TestRun(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_800_000_000, 0))
	cpu := &fakeCPU{}
	s := New(Config{Max: 4, Settle: time.Second, Clock: fc, CPU: cpu.read, Set: cpu.setTo})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()

	// tick advances the clock by one tick, the process having used cores
	// of CPU meanwhile, once Run has armed its timer.
	tick := func(cores float64) {
		t.Helper()
		waitFor(t, "the timer armed", func() bool { return fc.Armed() == 1 })
		cpu.add(time.Duration(cores * float64(DefaultTick)))
		fc.Advance(DefaultTick)
	}
	for range 10 {
		tick(0.05)
	}
	waitFor(t, "GOMAXPROCS set 1 times", func() bool { return len(cpu.sets()) == 1 })
	tick(0.9)
	waitFor(t, "GOMAXPROCS set 2 times", func() bool { return len(cpu.sets()) == 2 })
	for range 10 {
		tick(0.05)
	}
	waitFor(t, "GOMAXPROCS set 3 times", func() bool { return len(cpu.sets()) == 3 })
	cancel()
	<-done
	if got, want := cpu.sets(), []int{1, 4, 1, 4}; !slices.Equal(got, want) {
		t.Fatalf("set %v, want %v", got, want)
	}
}

// TestRunCPUError: a CPU time that cannot be read stops the scaler, on
// Max.
func TestRunCPUError(t *testing.T) {
	fc := clock.NewFake(time.Unix(1_800_000_000, 0))
	cpu := &fakeCPU{}
	s := New(Config{Max: 2, Settle: time.Second, Clock: fc, CPU: cpu.read, Set: cpu.setTo, Logger: slog.New(slog.DiscardHandler)})
	done := make(chan struct{})
	go func() { s.Run(context.Background()); close(done) }()
	for range 10 {
		waitFor(t, "the timer armed", func() bool { return fc.Armed() == 1 })
		fc.Advance(DefaultTick)
	}
	waitFor(t, "GOMAXPROCS set 1 times", func() bool { return len(cpu.sets()) == 1 })
	waitFor(t, "the timer armed", func() bool { return fc.Armed() == 1 })
	cpu.mu.Lock()
	cpu.err = errors.New("no rusage")
	cpu.mu.Unlock()
	fc.Advance(DefaultTick)
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Run did not return after the CPU time failed")
	}
	if got, want := cpu.sets(), []int{1, 2}; !slices.Equal(got, want) {
		t.Fatalf("set %v, want %v", got, want)
	}
}

// TestProcessCPU: the process's CPU time grows while it computes.
func TestProcessCPU(t *testing.T) {
	before, err := ProcessCPU()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	x := uint64(1)
	for time.Now().Before(deadline) {
		for range 1_000_000 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		after, err := ProcessCPU()
		if err != nil {
			t.Fatal(err)
		}
		if after > before {
			return
		}
	}
	t.Fatalf("the CPU time did not grow in a minute of computing (%d)", x)
}

// waitFor waits, a minute at most, for cond.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, time.Minute, what, cond, nil)
}
