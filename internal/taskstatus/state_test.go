package taskstatus

import (
	"testing"
	"time"
)

// TestLatestCancellationSkipsInvalid: a record of the cancellations topic
// that breaks the contract is not applied by the router, so it does not
// replace the task's cancellation: status shows the one before it, which
// the router drops the deadline for.
func TestLatestCancellationSkipsInvalid(t *testing.T) {
	events := []Event{
		{TimeMs: 1000, Type: TypeDelay, Source: SourceKafka, Topic: "t.delay.1m", DueMs: 100_000, DeadlineMs: 100_000, ScheduledMs: 1000},
		{TimeMs: 2000, Type: TypeCancellation, Source: SourceKafka, Topic: "t.cancellations", Offset: 0},
		{TimeMs: 3000, Type: TypeCancellation, Source: SourceKafka, Topic: "t.cancellations", Offset: 1,
			Invalid: "header_invalid: header hourglass-due is \"soon\""},
	}
	ds := Deadlines(events, time.UnixMilli(5000))
	if len(ds) != 1 {
		t.Fatalf("%d deadlines, want 1", len(ds))
	}
	if c := ds[0].Cancellation; c == nil || c.AtMs != 2000 || c.Relation != RelationBeforeDue {
		t.Errorf("cancellation %+v, want the valid one made at 2000, before the due time", c)
	}
}
