package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestUntil(t *testing.T) {
	var n atomic.Int32
	Until(t, 10*time.Second, "the third check", func() bool { return n.Add(1) >= 3 }, nil)
	if got := n.Load(); got != 3 {
		t.Errorf("checked %d times, want 3", got)
	}
}

// fatalRecorder records Fatalf instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = format
	panic(f)
}

func TestUntilTimesOut(t *testing.T) {
	f := &fatalRecorder{TB: t}
	func() {
		defer func() {
			if r := recover(); r != f {
				t.Fatalf("recovered %v, want the Fatalf", r)
			}
		}()
		Until(f, 3*Interval, "never", func() bool { return false }, func() string { return "state" })
	}()
	if f.msg == "" {
		t.Error("Until returned without failing")
	}
}
