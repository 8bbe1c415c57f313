package tiers

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Header names of the record contract (v1). Every header of Hourglass starts
// with "hourglass-"; other headers pass through unchanged.
const (
	// HeaderDue (required) is the due time in unix milliseconds, decimal
	// ASCII digits only: "1767225600000", from MinDueMillis to MaxDueMillis
	// (see PlausibleDue).
	HeaderDue = "hourglass-due"
	// HeaderTarget (optional) is the topic the record goes to when due. The
	// router's configured target (hourglass.cancel) is used without it.
	HeaderTarget = "hourglass-target"
	// HeaderVersion (optional) is the contract version, "1". A record
	// without it is read as version 1; any other version is invalid.
	HeaderVersion = "hourglass-version"
	// HeaderKind (optional) is the task kind, which selects the canceller's
	// closer: "order-timeout", "confirm-receipt", "reminder".
	HeaderKind = "hourglass-kind"
	// HeaderScheduled (optional) is when the task was scheduled, unix
	// milliseconds. The Scheduler sets it; lateness reports use it.
	HeaderScheduled = "hourglass-scheduled"
	// HeaderHops is set by the router: how many times the record moved from
	// one delay topic to another.
	HeaderHops = "hourglass-hops"
	// HeaderPath is set by the router: the tiers the record waited in, in
	// order, with repeats run-length encoded: "30m*3,5m,1m".
	HeaderPath = "hourglass-path"
	// HeaderForwarded is set by the router on the target record: when it was
	// forwarded, unix milliseconds.
	HeaderForwarded = "hourglass-forwarded"
	// HeaderAttempt is the close attempt, starting at 1; the canceller sets
	// it when it reschedules a failed close.
	HeaderAttempt = "hourglass-attempt"
	// HeaderDeadline is set by the canceller when it reschedules a failed
	// close: the task's original due time, unix milliseconds. HeaderDue is
	// then the time of the next attempt.
	HeaderDeadline = "hourglass-deadline"
	// HeaderReason is set on dead letters: why the record was rejected, as
	// "code: detail" (codes are the Reason constants).
	HeaderReason = "hourglass-dlq-reason"
	// HeaderSource is set on dead letters: where the record came from, as
	// "topic[partition]@offset".
	HeaderSource = "hourglass-dlq-source"
	// HeaderDeadAt is set on dead letters: when the record was rejected,
	// unix milliseconds.
	HeaderDeadAt = "hourglass-dlq-time"
	// HeaderTruncated is set on a dead letter that was cut to fit the
	// dead-letter topic: what was cut and how many bytes it had (the
	// value's original length, the bytes of the headers dropped, the key's
	// original length), comma-separated: "value 990000",
	// "value 2000,headers 40000,key 180000".
	HeaderTruncated = "hourglass-dlq-truncated"
)

// Version is the contract version this package writes and reads.
const Version = 1

// Limits on optional fields, so that a hostile record cannot make the router
// carry unbounded headers from hop to hop.
const (
	maxKindLen = 128
	maxPathLen = 1024
	maxCount   = MaxCount
)

// MaxCount is the largest hop count (HeaderHops) and close attempt
// (HeaderAttempt) a record may carry; a larger one is invalid. Whoever
// increments a count stops at it, so that a record valid before the
// increment stays valid after it.
const MaxCount = 1_000_000

// Reason is the machine-readable cause of an invalid record; it is the prefix
// of the dead-letter reason header and a metric label.
type Reason string

// Reasons for which a record is invalid.
const (
	ReasonDueMissing         Reason = "due_missing"
	ReasonDueEmpty           Reason = "due_empty"
	ReasonDueNotNumber       Reason = "due_not_a_number"
	ReasonDueNegative        Reason = "due_negative"
	ReasonDueTooFar          Reason = "due_too_far"
	ReasonDueImplausible     Reason = "due_implausible" // not milliseconds of a deadline: see PlausibleDue
	ReasonDuplicateHeader    Reason = "duplicate_header"
	ReasonVersionUnsupported Reason = "version_unsupported"
	ReasonTargetInvalid      Reason = "target_invalid"
	ReasonHeaderInvalid      Reason = "header_invalid"
	ReasonKeyMissing         Reason = "key_missing"
)

