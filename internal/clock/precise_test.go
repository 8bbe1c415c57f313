package clock

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// These tests run on the wall clock: they check that a precise timer never
// fires early and does fire, not how late (a busy machine can be late by
// any amount); the bounds on lateness are a minute.
const never = time.Minute

func TestPreciseTimerFires(t *testing.T) {
	const d = 3 * time.Millisecond
	start := time.Now()
	tm := NewPreciseTimer(Real{}, d)
	defer tm.Close()
	for i := range 3 {
		if v := waitFire(t, tm.C(), fmt.Sprintf("firing %d", i)); v.Sub(start) < d || time.Since(start) < d {
			t.Fatalf("firing %d came %v after arming, before %v", i, v.Sub(start), d)
		}
		if v, ok := fired(tm.C()); ok {
			t.Fatalf("firing %d: a second value %v", i, v)
		}
		start = time.Now()
		tm.Reset(d)
	}
}

func TestPreciseTimerResetAndStop(t *testing.T) {
	tm := NewPreciseTimer(Real{}, time.Millisecond)
	defer tm.Close()
	waitUntil(t, "the first firing", func() bool { return len(tm.C()) == 1 })

	// Reset to later: the value of the earlier arming is gone.
	tm.Reset(never)
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("after Reset: a value %v of the earlier arming", v)
	}
	// Reset to sooner, over an arming that has not fired: only the new
	// one fires, once.
	start := time.Now()
	tm.Reset(2 * time.Millisecond)
	waitFire(t, tm.C(), "Reset(2ms)")
	if since := time.Since(start); since < 2*time.Millisecond {
		t.Fatalf("fired %v after Reset(2ms)", since)
	}

	// Stop: nothing fires, even after its time.
	tm.Reset(time.Millisecond)
	tm.Stop()
	later := NewPreciseTimer(Real{}, 5*time.Millisecond)
	defer later.Close()
	waitFire(t, later.C(), "a second timer") // the stopped timer's time has passed
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("after Stop: a value %v", v)
	}
	// Reset after Stop arms it again; a duration <= 0 fires at once.
	tm.Reset(0)
	waitFire(t, tm.C(), "Reset(0) after Stop")
}

// TestPreciseTimerRace resets and stops a timer while it fires, from the
// goroutine that receives, as the router's loop does; run with -race.
func TestPreciseTimerRace(t *testing.T) {
	tm := NewPreciseTimer(Real{}, 0)
	defer tm.Close()
	deadline := time.Now().Add(2 * time.Second)
	for i := 0; i < 2000 && time.Now().Before(deadline); i++ {
		select {
		case <-tm.C():
		case <-time.After(50 * time.Microsecond):
		}
		if i%3 == 0 {
			tm.Stop()
		}
		tm.Reset(time.Duration(i%4) * 50 * time.Microsecond)
	}
	tm.Reset(0)
	waitFire(t, tm.C(), "the timer after the race")
}

func TestPreciseTimerClose(t *testing.T) {
	timers := make([]PreciseTimer, 20)
	for i := range timers {
		timers[i] = NewPreciseTimer(Real{}, time.Hour)
	}
	// Their goroutines start in their own time.
	defer func() {
		for _, tm := range timers {
			tm.Close()
		}
	}()
	waitUntil(t, "a goroutine per timer", func() bool { return runningTimers() == len(timers) })
	for _, tm := range timers {
		tm.Close()
	}
	// Close waits for the timer's goroutine to return: none is left
	// behind. One that has closed its done channel may still be on its way
	// out of run for a moment, hence the (bounded) wait.
	waitUntil(t, "return of every timer goroutine", func() bool { return runningTimers() == 0 })
}

// waitFire returns the value that c receives, and fails t, naming what
// should have fired, when none comes within never.
func waitFire(t *testing.T, c <-chan time.Time, what string) time.Time {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(never):
		t.Fatalf("%s: nothing fired after %v", what, never)
		return time.Time{}
	}
}

// waitUntil polls cond every millisecond, for at most never.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	bound := time.After(never)
	for !cond() {
		select {
		case <-tick.C:
		case <-bound:
			t.Fatalf("no %s after %v", what, never)
		}
	}
}

// runningTimers counts the goroutines of precise timers.
func runningTimers() int {
	buf := make([]byte, 1<<20)
	n := 0
	for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
		if strings.Contains(g, "(*fdTimer).run(") {
			n++
		}
	}
	return n
}

func TestPreciseTimerFake(t *testing.T) {
	f := NewFake(t0)
	tm := NewPreciseTimer(f, time.Second)
	defer tm.Close()
	if f.Armed() != 1 {
		t.Fatalf("a precise timer of a Fake clock: %d timers armed, want 1", f.Armed())
	}
	f.Advance(time.Second)
	if _, ok := fired(tm.C()); !ok {
		t.Fatal("a precise timer of a Fake clock did not fire when the clock passed it")
	}
	tm.Reset(time.Second)
	tm.Close()
	if f.Armed() != 0 {
		t.Fatalf("after Close: %d timers armed, want 0", f.Armed())
	}
}
