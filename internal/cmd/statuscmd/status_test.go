package statuscmd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/schedulecmd"
	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestScheduleThenStatus: a task scheduled with hourglass schedule is
// waiting in the tier of its delay, in its key's partition.
func TestScheduleThenStatus(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	if _, stderr, err := cmdtest.Run(t, schedulecmd.Schedule, append(p.flags(), "--id", "order-1", "--in", "37m")...); err != nil {
		t.Fatalf("schedule: %v\n%s", err, stderr)
	}
	st, _ := p.status("order-1")
	d := only(t, st)
	topic := p.delay(30 * time.Minute)
	part := kafka.KeyPartition(topic, []byte("order-1"), partitions)
	if d.State != taskstatus.StateWaiting || d.Topic != topic || d.Tier != "30m" || d.Kind != "" || d.Cancellation != nil {
		t.Errorf("deadline %+v, want waiting in %s", d, topic)
	}
	if due := time.UnixMilli(d.DueMs); time.Until(due) < 36*time.Minute || d.DeadlineMs != d.DueMs || d.ScheduledMs == 0 {
		t.Errorf("due %v, deadline %d, scheduled %d", due, d.DeadlineMs, d.ScheduledMs)
	}
	if !st.Complete || len(st.Events) != 1 || st.Events[0].Partition != part {
		t.Errorf("complete %v, events %+v, want one in partition %d", st.Complete, st.Events, part)
	}
	for _, r := range st.Read {
		if r.Partition != kafka.KeyPartition(r.Topic, []byte("order-1"), partitions) || !r.Complete {
			t.Errorf("read %+v", r)
		}
	}
	stdout, _, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "order-1")...)
	if err != nil || !strings.Contains(stdout, "waiting in "+topic) || !strings.Contains(stdout, " scheduled ") {
		t.Errorf("text: %v\n%s", err, stdout)
	}
}

