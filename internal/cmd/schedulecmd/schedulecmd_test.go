package schedulecmd_test

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/cmd/schedulecmd"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/hung"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// header returns the value of header key of r, and whether it has one.
func header(r *kgo.Record, key string) (string, bool) {
	v, ok := tiers.Header(r.Headers, key)
	return string(v), ok
}

// millis returns the unix milliseconds of header key of r.
func millis(t *testing.T, r *kgo.Record, key string) int64 {
	t.Helper()
	v, ok := header(r, key)
	n, err := strconv.ParseInt(v, 10, 64)
	if !ok || err != nil {
		t.Fatalf("%s[%d]@%d: header %s is %q (%v)", r.Topic, r.Partition, r.Offset, key, v, err)
	}
	return n
}

// TestSchedule: the record lands in the tier of its delay, in the
// partition of its key, with the contract's headers and the payload of a
// file; the output names both.
func TestSchedule(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	payload := filepath.Join(t.TempDir(), "p.json")
	if err := os.WriteFile(payload, []byte(`{"order":42}`), 0o600); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	stdout, stderr, err := cmdtest.Run(t, schedulecmd.Schedule, append(flags, "--id", "order-42", "--in", "37m",
		"--kind", "reminder", "--target", tiers.CancelTopic(prefix), "--payload", "@"+payload)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	topic := tiers.Topic(prefix, 30*time.Minute)
	p := kafka.KeyPartition(topic, []byte("order-42"), partitions)
	if want := "scheduled order-42 in " + topic + "[" + strconv.Itoa(int(p)) + "]: due "; !strings.HasPrefix(stdout, want) || !strings.Contains(stdout, "(in 3") {
		t.Errorf("stdout %q, want it to start with %q and say the delay", stdout, want)
	}
	recs := records(t, topic, false)
	if len(recs) != 1 {
		t.Fatalf("%s holds %d records, want 1", topic, len(recs))
	}
	r := recs[0]
	due := millis(t, r, tiers.HeaderDue)
	if d := time.UnixMilli(due).Sub(before); d < 37*time.Minute-time.Millisecond || d > 37*time.Minute+10*time.Second {
		t.Errorf("due %v after the command began, want 37m", d)
	}
	if kind, _ := header(r, tiers.HeaderKind); kind != "reminder" || string(r.Key) != "order-42" || string(r.Value) != `{"order":42}` || r.Partition != p {
		t.Errorf("record %s[%d] key %q value %q kind %q", r.Topic, r.Partition, r.Key, r.Value, kind)
	}
	if target, _ := header(r, tiers.HeaderTarget); target != tiers.CancelTopic(prefix) {
		t.Errorf("target %q", target)
	}
	if s := millis(t, r, tiers.HeaderScheduled); s != r.Timestamp.UnixMilli() {
		t.Errorf("scheduled %d, timestamp %d: want the same instant", s, r.Timestamp.UnixMilli())
	}
}

// TestScheduleAt: --at in RFC 3339 and in unix milliseconds; a short
// delay goes to the smallest tier, a past due time too.
func TestScheduleAt(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	at := time.Now().Add(90 * time.Second).Truncate(time.Millisecond)
	for i, v := range []string{at.Format(time.RFC3339Nano), strconv.FormatInt(at.UnixMilli(), 10), "2020-01-01T00:00:00Z"} {
		id := "at-" + strconv.Itoa(i)
		if _, stderr, err := cmdtest.Run(t, schedulecmd.Schedule, append(flags, "--id", id, "--at", v)...); err != nil {
			t.Fatalf("--at %s: %v\n%s", v, err, stderr)
		}
	}
	recs := records(t, tiers.Topic(prefix, time.Minute), false)
	if len(recs) != 3 {
		t.Fatalf("1m tier holds %d records, want 3", len(recs))
	}
	for _, r := range recs {
		want := at.UnixMilli()
		if string(r.Key) == "at-2" {
			want = time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
		}
		if got := millis(t, r, tiers.HeaderDue); got != want {
			t.Errorf("%s: due %d, want %d", r.Key, got, want)
		}
	}
}

// TestCancel: the cancellation record has the task id as key, the time as
// timestamp, hourglass-due only with --due, and a value that is not null;
// --withdraw produces a tombstone.
func TestCancel(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	due := time.Now().Add(time.Hour).Truncate(time.Millisecond)
	before := time.Now()
	stdout, stderr, err := cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "order-42", "--due", due.Format(time.RFC3339Nano))...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`^cancellation of the deadline of order-42 due \S+ recorded: \S+cancellations\[\d\], acknowledged at \S+, 59m\S+ before the due time: such a deadline does not reach its target\n$`).MatchString(stdout) {
		t.Errorf("stdout %q", stdout)
	}
	// order-43 was never scheduled: the command cannot know it without a
	// scan, so it says what the record stops, not that it stopped anything.
	stdout, stderr, err = cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "order-43")...)
	want := regexp.MustCompile(`^cancellation of order-43 recorded: \S+cancellations\[\d\], acknowledged at (\S+)\n` +
		`it stops every deadline of order-43 scheduled until \S+ and due after (\S+); one due earlier may have fired\. ` +
		`This command does not look for deadlines: hourglass status order-43 lists them\n$`)
	m := want.FindStringSubmatch(stdout)
	if err != nil || m == nil || m[1] != m[2] {
		t.Fatalf("cancel without --due: %v\n%s%s", err, stdout, stderr)
	}
	if strings.Contains(stdout, "cancelled every") {
		t.Errorf("cancel of a task never scheduled says it cancelled deadlines:\n%s", stdout)
	}
	if _, stderr, err = cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "order-43", "--withdraw")...); err != nil {
		t.Fatalf("withdraw: %v\n%s", err, stderr)
	}
	recs := records(t, tiers.CancellationsTopic(prefix), false)
	if len(recs) != 3 {
		t.Fatalf("%d cancellation records, want 3", len(recs))
	}
	var last43 *kgo.Record
	for i, r := range recs {
		if string(r.Key) == "order-43" && (last43 == nil || r.Offset > last43.Offset) {
			last43 = r
		}
		c, err := tiers.DecodeCancellation(r)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if r.Partition != kafka.KeyPartition(r.Topic, r.Key, partitions) || r.Timestamp.Before(before.Truncate(time.Millisecond)) {
			t.Errorf("record %d in partition %d at %v", i, r.Partition, r.Timestamp)
		}
		_, hasDue := header(r, tiers.HeaderDue)
		switch string(r.Key) {
		case "order-42":
			if !c.Due.Equal(due) || c.Withdrawn || r.Value == nil {
				t.Errorf("order-42: %+v, value %v", c, r.Value)
			}
		case "order-43":
			if hasDue || (r.Value == nil) != c.Withdrawn {
				t.Errorf("order-43: %+v, hourglass-due %v, value %v", c, hasDue, r.Value)
			}
		}
	}
	if last43 == nil || last43.Value != nil {
		t.Errorf("the last record of order-43 is not a tombstone")
	}
}

