package clock

import (
	"testing"
	"time"
)

var t0 = time.UnixMilli(1_800_000_000_000)

// fired reports the value waiting on c, if any, without blocking.
func fired(c <-chan time.Time) (time.Time, bool) {
	select {
	case v := <-c:
		return v, true
	default:
		return time.Time{}, false
	}
}

func TestFakeNow(t *testing.T) {
	f := NewFake(t0)
	if got := f.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	f.Advance(1500 * time.Millisecond)
	if got, want := f.Now(), t0.Add(1500*time.Millisecond); !got.Equal(want) {
		t.Fatalf("after Advance: Now = %v, want %v", got, want)
	}
	f.Set(t0.Add(time.Hour))
	if got, want := f.Now(), t0.Add(time.Hour); !got.Equal(want) {
		t.Fatalf("after Set: Now = %v, want %v", got, want)
	}
}

// TestFakeTimerFiresAtDeadline: a timer fires when the clock reaches its
// deadline, not a millisecond before, and sends the clock's time.
func TestFakeTimerFiresAtDeadline(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(5 * time.Second)
	if f.Armed() != 1 {
		t.Fatalf("Armed = %d, want 1", f.Armed())
	}
	f.Advance(5*time.Second - time.Millisecond)
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("fired at %v, before its deadline", v)
	}
	f.Advance(time.Millisecond)
	v, ok := fired(tm.C())
	if !ok {
		t.Fatal("did not fire at its deadline")
	}
	if want := t0.Add(5 * time.Second); !v.Equal(want) {
		t.Errorf("fired with %v, want %v", v, want)
	}
	if f.Armed() != 0 {
		t.Errorf("Armed = %d after the fire, want 0", f.Armed())
	}
	f.Advance(time.Hour)
	if v, ok := fired(tm.C()); ok {
		t.Errorf("fired twice (again at %v)", v)
	}
}

// TestFakeTimerFiresOnJump: one Advance far past the deadline fires once,
// with the new time.
func TestFakeTimerFiresOnJump(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	f.Set(t0.Add(time.Minute))
	v, ok := fired(tm.C())
	if !ok || !v.Equal(t0.Add(time.Minute)) {
		t.Fatalf("fired = %v, %v; want %v, true", v, ok, t0.Add(time.Minute))
	}
}

// TestFakeResetDropsStaleFire: Reset after a fire that was not received
// drops it and re-arms from the current time.
func TestFakeResetDropsStaleFire(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	f.Advance(time.Second) // fires; nobody receives
	tm.Reset(10 * time.Second)
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("stale fire %v received after Reset", v)
	}
	if f.Armed() != 1 {
		t.Fatalf("Armed = %d after Reset, want 1", f.Armed())
	}
	f.Advance(10*time.Second - time.Millisecond)
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("fired at %v, before the new deadline", v)
	}
	f.Advance(time.Millisecond)
	if v, ok := fired(tm.C()); !ok || !v.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("fired = %v, %v; want %v, true", v, ok, t0.Add(11*time.Second))
	}
}

// TestFakeResetMovesDeadline: Reset of an armed timer replaces its deadline,
// earlier or later, without arming a second timer.
func TestFakeResetMovesDeadline(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(10 * time.Second)
	tm.Reset(2 * time.Second)
	if f.Armed() != 1 {
		t.Fatalf("Armed = %d, want 1", f.Armed())
	}
	f.Advance(2 * time.Second)
	if _, ok := fired(tm.C()); !ok {
		t.Fatal("did not fire at the earlier deadline")
	}
	tm.Reset(time.Second)
	tm.Reset(5 * time.Second) // later
	f.Advance(time.Second)
	if _, ok := fired(tm.C()); ok {
		t.Fatal("fired at the replaced deadline")
	}
	f.Advance(4 * time.Second)
	if _, ok := fired(tm.C()); !ok {
		t.Fatal("did not fire at the later deadline")
	}
}

func TestFakeStop(t *testing.T) {
	f := NewFake(t0)
	tm := f.NewTimer(time.Second)
	tm.Stop()
	if f.Armed() != 0 {
		t.Fatalf("Armed = %d after Stop, want 0", f.Armed())
	}
	f.Advance(time.Hour)
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("stopped timer fired at %v", v)
	}

	// Stop after an unreceived fire drops the value.
	tm.Reset(time.Second)
	f.Advance(time.Second)
	tm.Stop()
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("stale fire %v received after Stop", v)
	}
	tm.Stop() // stopping twice is harmless
	if f.Armed() != 0 {
		t.Fatalf("Armed = %d, want 0", f.Armed())
	}
}

