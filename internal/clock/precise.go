package clock

import "time"

// A PreciseTimer is a Timer that holds an operating-system resource: Close
// it when it is no longer needed. Stop and Reset work as on any Timer.
type PreciseTimer interface {
	Timer
	// Close stops the timer and releases what it holds; the timer is not
	// used after Close, but Close may be called again.
	Close()
}

// NewPreciseTimer returns a timer of c armed to fire after d that wakes the
// process once, at its time.
//
// The Go runtime waits for its timers in epoll_wait, whose timeout is in
// whole milliseconds and rounded down (golang/go#53824): a timer due in
// 4.7 ms wakes the process after 4 ms, finds nothing due and waits 1 ms
// more. It fires about half a millisecond late on average, and costs the
// process two wake-ups from idle instead of one. On Linux, with the wall
// clock (Real), the timer returned is a timerfd in the runtime's network
// poller, which wakes it at its time to the microsecond, as netty does for
// the same reason. Elsewhere, or when a timerfd cannot be made, and with
// any other Clock (Fake), it is c.NewTimer(d).
func NewPreciseTimer(c Clock, d time.Duration) PreciseTimer {
	if _, ok := c.(Real); ok {
		if t, err := newFDTimer(d); err == nil {
			return t
		}
	}
	return stopCloser{c.NewTimer(d)}
}

// stopCloser is a Timer whose Close is Stop.
type stopCloser struct{ Timer }

func (c stopCloser) Close() { c.Stop() }
