package tiers

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Default size limits of a delay record. Together with the headers the
// router and canceller add, a record within them stays below the 1,000,012
// bytes a franz-go producer sends in one batch and the 1 MiB a Kafka broker
// accepts by default (message.max.bytes), so whatever passes the limits can
// always be forwarded, hopped, retried and dead-lettered.
const (
	// DefaultMaxKeyBytes bounds the key, the task id.
	DefaultMaxKeyBytes = 1024
	// DefaultMaxHeaderBytes bounds the headers besides the contract's: the
	// sum of their names' and values' lengths.
	DefaultMaxHeaderBytes = 16 << 10
	// DefaultMaxHeaders bounds the number of headers besides the
	// contract's.
	DefaultMaxHeaders = 64
	// DefaultMaxValueBytes bounds the value, the payload.
	DefaultMaxValueBytes = 900_000
)

// Reasons for which a record is too large.
const (
	ReasonKeyTooLarge     Reason = "key_too_large"
	ReasonHeadersTooLarge Reason = "headers_too_large"
	ReasonValueTooLarge   Reason = "value_too_large"
	// ReasonBatchTooLarge is the reason of the dead letter that stands for
	// the records of a batch a consumer cannot decompress within its limit
	// (too large, or malformed): they were not read.
	ReasonBatchTooLarge Reason = "batch_too_large"
)

// Limits bound the parts of a delay record. The zero value has the
// defaults (DefaultMaxKeyBytes, ...); a negative field disables its check.
// Headers and HeaderBytes count the headers other than the contract's
// (HeaderDue, HeaderPath, ...), whose values Decode bounds one by one: the
// headers the router and canceller add on the way never push a record over
// a limit it passed when it was produced.
type Limits struct {
	KeyBytes    int
	HeaderBytes int
	Headers     int
	ValueBytes  int
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.KeyBytes == 0 {
		l.KeyBytes = DefaultMaxKeyBytes
	}
	if l.HeaderBytes == 0 {
		l.HeaderBytes = DefaultMaxHeaderBytes
	}
	if l.Headers == 0 {
		l.Headers = DefaultMaxHeaders
	}
	if l.ValueBytes == 0 {
		l.ValueBytes = DefaultMaxValueBytes
	}
	return l
}

// Check returns an *InvalidError when r breaks a limit of l (with defaults
// for zero fields).
func (l Limits) Check(r *kgo.Record) error {
	l = l.WithDefaults()
	if l.KeyBytes > 0 && len(r.Key) > l.KeyBytes {
		return invalid(ReasonKeyTooLarge, "key of %d bytes; at most %d", len(r.Key), l.KeyBytes)
	}
	headers, bytes := 0, 0
	for _, h := range r.Headers {
		if _, contract := headerBits[h.Key]; !contract {
			headers++
			bytes += len(h.Key) + len(h.Value)
		}
	}
	if l.Headers > 0 && headers > l.Headers {
		return invalid(ReasonHeadersTooLarge, "%d headers besides the contract's; at most %d", headers, l.Headers)
	}
	if l.HeaderBytes > 0 && bytes > l.HeaderBytes {
		return invalid(ReasonHeadersTooLarge, "headers besides the contract's of %d bytes; at most %d", bytes, l.HeaderBytes)
	}
	if l.ValueBytes > 0 && len(r.Value) > l.ValueBytes {
		return invalid(ReasonValueTooLarge, "value of %d bytes; at most %d", len(r.Value), l.ValueBytes)
	}
	return nil
}

// HeaderBytes is the size of headers as Limits counts it: the lengths of
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

// Owned reports whether a header is one only Hourglass's services write, so
// that a record from a producer that carries it is forging it: the
// dead-letter headers (HeaderReason, HeaderSource, HeaderDeadAt,
// HeaderTruncated and any other "hourglass-dlq-" header) and
// HeaderForwarded. The router drops them from every record it moves.
func Owned(key string) bool {
	return key == HeaderForwarded || strings.HasPrefix(key, deadLetterPrefix)
}

