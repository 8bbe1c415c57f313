package tiers

import (
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
