package poll

import (
	"testing"
	"time"
)

// Interval is how often Until checks its condition.
const Interval = 20 * time.Millisecond

// Until checks cond every Interval until it holds, and fails t, saying
// what it waited for and the state, if limit passes first. state may be
// nil.
func Until(t testing.TB, limit time.Duration, what string, cond func() bool, state func() string) {
	t.Helper()
	if cond() {
		return
	}
	tick := time.NewTicker(Interval)
	defer tick.Stop()
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		select {
		case <-deadline.C:
			if cond() {
				return
			}
			msg := ""
			if state != nil {
				msg = "; " + state()
			}
			t.Fatalf("timed out after %v waiting for %s%s", limit, what, msg)
		case <-tick.C:
			if cond() {
				return
			}
		}
	}
}