func TestFakeArmed(t *testing.T) {
	f := NewFake(t0)
	a := f.NewTimer(time.Second)
	b := f.NewTimer(2 * time.Second)
	c := f.NewTimer(3 * time.Second)
	if f.Armed() != 3 {
		t.Fatalf("Armed = %d, want 3", f.Armed())
	}
	f.Advance(time.Second)
	if f.Armed() != 2 {
		t.Fatalf("Armed = %d after one fire, want 2", f.Armed())
	}
	b.Stop()
	if f.Armed() != 1 {
		t.Fatalf("Armed = %d after a Stop, want 1", f.Armed())
	}
	a.Reset(time.Minute)
	if f.Armed() != 2 {
		t.Fatalf("Armed = %d after re-arming, want 2", f.Armed())
	}
	f.Advance(time.Minute)
	if f.Armed() != 0 {
		t.Fatalf("Armed = %d after every deadline passed, want 0", f.Armed())
	}
	for name, tm := range map[string]Timer{"a": a, "c": c} {
		if _, ok := fired(tm.C()); !ok {
			t.Errorf("timer %s did not fire", name)
		}
	}
}

// TestFakeNonPositive: a timer for zero or a negative duration fires at once,
// with the current time, and is not armed.
func TestFakeNonPositive(t *testing.T) {
	for _, d := range []time.Duration{0, -time.Second} {
		f := NewFake(t0)
		tm := f.NewTimer(d)
		if v, ok := fired(tm.C()); !ok || !v.Equal(t0) {
			t.Errorf("NewTimer(%v): fired = %v, %v; want %v, true", d, v, ok, t0)
		}
		if f.Armed() != 0 {
			t.Errorf("NewTimer(%v): Armed = %d, want 0", d, f.Armed())
		}

		// Reset of an armed timer to d fires at once and disarms it.
		tm.Reset(time.Hour)
		tm.Reset(d)
		if v, ok := fired(tm.C()); !ok || !v.Equal(t0) {
			t.Errorf("Reset(%v): fired = %v, %v; want %v, true", d, v, ok, t0)
		}
		if f.Armed() != 0 {
			t.Errorf("Reset(%v): Armed = %d, want 0", d, f.Armed())
		}
		f.Advance(2 * time.Hour)
		if v, ok := fired(tm.C()); ok {
			t.Errorf("Reset(%v): fired again at %v", d, v)
		}

		// Reset(d) while an unreceived fire waits replaces it, not blocks.
		f.Advance(time.Second)
		tm.Reset(time.Second)
		f.Advance(time.Second)
		tm.Reset(d)
		if v, ok := fired(tm.C()); !ok || !v.Equal(f.Now()) {
			t.Errorf("Reset(%v) over a stale fire: fired = %v, %v; want %v, true", d, v, ok, f.Now())
		}
	}
}

// TestFakeConcurrent exercises the lock under -race: timers are reset and
// stopped while the clock advances.
func TestFakeConcurrent(t *testing.T) {
	f := NewFake(t0)
	done := make(chan struct{})
	for range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			tm := f.NewTimer(time.Millisecond)
			for i := range 200 {
				tm.Reset(time.Duration(i%3) * time.Millisecond)
				_ = f.Now()
				if i%7 == 0 {
					tm.Stop()
				}
			}
			tm.Stop()
		}()
	}
	for range 200 {
		f.Advance(time.Millisecond)
		_ = f.Armed()
	}
	for range 4 {
		<-done
	}
	if f.Armed() != 0 {
		t.Fatalf("Armed = %d after every timer stopped, want 0", f.Armed())
	}
}

// TestRealTimer is a smoke test of the wall clock: a short timer fires, a
// stopped one does not, and Reset re-arms it.
func TestRealTimer(t *testing.T) {
	var c Clock = Real{}
	before := c.Now()
	tm := c.NewTimer(time.Millisecond)
	bound := time.NewTimer(10 * time.Second)
	defer bound.Stop()
	select {
	case v := <-tm.C():
		if v.Before(before) {
			t.Errorf("fired with %v, before the timer was made (%v)", v, before)
		}
	case <-bound.C:
		t.Fatal("a 1ms timer did not fire in 10s")
	}

	tm.Reset(time.Hour)
	tm.Stop()
	if v, ok := fired(tm.C()); ok {
		t.Fatalf("stopped timer fired at %v", v)
	}
	tm.Reset(time.Millisecond)
	select {
	case <-tm.C():
	case <-bound.C:
		t.Fatal("a reset timer did not fire in 10s")
	}
	tm.Stop()
}
