package clock

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// fdTimer is a PreciseTimer on a timerfd. The fd is non-blocking, so the
// runtime's network poller waits for it: a goroutine blocked in its Read
// wakes when it expires, and sends on c if the timer is still armed and
// due. Reset and Stop take mu, so that no value of an earlier arming is
// received after them.
type fdTimer struct {
	f    *os.File
	fd   int // f's, kept: f.Fd() would put the file in blocking mode
	c    chan time.Time
	done chan struct{} // closed when run returns

	closeOnce sync.Once

	mu sync.Mutex
	at time.Time // when it is due; zero when stopped
}

func newFDTimer(d time.Duration) (PreciseTimer, error) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("timerfd_create", err)
	}
	t := &fdTimer{f: os.NewFile(uintptr(fd), "timerfd"), fd: fd, c: make(chan time.Time, 1), done: make(chan struct{})}
	go t.run()
	t.Reset(d)
	return t, nil
}

func (t *fdTimer) C() <-chan time.Time { return t.c }

// Reset arms the timer to fire after d (at once when d <= 0).
func (t *fdTimer) Reset(d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	// Go's monotonic clock is CLOCK_MONOTONIC, the timerfd's: when it
	// expires, time.Now() is at or after at.
	t.at = time.Now().Add(d)
	t.set(max(d, 1)) // a zero it_value would disarm it
}

// Stop disarms the timer; no value is received until the next Reset.
func (t *fdTimer) Stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.drain()
	t.at = time.Time{}
	t.set(0)
}

// Close stops the timer, closes the timerfd and waits for run to return;
// it does so once, whoever calls it again.
func (t *fdTimer) Close() {
	t.closeOnce.Do(func() {
		t.Stop()
		t.f.Close() // run's Read returns os.ErrClosed
		<-t.done
	})
}

func (t *fdTimer) set(d time.Duration) {
	// It fails only for an fd or a value that is not valid, which would be
	// a bug here: panic rather than never fire.
	if err := unix.TimerfdSettime(t.fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, nil); err != nil {
		panic(os.NewSyscallError("timerfd_settime", err))
	}
}

// run waits for expirations until the fd is closed.
func (t *fdTimer) run() {
	defer close(t.done)
	var ticks [8]byte // the count of expirations since the last read
	for {
		if _, err := t.f.Read(ticks[:]); errors.Is(err, os.ErrClosed) {
			return
		} else if err != nil {
			// A timer that cannot fire would stop its user without a
			// word: fail loudly instead.
			panic(fmt.Errorf("clock: read a timerfd: %w", err))
		}
		t.mu.Lock()
		// An expiration of an arming that Reset or Stop has replaced is
		// not the current one: the current one is not due yet, or off.
		if now := time.Now(); !t.at.IsZero() && !now.Before(t.at) {
			t.at = time.Time{}
			select {
			case t.c <- now:
			default: // not reached: a send needs at, and Reset drains c
			}
		}
		t.mu.Unlock()
	}
}

func (t *fdTimer) drain() {
	select {
	case <-t.c:
	default:
	}
}