// TestCancelLate: a cancellation acknowledged after its due time is
// recorded, and the command fails with an error that wraps tiers.ErrLate
// and points to hourglass status.
func TestCancelLate(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	due := time.Now().Add(-time.Second)
	stdout, _, err := cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "order-42", "--due", strconv.FormatInt(due.UnixMilli(), 10))...)
	if !errors.Is(err, tiers.ErrLate) {
		t.Fatalf("error %v, want one wrapping tiers.ErrLate", err)
	}
	want := "order-42 cancelled: recorded, but acknowledged after the deadline was due; it may have fired: see hourglass status order-42"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %q, want it to start with %q", err, want)
	}
	if !strings.Contains(stdout, "after the due time") {
		t.Errorf("stdout %q does not say the acknowledgement was late", stdout)
	}
	if recs := records(t, tiers.CancellationsTopic(prefix), false); len(recs) != 1 {
		t.Errorf("%d cancellation records, want 1", len(recs))
	}
}

// TestReschedule: the cancellation and the new deadline are produced in
// one committed transaction; the new deadline is scheduled after the
// cancellation, which therefore does not cover it.
func TestReschedule(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	from := time.Now().Add(20 * time.Minute).Truncate(time.Millisecond)
	stdout, stderr, err := cmdtest.Run(t, schedulecmd.Reschedule, append(flags, "--id", "order-42", "--in", "45m",
		"--from", from.Format(time.RFC3339Nano), "--payload", "p")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !regexp.MustCompile(`^rescheduled order-42 in transaction hourglass-reschedule-[0-9a-f]{16}:\n  cancellation of the deadline of order-42 due .*before the due time.*\n  scheduled \S+delay\.30m\[\d\]: due .*\n$`).MatchString(stdout) {
		t.Errorf("stdout %q", stdout)
	}
	cancels := records(t, tiers.CancellationsTopic(prefix), false)
	sched := records(t, tiers.Topic(prefix, 30*time.Minute), false)
	if len(cancels) != 1 || len(sched) != 1 {
		t.Fatalf("%d cancellations and %d deadlines, want 1 and 1", len(cancels), len(sched))
	}
	c, r := cancels[0], sched[0]
	if !c.Attrs.IsTransactional() || !r.Attrs.IsTransactional() {
		t.Errorf("records not produced in a transaction: %v %v", c.Attrs.IsTransactional(), r.Attrs.IsTransactional())
	}
	cc, err := tiers.DecodeCancellation(c)
	if err != nil || !cc.Due.Equal(from) {
		t.Errorf("cancellation %+v (%v), want due %v", cc, err, from)
	}
	m, err := tiers.DecodeRecord(r)
	if err != nil || cc.Covers(m.Scheduled, m.Due) || string(r.Value) != "p" {
		t.Errorf("new deadline %+v (%v) value %q: covered by its own cancellation %+v", m, err, r.Value, cc)
	}
}

// TestRescheduleAborts: when the new deadline cannot be produced, the
// transaction is aborted: a reader of committed records sees neither
// record, though the cancellation was written.
func TestRescheduleAborts(t *testing.T) {
	t.Parallel()
	prefix, flags := pipeline(t)
	delay := tiers.Topic(prefix, 30*time.Minute)
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: delay, Err: kerr.TopicAuthorizationFailed, Count: -1})
	defer fault.Remove()
	_, _, err := cmdtest.Run(t, schedulecmd.Reschedule, append(flags, "--id", "order-42", "--in", "45m")...)
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("error %v, want the refusal of the delay topic", err)
	}
	cancellations := tiers.CancellationsTopic(prefix)
	if got := records(t, cancellations, false); len(got) != 0 {
		t.Errorf("a reader of committed records sees %d cancellations, want none", len(got))
	}
	if got := records(t, delay, false); len(got) != 0 {
		t.Errorf("a reader of committed records sees %d deadlines, want none", len(got))
	}
	if got := records(t, cancellations, true); len(got) != 1 {
		t.Errorf("a reader of uncommitted records sees %d cancellations, want the aborted one", len(got))
	}
}