// InvalidError says why a record breaks the contract.
type InvalidError struct {
	Reason Reason
	Detail string
}

func (e *InvalidError) Error() string { return string(e.Reason) + ": " + e.Detail }

func invalid(r Reason, format string, args ...any) *InvalidError {
	return &InvalidError{Reason: r, Detail: fmt.Sprintf(format, args...)}
}

// Meta is what the contract headers of a record say. The zero Meta has no due
// time and is not valid for scheduling.
type Meta struct {
	Due       time.Time // HeaderDue
	Target    string    // HeaderTarget; empty means the configured default
	Kind      string    // HeaderKind; empty means the default kind
	Scheduled time.Time // HeaderScheduled; zero when unknown
	Forwarded time.Time // HeaderForwarded; zero until the router forwards
	Hops      int       // HeaderHops
	Path      string    // HeaderPath
	Attempt   int       // HeaderAttempt; 0 when absent (the first attempt)
	Deadline  time.Time // HeaderDeadline; zero on a first attempt
}

// DecodeRecord validates a delay record: its key (the task id) must not be
// empty and its headers must pass Decode.
func DecodeRecord(r *kgo.Record) (Meta, error) {
	if len(r.Key) == 0 {
		return Meta{}, invalid(ReasonKeyMissing, "record has no key; the key is the task id")
	}
	return Decode(r.Headers)
}

// Decode reads and validates the contract headers. It returns an
// *InvalidError naming the first problem found. Headers that are not
// Hourglass's are ignored, as are Hourglass headers this version does not know.
func Decode(headers []kgo.RecordHeader) (Meta, error) {
	var (
		m        Meta
		seenMask uint16
	)
	for i := range headers {
		h := &headers[i]
		if !strings.HasPrefix(h.Key, "hourglass-") {
			continue
		}
		bit, known := headerBits[h.Key]
		if !known {
			continue
		}
		if seenMask&bit != 0 {
			return Meta{}, invalid(ReasonDuplicateHeader, "header %s appears more than once", h.Key)
		}
		seenMask |= bit
		if err := m.decodeHeader(h.Key, h.Value); err != nil {
			return Meta{}, err
		}
	}
	if seenMask&headerBits[HeaderDue] == 0 {
		return Meta{}, invalid(ReasonDueMissing, "header %s is required (unix milliseconds)", HeaderDue)
	}
	return m, nil
}

// decodeHeader validates the value v of the known contract header key and
// sets its field of m.
func (m *Meta) decodeHeader(key string, v []byte) error {
	var err error
	switch key {
	case HeaderDue:
		m.Due, err = decodeDue(v)
	case HeaderTarget:
		if terr := ValidTopic(string(v)); terr != nil {
			err = invalid(ReasonTargetInvalid, "%s: %v", HeaderTarget, terr)
		} else {
			m.Target = string(v)
		}
	case HeaderVersion:
		if string(v) != "1" {
			err = invalid(ReasonVersionUnsupported, "%s is %q; this version reads %d", HeaderVersion, clip(v), Version)
		}
	case HeaderKind:
		if len(v) > maxKindLen || !printable(v) {
			err = invalid(ReasonHeaderInvalid, "%s must be at most %d printable characters", HeaderKind, maxKindLen)
		} else {
			m.Kind = string(v)
		}
	case HeaderScheduled:
		m.Scheduled, err = decodeMillis(HeaderScheduled, v)
	case HeaderForwarded:
		m.Forwarded, err = decodeMillis(HeaderForwarded, v)
	case HeaderHops:
		m.Hops, err = decodeCount(HeaderHops, v)
	case HeaderAttempt:
		m.Attempt, err = decodeCount(HeaderAttempt, v)
	case HeaderDeadline:
		m.Deadline, err = decodeMillis(HeaderDeadline, v)
	case HeaderPath:
		if len(v) > maxPathLen || !printable(v) {
			err = invalid(ReasonHeaderInvalid, "%s must be at most %d printable characters", HeaderPath, maxPathLen)
		} else {
			m.Path = string(v)
		}
	}
	return err
}