const deadLetterPrefix = "hourglass-dlq-"

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

// MaxDeadLetterBytes is the most a dead letter built by DeadLetter takes
// (see Size): a record that would be larger keeps its key, headers and
// reason, and loses the end of its value, or all of it (HeaderTruncated says
// how long it was).
const MaxDeadLetterBytes = 960_000

// maxReasonBytes bounds the reason header of a dead letter.
const maxReasonBytes = 2048

// DeadLetter returns the dead letter of r: same key, value and headers, on
// topic, with HeaderReason (cause's text), HeaderSource (where r came from)
// and HeaderDeadAt (now) set. Dead-letter headers r carried are dropped
// first: they can only be forged. A dead letter that would take more than
// MaxDeadLetterBytes is cut: its value first, then, if that is not enough,
// its headers other than the contract's, then its key, each cut recorded in
// HeaderTruncated, so that a dead letter can always be produced.
func DeadLetter(r *kgo.Record, topic string, cause error, now time.Time) *kgo.Record {
	return deadLetter(r, topic, cause, now, MaxDeadLetterBytes)
}

// MinimalDeadLetter is DeadLetter for a dead-letter topic that refused the
// full dead letter as too large: the key (at most DefaultMaxKeyBytes of it),
// the contract's headers and the reason; no value.
func MinimalDeadLetter(r *kgo.Record, topic string, cause error, now time.Time) *kgo.Record {
	return deadLetter(r, topic, cause, now, 0)
}

func deadLetter(r *kgo.Record, topic string, cause error, now time.Time, limit int) *kgo.Record {
	ours := []kgo.RecordHeader{
		{Key: HeaderReason, Value: []byte(clipText(cause.Error(), maxReasonBytes))},
		{Key: HeaderSource, Value: []byte(r.Topic + "[" + strconv.FormatInt(int64(r.Partition), 10) + "]@" + strconv.FormatInt(r.Offset, 10))},
		{Key: HeaderDeadAt, Value: FormatMillis(now)},
	}
	dl := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: now, Headers: Onward(r.Headers, ours...)}
	if Size(dl) <= limit {
		return dl
	}
	const room = 64 // for HeaderTruncated
	var cuts []string
	if len(dl.Value) > 0 {
		keep := max(0, min(len(dl.Value), limit-room-(Size(dl)-len(dl.Value))))
		cuts = append(cuts, "value "+strconv.Itoa(len(dl.Value)))
		dl.Value = dl.Value[:keep]
	}
	if Size(dl)+room > limit {
		// The headers or the key are too large: keep only the first of
		// each of the contract's headers and ours, then cut the key.
		var kept []kgo.RecordHeader
		seen := make(map[string]bool)
		for _, h := range dl.Headers {
			_, contract := headerBits[h.Key]
			if (contract || strings.HasPrefix(h.Key, deadLetterPrefix)) && !seen[h.Key] {
				seen[h.Key] = true
				kept = append(kept, h)
			}
		}
		if len(kept) < len(dl.Headers) {
			cuts = append(cuts, "headers "+strconv.Itoa(HeaderBytes(dl.Headers)-HeaderBytes(kept)))
			dl.Headers = kept
		}
	}
	if Size(dl)+room > limit && len(dl.Key) > DefaultMaxKeyBytes {
		cuts = append(cuts, "key "+strconv.Itoa(len(dl.Key)))
		dl.Key = dl.Key[:DefaultMaxKeyBytes]
	}
	if len(cuts) > 0 {
		dl.Headers = SetHeaders(dl.Headers, kgo.RecordHeader{Key: HeaderTruncated, Value: []byte(strings.Join(cuts, ","))})
	}
	return dl
}

// clipText cuts s to at most n bytes on a rune boundary, marking the cut.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "..."
	keep := n - len(mark)
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + mark
}
