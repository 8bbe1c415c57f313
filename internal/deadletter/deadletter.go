package deadletter

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// DeadLetter is one record of the dead-letter topic, read from its headers.
// Every string comes from whoever produced the record: escape it before
// showing it.
type DeadLetter struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	TimeMs    int64  `json:"time_ms"` // when it was dead-lettered
	Key       string `json:"key"`
	Reason    string `json:"reason"` // the code: due_missing, close_failed, ...
	Detail    string `json:"detail"` // the rest of hourglass-dlq-reason
	Source    string `json:"source"` // topic[partition]@offset
	Kind      string `json:"kind,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	DueMs     int64  `json:"due_ms,omitempty"`
	Bytes     int    `json:"value_bytes"`
	Truncated string `json:"truncated,omitempty"` // hourglass-dlq-truncated: what was cut to fit

	// Record is the dead letter as read.
	Record *kgo.Record `json:"-"`
}

// Read returns the dead letter of r. Headers that cannot be read leave
// their fields zero.
func Read(r *kgo.Record) DeadLetter {
	d := DeadLetter{Partition: r.Partition, Offset: r.Offset, TimeMs: r.Timestamp.UnixMilli(), Key: string(r.Key), Bytes: len(r.Value), Record: r}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderReason); ok {
		d.Reason, d.Detail, _ = strings.Cut(string(v), ": ")
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderSource); ok {
		d.Source = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderTruncated); ok {
		d.Truncated = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderDeadAt); ok {
		if ms, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			d.TimeMs = ms
		}
	}
	// The contract headers, where they can be read.
	if v, ok := tiers.Header(r.Headers, tiers.HeaderKind); ok {
		d.Kind = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderAttempt); ok {
		d.Attempt, _ = strconv.Atoi(string(v))
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderDue); ok {
		d.DueMs, _ = strconv.ParseInt(string(v), 10, 64)
	}
	return d
}

// SourceTopic returns the topic of a "topic[partition]@offset" source, or
// why source is not one.
func SourceTopic(source string) (string, error) {
	bad := fmt.Errorf("%s %q is not topic[partition]@offset", tiers.HeaderSource, source)
	topic, rest, ok := strings.Cut(source, "[")
	if !ok {
		return "", bad
	}
	partition, offset, ok := strings.Cut(rest, "]@")
	if !ok || !digits(partition) || !digits(offset) {
		return "", bad
	}
	if err := tiers.ValidTopic(topic); err != nil {
		return "", fmt.Errorf("%s %q: %w", tiers.HeaderSource, source, err)
	}
	return topic, nil
}

// digits reports whether s is a decimal number without sign.
func digits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Rule says where dead letters may be replayed. Make one with NewRule.
type Rule struct {
	// to, when set, is the destination of every dead letter.
	to string
	// sources are the topics a dead letter may name as its source to be
	// replayed there: the delay topics and the targets.
	sources map[string]bool
	// targets are the topics a hourglass-target may name.
	targets map[string]bool
}

// NewRule returns the rule of the delay topics of prefix and table, the
// target topics targets (the canceller's), and the destination to ("" for
// each dead letter's source).
func NewRule(prefix string, table tiers.Table, targets []string, to string) Rule {
	r := Rule{to: to, sources: map[string]bool{}, targets: map[string]bool{}}
	for _, t := range table.Topics(prefix) {
		r.sources[t] = true
	}
	for _, t := range targets {
		r.sources[t] = true
		r.targets[t] = true
	}
	return r
}

// Replay returns the record that replays d under rule, timestamped now, or
// why it cannot be replayed: its source is not a topic the pipeline reads
// (anyone who can produce to the dead-letter topic can write
// hourglass-dlq-source), it was cut to fit the dead-letter topic, it breaks
// the record contract, or its hourglass-target is not a target of the rule.
func Replay(d DeadLetter, rule Rule, now time.Time) (*kgo.Record, error) {
	topic := rule.to
	if topic == "" {
		if d.Source == "" {
			return nil, fmt.Errorf("no %s header and no destination named", tiers.HeaderSource)
		}
		src, err := SourceTopic(d.Source)
		if err != nil {
			return nil, err
		}
		if !rule.sources[src] {
			return nil, fmt.Errorf("source topic %q is neither a delay topic of the tiers nor a target topic, so %s may be forged: if the canceller consumes it, count it among the targets; or name the destination", src, tiers.HeaderSource)
		}
		topic = src
	}
	if d.Truncated != "" {
		return nil, fmt.Errorf("cut to fit the dead-letter topic (%s %q), so not the record that failed: schedule it anew", tiers.HeaderTruncated, d.Truncated)
	}
	// Without the headers only Hourglass writes (the dead-letter ones, and
	// hourglass-forwarded, which a dead letter never carries unless forged)
	// and with the attempt reset.
	hs := make([]kgo.RecordHeader, 0, len(d.Record.Headers))
	for _, h := range d.Record.Headers {
		if record.Owned(h.Key) || h.Key == tiers.HeaderAttempt {
			continue
		}
		hs = append(hs, h)
	}
	r := &kgo.Record{Topic: topic, Key: d.Record.Key, Value: d.Record.Value, Headers: hs, Timestamp: now}
	m, err := tiers.DecodeRecord(r)
	if err != nil {
		return nil, err
	}
	// The router forwards a record to its hourglass-target; a delay topic
	// is a way to any topic unless the target is one of ours.
	if m.Target != "" && !rule.targets[m.Target] {
		return nil, fmt.Errorf("%s %q is not a target topic", tiers.HeaderTarget, m.Target)
	}
	return r, nil
}