var headerBits = map[string]uint16{
	HeaderDue: 1 << 0, HeaderTarget: 1 << 1, HeaderVersion: 1 << 2, HeaderKind: 1 << 3,
	HeaderScheduled: 1 << 4, HeaderForwarded: 1 << 5, HeaderHops: 1 << 6,
	HeaderAttempt: 1 << 7, HeaderPath: 1 << 8, HeaderDeadline: 1 << 9,
}

// decodeDue reads hourglass-due: decimal digits, as many as decodeMillis
// takes, that PlausibleDue accepts. Every number of up to 20 digits is judged
// by its range, so that a due time in nanoseconds is named as one.
func decodeDue(v []byte) (time.Time, error) {
	switch {
	case len(v) == 0:
		return time.Time{}, invalid(ReasonDueEmpty, "header %s is empty; want unix milliseconds", HeaderDue)
	case v[0] == '-' && len(v) > 1 && allDigits(v[1:]):
		return time.Time{}, invalid(ReasonDueNegative, "header %s is %q, before 1970", HeaderDue, clip(v))
	case len(v) > maxMillisLen || !allDigits(v):
		return time.Time{}, invalid(ReasonDueNotNumber, "header %s is %q; want unix milliseconds as decimal digits", HeaderDue, clip(v))
	}
	ms, err := strconv.ParseUint(string(v), 10, 64)
	switch {
	case err != nil: // 20 digits above the largest uint64
		return time.Time{}, invalid(ReasonDueImplausible, "header %s: %s in unix milliseconds is after the year 9999", HeaderDue, v)
	case !inDueRange(ms):
		return time.Time{}, invalid(ReasonDueImplausible, "header %s: %s", HeaderDue, implausible(ms))
	}
	return time.UnixMilli(int64(ms)), nil
}

// maxMillisLen bounds a time header with its leading zeros: a producer may
// pad to a fixed width, such as the 19 digits of an int64 or the 20 of a
// uint64. The value itself has at most 18 significant digits.
const maxMillisLen = 20

func decodeMillis(key string, v []byte) (time.Time, error) {
	// Leading zeros are decimal ASCII too: only the significant digits are
	// bounded by what cannot overflow, so that a value padded to 19 or 20
	// digits is the time it says, not an error.
	significant := bytes.TrimLeft(v, "0")
	if len(v) == 0 || len(v) > maxMillisLen || len(significant) > 18 || !allDigits(v) {
		return time.Time{}, invalid(ReasonHeaderInvalid, "header %s is %q; want unix milliseconds as decimal digits", key, clip(v))
	}
	ms, _ := strconv.ParseInt(string(v), 10, 64) // 18 significant digits cannot overflow
	return time.UnixMilli(ms), nil
}

func decodeCount(key string, v []byte) (int, error) {
	if len(v) == 0 || len(v) > 7 || !allDigits(v) {
		return 0, invalid(ReasonHeaderInvalid, "header %s is %q; want a decimal count", key, clip(v))
	}
	n, _ := strconv.Atoi(string(v))
	if n > maxCount {
		return 0, invalid(ReasonHeaderInvalid, "header %s is %d, more than %d", key, n, maxCount)
	}
	return n, nil
}

func allDigits(v []byte) bool {
	for _, c := range v {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func printable(v []byte) bool {
	if !utf8.Valid(v) {
		return false
	}
	for _, r := range string(v) {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

// clip shortens an untrusted value for an error message.
func clip(v []byte) string {
	const maxLen = 40
	if len(v) > maxLen {
		return strings.ToValidUTF8(string(v[:maxLen]), "?") + "..."
	}
	return strings.ToValidUTF8(string(v), "?")
}

// FormatMillis formats t as unix milliseconds in decimal ASCII, the encoding
// of every time header.
func FormatMillis(t time.Time) []byte {
	return strconv.AppendInt(nil, t.UnixMilli(), 10)
}

// Header returns the value of the first header named key.
func Header(headers []kgo.RecordHeader, key string) ([]byte, bool) {
	for _, h := range headers {
		if h.Key == key {
			return h.Value, true
		}
	}
	return nil, false
}