// TestMissingTopic: a produce to a topic that does not exist fails at
// once, naming it.
func TestMissingTopic(t *testing.T) {
	t.Parallel()
	flags := []string{"--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic-prefix", "nothing.here."}
	_, _, err := cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "1")...)
	if err == nil || !strings.Contains(err.Error(), "topic nothing.here.cancellations does not exist") {
		t.Errorf("error %v, want one naming the missing topic", err)
	}
}

// TestBadArgs: bad command lines are usage errors naming the flag.
func TestBadArgs(t *testing.T) {
	s, c, r := schedulecmd.Schedule, schedulecmd.Cancel, schedulecmd.Reschedule
	cmdtest.CheckBadConfig(t, []cmdtest.BadConfigCase{
		{"schedule without id", s, []string{"--in", "1m"}, nil, []string{"--id", "required"}},
		{"schedule without due", s, []string{"--id", "1"}, nil, []string{"--in", "--at"}},
		{"schedule in and at", s, []string{"--id", "1", "--in", "1m", "--at", "2026-01-01T00:00:00Z"}, nil, []string{"--at", "not both"}},
		{"schedule bad at", s, []string{"--id", "1", "--at", "tomorrow"}, nil, []string{"--at", `"tomorrow"`, "RFC 3339"}},
		{"schedule at in seconds", s, []string{"--id", "1", "--at", "1778761800"}, nil,
			[]string{"--at", `"1778761800"`, "it looks like unix seconds (2026-05-14T12:30:00Z), which is 1778761800000 in milliseconds"}},
		{"schedule at in microseconds", s, []string{"--id", "1", "--at", "1778761800000000"}, nil,
			[]string{"--at", "it looks like unix microseconds (2026-05-14T12:30:00Z), which is 1778761800000 in milliseconds"}},
		{"schedule at before 2000", s, []string{"--id", "1", "--at", "1999-12-31T23:59:59Z"}, nil, []string{"--at", "before 2000"}},
		{"schedule negative in", s, []string{"--id", "1", "--in", "-1m"}, nil, []string{"--in"}},
		{"schedule bad target", s, []string{"--id", "1", "--in", "1m", "--target", "a b"}, nil, []string{"--target"}},
		{"schedule target outcomes", s, []string{"--id", "1", "--in", "1m", "--target", "hourglass.outcomes"}, nil,
			[]string{"--target", "hourglass.outcomes is the outcomes topic of --topic-prefix hourglass.", "target_invalid", "default hourglass.cancel"}},
		{"schedule target delay topic", s, []string{"--id", "1", "--in", "1m", "--target", "hourglass.delay.1m"}, nil, []string{"--target", "a delay topic"}},
		{"schedule target dlq", s, []string{"--id", "1", "--in", "1m", "--target", "hourglass.dlq"}, nil, []string{"--target", "the dead-letter topic"}},
		{"schedule target cancellations of the prefix", s, []string{"--id", "1", "--in", "1m", "--topic-prefix", "nc.", "--target", "nc.cancellations"}, nil,
			[]string{"--target", "the cancellations topic of --topic-prefix nc."}},
		{"reschedule target outcomes", r, []string{"--id", "1", "--in", "1m", "--target", "hourglass.outcomes"}, nil, []string{"--target", "the outcomes topic"}},
		{"schedule payload file missing", s, []string{"--id", "1", "--in", "1m", "--payload", "@/nonexistent/p"}, nil, []string{"--payload", "/nonexistent/p"}},
		{"schedule tiers from env", s, []string{"--id", "1", "--in", "1m"}, map[string]string{"HOURGLASS_TIERS": "1x"}, []string{"--tiers", "HOURGLASS_TIERS"}},
		{"schedule unknown flag", s, []string{"--id", "1", "--in", "1m", "--kinds", "x"}, nil, []string{"unknown flag --kinds; did you mean --kind?"}},
		{"cancel bad due", c, []string{"--id", "1", "--due", "soon"}, nil, []string{"--due", `"soon"`}},
		{"cancel due in seconds", c, []string{"--id", "1", "--due", "1778761800"}, nil, []string{"--due", "it looks like unix seconds"}},
		{"cancel due and withdraw", c, []string{"--id", "1", "--due", "1700000000000", "--withdraw"}, nil, []string{"--due", "--withdraw"}},
		{"cancel zero timeout", c, []string{"--id", "1", "--timeout", "0s"}, nil, []string{"--timeout"}},
		{"cancel extra argument", c, []string{"--id", "1", "2"}, nil, []string{"unexpected arguments"}},
		{"reschedule bad from", r, []string{"--id", "1", "--in", "1m", "--from", "x"}, nil, []string{"--from"}},
		{"reschedule from in nanoseconds", r, []string{"--id", "1", "--in", "1m", "--from", "1778761800000000000"}, nil,
			[]string{"--from", "it looks like unix nanoseconds"}},
		{"reschedule at in seconds", r, []string{"--id", "1", "--at", "1778761800"}, nil, []string{"--at", "it looks like unix seconds"}},
		{"reschedule empty transactional id prefix", r, []string{"--id", "1", "--in", "1m", "--transactional-id-prefix", ""}, nil, []string{"--transactional-id-prefix"}},
		{"reschedule without due", r, []string{"--id", "1"}, nil, []string{"--in"}},
	}, func(t *testing.T, stdout string) {
		if stdout != "" {
			t.Errorf("stdout %q, want nothing", stdout)
		}
	})
}

// TestTimeoutBoundsConnecting: --timeout bounds connecting too: a broker
// address that accepts connections and never answers (a wrong port behind
// a proxy, a hung broker) fails the command at about --timeout, not after
// the Kafka client's own 10 s dial and read timeouts, and the error names
// the flag.
func TestTimeoutBoundsConnecting(t *testing.T) {
	t.Parallel()
	addr := hung.Listen(t)
	flags := []string{"--brokers", addr, "--timeout", "1s"}
	for _, tc := range []struct {
		name string
		cmd  func(t *testing.T) error
	}{
		{"schedule", func(t *testing.T) error {
			_, _, err := cmdtest.Run(t, schedulecmd.Schedule, append(flags, "--id", "1", "--in", "1m")...)
			return err
		}},
		{"cancel", func(t *testing.T) error {
			_, _, err := cmdtest.Run(t, schedulecmd.Cancel, append(flags, "--id", "1")...)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			err := tc.cmd(t)
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("took %v with --timeout 1s", took.Round(time.Millisecond))
			}
			if err == nil || !strings.Contains(err.Error(), "--timeout") {
				t.Errorf("error %v, want one naming --timeout", err)
			}
		})
	}
}
