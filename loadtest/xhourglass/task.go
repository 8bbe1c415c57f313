package xhourglass

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/grafana/sobek"
)

// ParseTask reads the argument of schedule(): {id, delayMs | dueMs, kind,
// payload, paid, shape}. Exactly one of delayMs and dueMs is required;
// payload is a string or an ArrayBuffer.
func ParseTask(in any) (TaskSpec, error) {
	m, ok := in.(map[string]any)
	if !ok {
		return TaskSpec{}, errors.New("schedule: want an object {delayMs | dueMs, id, kind, payload, paid, shape}")
	}
	var (
		t    TaskSpec
		errs []error
	)
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("schedule: %s: %s", key, fmt.Sprintf(format, args...)))
	}
	str := func(key string) string {
		v, ok := m[key]
		if !ok || v == nil {
			return ""
		}
		s, ok := v.(string)
		if !ok {
			bad(key, "%v is not a string", v)
		}
		return s
	}
	num := func(key string) (float64, bool) {
		v, ok := m[key]
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
		bad(key, "%v is not a number of milliseconds", v)
		return 0, false
	}
	for k := range m {
		switch k {
		case "id", "delayMs", "dueMs", "kind", "payload", "paid", "shape":
		default:
			bad(k, "unknown key")
		}
	}
	t.ID, t.Kind, t.Shape = str("id"), str("kind"), str("shape")
	const maxMs = 365 * 24 * 3600 * 1000 * 100 // far beyond any delay, well within int64 nanoseconds
	delay, hasDelay := num("delayMs")
	due, hasDue := num("dueMs")
	switch {
	case hasDelay && hasDue:
		bad("delayMs", "give delayMs or dueMs, not both")
	case !hasDelay && !hasDue && len(errs) == 0:
		bad("delayMs", "required (or dueMs)")
	case hasDelay && math.Abs(delay) > maxMs:
		bad("delayMs", "%v is out of range", delay)
	case hasDue && (due <= 0 || due > 1e15):
		bad("dueMs", "%v: want unix milliseconds", due)
	case hasDelay:
		t.Delay = time.Duration(delay * float64(time.Millisecond))
	case hasDue:
		t.Due = time.UnixMilli(int64(due))
	}
	switch v := m["payload"].(type) {
	case nil:
	case string:
		t.Payload = []byte(v)
	case []byte:
		t.Payload = v
	case sobek.ArrayBuffer:
		t.Payload = v.Bytes()
	default:
		bad("payload", "want a string or an ArrayBuffer")
	}
	switch v := m["paid"].(type) {
	case nil:
	case bool:
		t.Paid = v
	default:
		bad("paid", "%v is not a boolean", v)
	}
	if len(errs) > 0 {
		return TaskSpec{}, errors.Join(errs...)
	}
	return t, nil
}
