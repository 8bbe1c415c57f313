// Package procs runs a service on one processor (GOMAXPROCS 1) while it
// needs little CPU, and on all it may use while it needs more.
//
// At low rates the Go scheduler costs a service more CPU than its work. A
// router at 2,000 deadlines a second wakes a few times per 5 ms window (the
// window's timer, the responses of the check of the cancellations and of
// the produce), and each wake-up readies a handful of goroutines. With a
// second processor idle, each of them wakes a thread to look for work,
// which finds none and sleeps again: on a 2-core machine the router spends
// a fifth less CPU per deadline on one processor than on two, at the same
// p99 lateness (docs/benchmarks.md). At 50,000 deadlines a second one
// processor doubles the p99 lateness instead. A Scaler moves between the
// two by the CPU the process uses. It stays on one processor under load
// that is low on average but spiky (large records), where the lateness
// tail grows, which is why services run it only on request
// (--scale-procs).
package procs

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/hourglass/hourglass/internal/clock"
)

// Defaults of Config.
const (
	// DefaultUp is the CPU use, in cores over one Tick, at which a scaler on
	// one processor goes back to Max.
	DefaultUp = 0.5
	// DefaultDown is the CPU use, in cores over a Settle, under which a
	// scaler on Max goes to one processor. On one processor the same work
	// costs less (about 0.8 times at low rates), so it stays well under
	// DefaultUp: the scaler does not swing.
	DefaultDown = 0.3
	// DefaultTick is how often the CPU use is read.
	DefaultTick = 100 * time.Millisecond
	// DefaultSettle is how long the use is averaged over before the scaler
	// goes to one processor: a garbage collection or a short burst does
	// not keep it on Max, a rate that needs more does.
	DefaultSettle = 10 * time.Second
)

// Config configures a Scaler. The zero value of a field is its default.
type Config struct {
	// Max is the most processors: GOMAXPROCS when the scaler starts.
	Max int
	// Up, Down, Tick and Settle: see the defaults.
	Up, Down     float64
	Tick, Settle time.Duration
	// Clock times the ticks; default the wall clock.
	Clock clock.Clock
	// CPU returns the CPU time the process has used; default getrusage.
	CPU func() (time.Duration, error)
	// Set sets the number of processors; default SetMaxProcs.
	Set func(n int)
	// Logger receives a line at each change, at debug level; default
	// slog.Default().
	Logger *slog.Logger
}

// A Scaler sets GOMAXPROCS to 1 once the process has used less than Down
// of a core over a Settle, and back to Max as soon as it uses Up of one in
// a Tick. It starts on Max: a service's start (reading the topic of
// cancellations, say) is its busiest time.
type Scaler struct {
	cfg     Config
	one     bool          // on one processor
	span    time.Duration // the wall time of the Settle being averaged, on Max
	spanCPU time.Duration // the CPU time used in it
	lastCPU time.Duration
	lastAt  time.Time
}

// New returns a scaler of cfg, or nil when there is nothing to scale: Max
// is 1.
func New(cfg Config) *Scaler {
	if cfg.Max == 0 {
		cfg.Max = runtime.GOMAXPROCS(0)
	}
	if cfg.Max <= 1 {
		return nil
	}
	if cfg.Up == 0 {
		cfg.Up = DefaultUp
	}
	if cfg.Down == 0 {
		cfg.Down = DefaultDown
	}
	if cfg.Tick == 0 {
		cfg.Tick = DefaultTick
	}
	if cfg.Settle == 0 {
		cfg.Settle = DefaultSettle
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.Real{}
	}
	if cfg.CPU == nil {
		cfg.CPU = ProcessCPU
	}
	if cfg.Set == nil {
		cfg.Set = SetMaxProcs
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Scaler{cfg: cfg}
}

// Run reads the CPU use every Tick and sets the processors until ctx is
// done; it leaves them at Max when it returns. It returns at once when the
// CPU time cannot be read.
func (s *Scaler) Run(ctx context.Context) {
	if s == nil {
		return
	}
	cpu, ok := s.readCPU()
	if !ok {
		return
	}
	s.lastCPU, s.lastAt = cpu, s.cfg.Clock.Now()
	defer func() {
		if s.one {
			s.cfg.Set(s.cfg.Max)
		}
	}()
	t := s.cfg.Clock.NewTimer(s.cfg.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		cpu, ok := s.readCPU()
		if !ok {
			return
		}
		now := s.cfg.Clock.Now()
		if n := s.step(cpu-s.lastCPU, now.Sub(s.lastAt)); n > 0 {
			s.cfg.Logger.Debug("GOMAXPROCS", "to", n)
			s.cfg.Set(n)
		}
		s.lastCPU, s.lastAt = cpu, now
		t.Reset(s.cfg.Tick)
	}
}

// readCPU returns the CPU time the process has used, or logs why it
// cannot be read and returns false.
func (s *Scaler) readCPU() (time.Duration, bool) {
	cpu, err := s.cfg.CPU()
	if err != nil {
		s.cfg.Logger.Warn("the CPU time of the process cannot be read; GOMAXPROCS stays where it is", "err", err)
		return 0, false
	}
	return cpu, true
}

// step takes the CPU time used over the wall time elapsed since the last
// tick, and returns the processors to set, or 0 for no change.
func (s *Scaler) step(used, elapsed time.Duration) int {
	if elapsed <= 0 {
		return 0
	}
	if s.one {
		if used.Seconds() < s.cfg.Up*elapsed.Seconds() {
			return 0
		}
		s.one = false
		return s.cfg.Max
	}
	s.span += elapsed
	s.spanCPU += used
	if s.span < s.cfg.Settle {
		return 0
	}
	low := s.spanCPU.Seconds() < s.cfg.Down*s.span.Seconds()
	s.span, s.spanCPU = 0, 0
	if !low {
		return 0
	}
	s.one = true
	return 1
}

// SetMaxProcs sets GOMAXPROCS to n. When n is more than 1 and the
// environment does not set GOMAXPROCS, it goes back to the runtime's
// default instead, which follows the CPU limit of the container as it
// changes (runtime.SetDefaultGOMAXPROCS).
func SetMaxProcs(n int) {
	if n > 1 && os.Getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
		return
	}
	runtime.GOMAXPROCS(n)
}
