package xhourglass

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/grafana/sobek"
)

// TaskSpec is one task to schedule: the argument of schedule().
type TaskSpec struct {
	// ID is appended to the run's id prefix; empty takes the next number.
	ID string
	// Delay is from now to the due time; used when Due is zero.
	Delay time.Duration
	// Due is when the task is due.
	Due time.Time
	// Kind is the hourglass-kind header; empty uses the producer's.
	Kind string
	// Payload is the record value; nil sends {"order":"<id>"}.
	Payload []byte
	// Paid pays the order in the store before the record is produced.
	Paid bool
	// Shape labels the delay in the manifest ("past_due").
	Shape string
}

// ParseTask reads the argument of schedule(): {id, delayMs | dueMs, kind,
// payload, paid, shape}. Exactly one of delayMs and dueMs is required;
// payload is a string or an ArrayBuffer.
func ParseTask(in any) (TaskSpec, error) {
	m, ok := in.(map[string]any)
	if !ok {
		return TaskSpec{}, errors.New("schedule: want an object {delayMs | dueMs, id, kind, payload, paid, shape}")
	}
	a := &taskArgs{m: m}
	a.checkKeys()
	var t TaskSpec
	t.ID, t.Kind, t.Shape = a.str("id"), a.str("kind"), a.str("shape")
	t.Delay, t.Due = a.when()
	t.Payload = a.payload()
	t.Paid = a.paid()
	if len(a.errs) > 0 {
		return TaskSpec{}, errors.Join(a.errs...)
	}
	return t, nil
}

// taskArgs reads the argument m of schedule(), collecting its problems in
// errs.
type taskArgs struct {
	m    map[string]any
	errs []error
}

// bad records a problem of the key.
func (a *taskArgs) bad(key, format string, args ...any) {
	a.errs = append(a.errs, fmt.Errorf("schedule: %s: %s", key, fmt.Sprintf(format, args...)))
}

// checkKeys records each key that schedule() does not know.
func (a *taskArgs) checkKeys() {
	for k := range a.m {
		switch k {
		case "id", "delayMs", "dueMs", "kind", "payload", "paid", "shape":
		default:
			a.bad(k, "unknown key")
		}
	}
}

// str is the string at key; "" when absent or null.
func (a *taskArgs) str(key string) string {
	v, ok := a.m[key]
	if !ok || v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		a.bad(key, "%v is not a string", v)
	}
	return s
}

// num is the finite number at key; false when absent, null or not one.
func (a *taskArgs) num(key string) (float64, bool) {
	v, ok := a.m[key]
	if !ok || v == nil {
		return 0, false
	}
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case float64:
		if !math.IsNaN(n) && !math.IsInf(n, 0) {
			return n, true
		}
	}
	a.bad(key, "%v is not a number of milliseconds", v)
	return 0, false
}

// when reads delayMs or dueMs, exactly one of which is required (unless
// another problem was found already).
func (a *taskArgs) when() (delay time.Duration, due time.Time) {
	const maxMs = 365 * 24 * 3600 * 1000 * 100 // far beyond any delay, well within int64 nanoseconds
	delayMs, hasDelay := a.num("delayMs")
	dueMs, hasDue := a.num("dueMs")
	switch {
	case hasDelay && hasDue:
		a.bad("delayMs", "give delayMs or dueMs, not both")
	case !hasDelay && !hasDue && len(a.errs) == 0:
		a.bad("delayMs", "required (or dueMs)")
	case hasDelay && math.Abs(delayMs) > maxMs:
		a.bad("delayMs", "%v is out of range", delayMs)
	case hasDue && (dueMs <= 0 || dueMs > 1e15):
		a.bad("dueMs", "%v: want unix milliseconds", dueMs)
	case hasDelay:
		delay = time.Duration(delayMs * float64(time.Millisecond))
	case hasDue:
		due = time.UnixMilli(int64(dueMs))
	}
	return delay, due
}

// payload reads payload: a string or an ArrayBuffer; nil when absent.
func (a *taskArgs) payload() []byte {
	switch v := a.m["payload"].(type) {
	case nil:
	case string:
		return []byte(v)
	case []byte:
		return v
	case sobek.ArrayBuffer:
		return v.Bytes()
	default:
		a.bad("payload", "want a string or an ArrayBuffer")
	}
	return nil
}

// paid reads paid, a boolean; false when absent.
func (a *taskArgs) paid() bool {
	switch v := a.m["paid"].(type) {
	case nil:
	case bool:
		return v
	default:
		a.bad("paid", "%v is not a boolean", v)
	}
	return false
}
