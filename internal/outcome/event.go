package outcome

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Version is the event schema version written in Event.V.
const Version = 1

// Event is one close attempt. Times are unix milliseconds; zero means
// unknown. Field names are stable (they are ClickHouse columns).
type Event struct {
	V           int     `json:"v"`
	TaskID      string  `json:"task_id"`
	Kind        string  `json:"kind"`
	Outcome     Outcome `json:"outcome"`
	Detail      string  `json:"detail,omitempty"` // e.g. the state that made a close skip
	Error       string  `json:"error,omitempty"`
	Attempt     int     `json:"attempt"`
	Hops        int     `json:"hops"`
	Path        string  `json:"path"`
	ScheduledMs int64   `json:"scheduled_ms"`
	DueMs       int64   `json:"due_ms"` // due time of this attempt
	// DeadlineMs is the task's deadline: DueMs of its first attempt. A
	// retry is due later than the deadline; lateness against the deadline
	// is ClosedMs - DeadlineMs.
	DeadlineMs  int64  `json:"deadline_ms"`
	ForwardedMs int64  `json:"forwarded_ms"`
	ClosedMs    int64  `json:"closed_ms"`   // when the close returned
	LatenessMs  int64  `json:"lateness_ms"` // ClosedMs - DueMs
	Instance    string `json:"instance"`
	// Source locates the cancel record: with Attempt it identifies the
	// attempt, so replays after a crash can be deduplicated.
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

// Limits of the text fields of an encoded event, in bytes before JSON
// escaping: Marshal cuts longer ones (on a character boundary, ending in
// "..."), so that an event always fits the outcomes topic, whatever the
// record it reports on carried. A task id within the router's key limit
// (tiers.DefaultMaxKeyBytes) is never cut; JSON escaping can make a field
// up to six times as long, and an event stays below 64 KiB.
const (
	MaxTaskIDBytes   = 1024
	MaxKindBytes     = 128
	MaxOutcomeBytes  = 32 // every Outcome is a short word
	MaxDetailBytes   = 1024
	MaxErrorBytes    = 2048
	MaxPathBytes     = 1024
	MaxInstanceBytes = 256
	MaxTopicBytes    = 249
)

// Marshal encodes e, with its text fields cut to their limits (see
// MaxTaskIDBytes). HTML characters are not escaped: an event is not HTML.
func (e *Event) Marshal() ([]byte, error) {
	c := e.clipped()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(&c); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// clipped returns e with its text fields cut to their limits.
func (e *Event) clipped() Event {
	c := *e
	c.TaskID = Clip(c.TaskID, MaxTaskIDBytes)
	c.Kind = Clip(c.Kind, MaxKindBytes)
	c.Outcome = Outcome(Clip(string(c.Outcome), MaxOutcomeBytes))
	c.Detail = Clip(c.Detail, MaxDetailBytes)
	c.Error = Clip(c.Error, MaxErrorBytes)
	c.Path = Clip(c.Path, MaxPathBytes)
	c.Instance = Clip(c.Instance, MaxInstanceBytes)
	c.Topic = Clip(c.Topic, MaxTopicBytes)
	return c
}

// Clip cuts s to at most n bytes on a rune boundary, ending the cut text in
// "...", as Marshal cuts an event's text fields, and as Hourglass cuts any
// text it keeps from a record.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	keep := n - len("...")
	for keep > 0 && !utf8.RuneStart(s[keep]) {
		keep--
	}
	return s[:keep] + "..."
}

// HeaderSignature is the header of an outcome event that carries its
// signature: the hex HMAC-SHA256 of the record's value under the key shared
// by the canceller and the recorder (see Sign).
const HeaderSignature = "hourglass-signature"

// Sign returns the signature of an encoded event under key. With a key
// configured, the canceller signs every event and the recorder stores only
// events whose signature verifies: a record that reaches the outcomes topic
// from anywhere else (a producer with write access, a misrouted record)
// cannot rewrite the history of a deadline.
func Sign(key, value []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(value)
	return hex.AppendEncode(nil, m.Sum(nil))
}

// Verify reports whether sig is the signature of value under key.
func Verify(key, value, sig []byte) bool {
	return hmac.Equal(Sign(key, value), sig)
}

// Record returns the record of e on topic: keyed by the task id (cut like
// the event's), with timestamp now, and signed (HeaderSignature) when
// signKey is set.
func (e *Event) Record(topic string, now time.Time, signKey []byte) *kgo.Record {
	val, err := e.Marshal()
	if err != nil {
		panic(err) // an Event of strings and integers always marshals
	}
	key := e.TaskID[:min(len(e.TaskID), MaxTaskIDBytes)]
	rec := &kgo.Record{Topic: topic, Key: []byte(key), Value: val, Timestamp: now}
	if len(signKey) > 0 {
		rec.Headers = []kgo.RecordHeader{{Key: HeaderSignature, Value: Sign(signKey, val)}}
	}
	return rec
}

// Unmarshal decodes an event and checks its version. Its text fields are
// cut to their limits as Marshal cuts them: a canceller never writes a
// longer one, and the outcomes topic takes records from any producer with
// access to it. Kept whole, a forged event holds up to the broker's
// record size, and the recorder batches thousands of events
// (docs/benchmarks.md).
func Unmarshal(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("outcome event: %w", err)
	}
	if e.V != Version {
		return Event{}, fmt.Errorf("outcome event: version %d, want %d", e.V, Version)
	}
	// attempt and hops are 32-bit columns in ClickHouse: a wider value
	// would be stored cut, not as sent.
	if e.Attempt != int(int32(e.Attempt)) || e.Hops != int(int32(e.Hops)) {
		return Event{}, fmt.Errorf("outcome event: attempt %d or hops %d out of the 32-bit range", e.Attempt, e.Hops)
	}
	return e.clipped(), nil
}