// TestStatusFinds: status finds what the router and the canceller wrote
// about a task, produced here as they produce it, among the records of
// other tasks, and says where each deadline is.
func TestStatusFinds(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	now := time.Now().Truncate(time.Millisecond)
	at := now.Add
	for _, id := range []string{"noise-1", "noise-2", "noise-3"} { // other keys, some in the same partitions
		p.cancelAt(id, at(-time.Hour), time.Time{})
		p.outcome(p.forward(p.schedule(id, at(-time.Hour), at(-50*time.Minute)), at(-50*time.Minute)), outcome.Closed, at(-50*time.Minute), "")
	}

	// closed: 30m, hop to 5m, forwarded, closed.
	r := p.schedule("closed", at(-40*time.Minute), at(-5*time.Minute))
	f := p.forward(p.hop(r, 5*time.Minute, at(-10*time.Minute)), at(-5*time.Minute))
	p.outcome(f, outcome.Closed, at(-5*time.Minute+20*time.Millisecond), "")

	// cancelled before its due time, dropped by the router.
	r = p.schedule("cancelled", at(-5*time.Minute), at(-time.Minute))
	c := p.cancelAt("cancelled", at(-3*time.Minute), time.Time{})
	p.outcome(r, outcome.Cancelled, at(-time.Minute), "")

	// cancelled after the forward: too late.
	r = p.schedule("too-late", at(-5*time.Minute), at(-2*time.Minute))
	p.forward(r, at(-2*time.Minute))
	p.cancelAt("too-late", at(-time.Minute), at(-2*time.Minute))

	// cancelled, not yet due: the router drops it when due.
	p.schedule("pending", at(-time.Minute), at(3*time.Minute))
	p.cancelAt("pending", now, at(3*time.Minute))

	// overdue: due, never forwarded.
	p.schedule("overdue", at(-2*time.Minute), at(-time.Minute))

	// retried, then failed for good and dead-lettered.
	r = p.schedule("failed", at(-10*time.Minute), at(-9*time.Minute))
	f = p.forward(r, at(-9*time.Minute))
	p.outcome(f, outcome.Retry, at(-9*time.Minute+time.Second), "connection refused")
	retry := p.onward(f, p.delay(time.Minute), at(-9*time.Minute+time.Second), hdr(tiers.HeaderAttempt, "2"),
		hdr(tiers.HeaderDeadline, formatMs(at(-9*time.Minute))), hdr(tiers.HeaderDue, formatMs(at(-8*time.Minute))))
	f = p.forward(retry, at(-8*time.Minute))
	p.outcome(f, outcome.Failed, at(-8*time.Minute+time.Second), "connection refused")
	p.deadLetter(f, "retries_exhausted: attempt 2 of 2: connection refused", at(-8*time.Minute+time.Second))

	// refused by the router: no due time.
	bad := p.onward(r, p.delay(time.Minute), at(-time.Minute), hdr(tiers.HeaderDue, "soon"))
	p.deadLetter(bad, "due_not_a_number: header hourglass-due is \"soon\"", at(-time.Minute))

	tests := []struct {
		id, state, outcome, relation string
		deadlines                    int
	}{
		{"closed", taskstatus.StateClosed, "closed", "", 1},
		{"cancelled", taskstatus.StateCancelled, "cancelled", taskstatus.RelationBeforeDue, 1},
		{"too-late", taskstatus.StateForwarded, "", taskstatus.RelationAfterForward, 1},
		{"pending", taskstatus.StateWaiting, "", taskstatus.RelationBeforeDue, 1},
		{"overdue", taskstatus.StateOverdue, "", "", 1},
		{"failed", taskstatus.StateFailed, "failed", "", 2},
	}
	for _, tt := range tests {
		st, out := p.status(tt.id)
		if len(st.Deadlines) != tt.deadlines {
			t.Errorf("%s: %d deadlines, want %d:\n%s", tt.id, len(st.Deadlines), tt.deadlines, out)
			continue
		}
		d := st.Deadlines[0]
		rel := ""
		if d.Cancellation != nil {
			rel = d.Cancellation.Relation
		}
		if d.State != tt.state || d.Outcome != tt.outcome || rel != tt.relation || !st.Complete {
			t.Errorf("%s: state %s outcome %q cancellation %q complete %v, want %s %q %q:\n%s", tt.id, d.State, d.Outcome, rel, st.Complete, tt.state, tt.outcome, tt.relation, out)
		}
	}

	st, _ := p.status("closed")
	d := only(t, st)
	if d.Target != p.cancel() || d.ForwardedMs != at(-5*time.Minute).UnixMilli() || len(st.Events) != 4 {
		t.Errorf("closed: target %q forwarded %d, %d events, want %s, 4 events", d.Target, d.ForwardedMs, len(st.Events), p.cancel())
	}
	st, _ = p.status("cancelled")
	if d := only(t, st); d.Cancellation.Record != where(c) || !d.Cancellation.Latest || d.Cancellation.AtMs != at(-3*time.Minute).UnixMilli() {
		t.Errorf("cancelled: cancellation %+v, want %s", d.Cancellation, where(c))
	}
	st, _ = p.status("failed")
	if d := st.Deadlines[0]; d.Attempt != 2 || d.Reason != "retries_exhausted" || d.DueMs != at(-8*time.Minute).UnixMilli() || d.DeadlineMs != at(-9*time.Minute).UnixMilli() {
		t.Errorf("failed: %+v", d)
	}
	if d := st.Deadlines[1]; d.DeadlineMs != 0 || d.State != taskstatus.StateDeadLettered || d.Reason != "due_not_a_number" {
		t.Errorf("refused: %+v", d)
	}
	for id, want := range map[string]string{
		"cancelled": "made before the due time",
		"pending":   "came before the due time: the router drops it when due",
		"too-late":  "came after the forward at ",
		"failed":    `failed for good at `,
	} {
		stdout, _, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), id)...)
		if err != nil || !strings.Contains(stdout, want) {
			t.Errorf("%s: %v, text without %q:\n%s", id, err, want, stdout)
		}
	}
	invalid := 0
	for _, e := range st.Events {
		if e.Type == taskstatus.TypeDelay && e.Invalid != "" {
			invalid++
		}
	}
	if invalid != 1 {
		t.Errorf("%d delay records marked invalid, want the refused one: %+v", invalid, st.Events)
	}
}
