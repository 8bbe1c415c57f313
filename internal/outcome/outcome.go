// Package outcome is the outcome event: one per close attempt, produced by
// the canceller to the outcomes topic (hourglass.outcomes), keyed by task id,
// JSON-encoded. The recorder loads them into ClickHouse; the demo and the
// benchmark read them to measure lateness.
package outcome

import (
	"encoding/json"
	"fmt"
)

// Version is the event schema version written in Event.V.
const Version = 1

// Event is one close attempt. Times are unix milliseconds; zero means
// unknown. Field names are stable (they are ClickHouse columns).
type Event struct {
	V           int    `json:"v"`
	TaskID      string `json:"task_id"`
	Kind        string `json:"kind"`
	Outcome     string `json:"outcome"`          // a closer.Outcome, or Retry
	Detail      string `json:"detail,omitempty"` // e.g. the state that made a close skip
	Error       string `json:"error,omitempty"`
	Attempt     int    `json:"attempt"`
	Hops        int    `json:"hops"`
	Path        string `json:"path"`
	ScheduledMs int64  `json:"scheduled_ms"`
	DueMs       int64  `json:"due_ms"` // due time of this attempt
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

// Retry is the outcome of an attempt that failed with a retryable error:
// the task was rescheduled for another attempt. The other outcomes are the
// closer's (closer.Outcome): closed, already_closed, skipped, not_found,
// and failed for an attempt that failed for good (the task went to the
// dead-letter topic).
const Retry = "retry"

// Marshal encodes e.
func (e *Event) Marshal() ([]byte, error) { return json.Marshal(e) }

// Unmarshal decodes an event and checks its version.
func Unmarshal(b []byte) (Event, error) {
	var e Event
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, fmt.Errorf("outcome event: %w", err)
	}
	if e.V != Version {
		return Event{}, fmt.Errorf("outcome event: version %d, want %d", e.V, Version)
	}
	return e, nil
}
