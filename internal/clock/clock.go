package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers.
type Clock interface {
	Now() time.Time
	// NewTimer returns a stopped-or-armed timer like time.NewTimer.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer that Hourglass uses.
type Timer interface {
	C() <-chan time.Time
	// Reset re-arms the timer to fire after d. Like time.Timer.Reset since
	// Go 1.23, no stale value is received after Reset or Stop.
	Reset(d time.Duration)
	Stop()
}

// Real is the wall clock.
type Real struct{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// NewTimer returns a time.Timer.
func (Real) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time   { return r.t.C }
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }

// Fake is a clock that moves only when told to. Its zero value is not usable;
// use NewFake.
type Fake struct {
	mu     sync.Mutex
	now    time.Time
	timers map[*fakeTimer]struct{}
}

// NewFake returns a Fake clock reading now.
func NewFake(now time.Time) *Fake {
	return &Fake{now: now, timers: make(map[*fakeTimer]struct{})}
}

// Now returns the fake time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// Advance moves the clock forward by d and fires the timers that are due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setLocked(f.now.Add(d))
}

// Set moves the clock to t and fires the timers that are due; a t before Now
// leaves the clock where it is.
func (f *Fake) Set(t time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if t.After(f.now) {
		f.setLocked(t)
	}
}

func (f *Fake) setLocked(t time.Time) {
	f.now = t
	for timer := range f.timers {
		if !timer.at.After(f.now) {
			delete(f.timers, timer)
			select {
			case timer.c <- f.now:
			default:
			}
		}
	}
}

// Armed returns how many timers are waiting to fire.
func (f *Fake) Armed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.timers)
}

// NewTimer returns a timer that fires when the clock is advanced past d.
func (f *Fake) NewTimer(d time.Duration) Timer {
	t := &fakeTimer{f: f, c: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

type fakeTimer struct {
	f  *Fake
	c  chan time.Time
	at time.Time
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }

func (t *fakeTimer) Reset(d time.Duration) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	t.at = t.f.now.Add(d)
	if d <= 0 {
		t.c <- t.f.now
		delete(t.f.timers, t)
		return
	}
	t.f.timers[t] = struct{}{}
}

func (t *fakeTimer) Stop() {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	t.drain()
	delete(t.f.timers, t)
}

func (t *fakeTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}
