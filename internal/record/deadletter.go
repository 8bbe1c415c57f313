package record

import (
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// MaxDeadLetterBytes is the most a dead letter built by DeadLetter takes
// (see Size): a record that would be larger keeps its key, headers and
// reason, and loses the end of its value, or all of it
// (tiers.HeaderTruncated says how long it was).
const MaxDeadLetterBytes = 960_000

// maxReasonBytes bounds the reason header of a dead letter.
const maxReasonBytes = 2048

// DeadLetter returns the dead letter of r: same key, value and headers, on
// topic, with tiers.HeaderReason (cause's text), HeaderSource (where r
// came from) and HeaderDeadAt (now) set. Dead-letter headers r carried are dropped
// first: they can only be forged. A dead letter that would take more than
// MaxDeadLetterBytes is cut: its value first, then, if that is not enough,
// its headers other than the contract's, then its key, each cut recorded in
// tiers.HeaderTruncated, so that a dead letter can always be produced.
func DeadLetter(r *kgo.Record, topic string, cause error, now time.Time) *kgo.Record {
	return deadLetter(r, topic, cause, now, MaxDeadLetterBytes)
}

// MinimalDeadLetter is DeadLetter for a dead-letter topic that refused the
// full dead letter as too large: the key (at most tiers.DefaultMaxKeyBytes
// of it), the contract's headers (those of at most 2,048 bytes) and the
// reason; no value.
func MinimalDeadLetter(r *kgo.Record, topic string, cause error, now time.Time) *kgo.Record {
	return deadLetter(r, topic, cause, now, 0)
}

func deadLetter(r *kgo.Record, topic string, cause error, now time.Time, limit int) *kgo.Record {
	ours := []kgo.RecordHeader{
		{Key: tiers.HeaderReason, Value: []byte(outcome.Clip(cause.Error(), maxReasonBytes))},
		{Key: tiers.HeaderSource, Value: []byte(r.Topic + "[" + strconv.FormatInt(int64(r.Partition), 10) + "]@" + strconv.FormatInt(r.Offset, 10))},
		{Key: tiers.HeaderDeadAt, Value: tiers.FormatMillis(now)},
	}
	dl := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value, Timestamp: now, Headers: Onward(r.Headers, ours...)}
	if Size(dl) <= limit {
		return dl
	}
	const room = 64 // for tiers.HeaderTruncated
	var cuts []string
	if len(dl.Value) > 0 {
		keep := max(0, min(len(dl.Value), limit-room-(Size(dl)-len(dl.Value))))
		cuts = append(cuts, "value "+strconv.Itoa(len(dl.Value)))
		dl.Value = dl.Value[:keep]
	}
	if Size(dl)+room > limit {
		// The headers or the key are too large: keep only the first of
		// each of the contract's headers and ours, and only if its value
		// could be valid (no contract header's value is longer than a
		// reason: a producer's huge one would keep the dead letter too
		// large in every form), then cut the key.
		var kept []kgo.RecordHeader
		seen := make(map[string]bool)
		for _, h := range dl.Headers {
			if (contract[h.Key] || strings.HasPrefix(h.Key, deadLetterPrefix)) && !seen[h.Key] && len(h.Value) <= maxReasonBytes {
				seen[h.Key] = true
				kept = append(kept, h)
			}
		}
		if len(kept) < len(dl.Headers) {
			cuts = append(cuts, "headers "+strconv.Itoa(HeaderBytes(dl.Headers)-HeaderBytes(kept)))
			dl.Headers = kept
		}
	}
	if Size(dl)+room > limit && len(dl.Key) > tiers.DefaultMaxKeyBytes {
		cuts = append(cuts, "key "+strconv.Itoa(len(dl.Key)))
		dl.Key = dl.Key[:tiers.DefaultMaxKeyBytes]
	}
	if len(cuts) > 0 {
		dl.Headers = SetHeaders(dl.Headers, kgo.RecordHeader{Key: tiers.HeaderTruncated, Value: []byte(strings.Join(cuts, ","))})
	}
	return dl
}
