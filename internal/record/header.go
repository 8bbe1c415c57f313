package record

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// CheckDue reports a *tiers.InvalidError (tiers.ReasonDueTooFar) when due
// is more than maxDelay after now. A due time in the past is valid: it fires
// at once. maxDelay <= 0 disables the check.
func CheckDue(due, now time.Time, maxDelay time.Duration) error {
	if maxDelay > 0 && due.Sub(now) > maxDelay {
		return &tiers.InvalidError{Reason: tiers.ReasonDueTooFar,
			Detail: fmt.Sprintf("due %s is more than the maximum delay %v away", due.UTC().Format(time.RFC3339), maxDelay)}
	}
	return nil
}

// SetHeader returns headers with key set to value: the first header named key
// is replaced and later ones removed, or a header is appended.
func SetHeader(headers []kgo.RecordHeader, key string, value []byte) []kgo.RecordHeader {
	return SetHeaders(headers, kgo.RecordHeader{Key: key, Value: value})
}

// SetHeaders returns a copy of headers with each of set applied as SetHeader
// does: the first header of the same key is replaced in place and later ones
// removed; keys not present are appended in order. headers is not changed.
func SetHeaders(headers []kgo.RecordHeader, set ...kgo.RecordHeader) []kgo.RecordHeader {
	out := make([]kgo.RecordHeader, 0, len(headers)+len(set))
	var small [8]bool // the router's hot path sets two or three headers
	var done []bool
	if len(set) <= len(small) {
		done = small[:len(set)]
	} else {
		done = make([]bool, len(set))
	}
outer:
	for _, h := range headers {
		for i, s := range set {
			if h.Key != s.Key {
				continue
			}
			if !done[i] {
				done[i] = true
				out = append(out, s)
			}
			continue outer
		}
		out = append(out, h)
	}
	for i, s := range set {
		if !done[i] {
			out = append(out, s)
		}
	}
	return out
}

// ReasonOf returns the Reason of a *tiers.InvalidError in err's chain, or
// fallback.
func ReasonOf(err error, fallback tiers.Reason) tiers.Reason {
	var inv *tiers.InvalidError
	if errors.As(err, &inv) {
		return inv.Reason
	}
	return fallback
}

// Owned reports whether a header is one only Hourglass's services write, so
// that a record from a producer that carries it is forging it: the
// dead-letter headers (tiers.HeaderReason, HeaderSource, HeaderDeadAt,
// HeaderTruncated and any other "hourglass-dlq-" header) and
// tiers.HeaderForwarded. The router drops them from every record it moves.
func Owned(key string) bool {
	return key == tiers.HeaderForwarded || strings.HasPrefix(key, deadLetterPrefix)
}

const deadLetterPrefix = "hourglass-dlq-"

// contract is the set of the contract's headers, those tiers.Decode reads
// (and tiers.Limits does not count). TestContract checks it against Decode.
var contract = map[string]bool{
	tiers.HeaderDue: true, tiers.HeaderTarget: true, tiers.HeaderVersion: true, tiers.HeaderKind: true,
	tiers.HeaderScheduled: true, tiers.HeaderForwarded: true, tiers.HeaderHops: true,
	tiers.HeaderAttempt: true, tiers.HeaderPath: true, tiers.HeaderDeadline: true,
}

// maxPathBytes is the longest tiers.HeaderPath tiers.Decode accepts;
// TestAppendPathLimit checks it against Decode.
const maxPathBytes = 1024

// Onward returns the headers of a record the router moves on: headers
// without the owned ones (see Owned), with set applied as SetHeaders does.
// headers is not changed.
func Onward(headers []kgo.RecordHeader, set ...kgo.RecordHeader) []kgo.RecordHeader {
	for _, h := range headers {
		if Owned(h.Key) {
			kept := make([]kgo.RecordHeader, 0, len(headers))
			for _, h := range headers {
				if !Owned(h.Key) {
					kept = append(kept, h)
				}
			}
			return SetHeaders(kept, set...)
		}
	}
	return SetHeaders(headers, set...)
}

// HeaderBytes is the size of headers as tiers.Limits counts it: the lengths of
// their names and values.
func HeaderBytes(headers []kgo.RecordHeader) int {
	n := 0
	for _, h := range headers {
		n += len(h.Key) + len(h.Value)
	}
	return n
}

// Size estimates what r takes in a produce request: key, value and headers
// with their framing. It is an upper bound for records of fewer than 2^14
// headers and parts shorter than 2^28 bytes.
func Size(r *kgo.Record) int {
	n := 32 + len(r.Key) + len(r.Value) // record framing: varints, attributes
	for _, h := range r.Headers {
		n += 10 + len(h.Key) + len(h.Value)
	}
	return n
}

// AppendPath appends tier to a run-length encoded path: "" + 30m = "30m",
// "30m" + 30m = "30m*2", "30m*2" + 5m = "30m*2,5m". A path that would exceed
// its limit keeps its older part and ends with "...".
func AppendPath(path string, tier time.Duration) string {
	name := tiers.Name(tier)
	if path == "" {
		return name
	}
	if strings.HasSuffix(path, "...") {
		return path
	}
	head, last := "", path
	if i := strings.LastIndexByte(path, ','); i >= 0 {
		head, last = path[:i+1], path[i+1:]
	}
	out := path + "," + name
	lastName, count, hasCount := strings.Cut(last, "*")
	if lastName == name {
		n := 1
		if hasCount {
			if c, err := strconv.Atoi(count); err == nil {
				n = c
			}
		}
		out = head + name + "*" + strconv.Itoa(n+1)
	}
	// Leave room for the cut mark, so that the result stays within the
	// limit tiers.Decode enforces. Only a path that did not come from AppendPath
	// can be too long for the mark itself; cut it on a rune boundary.
	const cut = ",..."
	if len(out) <= maxPathBytes-len(cut) {
		return out
	}
	keep := min(len(path), maxPathBytes-len(cut))
	for keep > 0 && keep < len(path) && !utf8.RuneStart(path[keep]) {
		keep--
	}
	return path[:keep] + cut
}

// HeaderMillis returns header key of r as unix milliseconds, or 0 when r
// has none or it is not a non-negative number: for records whose headers
// may be anything, such as dead letters.
func HeaderMillis(r *kgo.Record, key string) int64 {
	v, ok := tiers.Header(r.Headers, key)
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// ParseDue parses a due time given by a person: an RFC 3339 time or unix
// milliseconds, to the millisecond as hourglass-due (the deadline a record
// names is due at its millisecond). Like a record's due time it is from
// 2000 to 9999 (tiers.PlausibleDue): a time in seconds is refused, not
// read as 1970.
func ParseDue(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		ms, merr := strconv.ParseInt(s, 10, 64)
		if merr != nil {
			return time.Time{}, fmt.Errorf("%q: want RFC 3339 (2026-05-14T12:30:00Z, or with an offset) or unix milliseconds", s)
		}
		t = time.UnixMilli(ms)
	}
	t = time.UnixMilli(t.UnixMilli())
	var ie *tiers.InvalidError
	if errors.As(tiers.PlausibleDue(t), &ie) {
		return time.Time{}, fmt.Errorf("%q: %s", s, ie.Detail)
	}
	return t, nil
}
