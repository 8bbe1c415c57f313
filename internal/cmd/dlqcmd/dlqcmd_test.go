package dlqcmd_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/dlqcmd"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// dlqCluster starts a kfake cluster with topics of one partition each and
// returns its address and a client of it; both are closed when t ends.
func dlqCluster(t *testing.T, topics ...string) (string, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, topics...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	broker := c.ListenAddrs()[0]
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return broker, cl
}

// header is a record header.
func header(k string, v []byte) kgo.RecordHeader { return kgo.RecordHeader{Key: k, Value: v} }

// TestDLQ lists and replays dead letters: one the canceller gave up on
// (replayable) and one that breaks the record contract (skipped).
func TestDLQ(t *testing.T) {
	broker, cl := dlqCluster(t, "d.dlq", "d.cancel")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	due := tiers.FormatMillis(time.Now().Add(-time.Minute))
	// Dead-lettered two hours ago (the record time --since goes by).
	gaveUp := &kgo.Record{Topic: "d.dlq", Key: []byte("42"), Value: []byte(`{"order":42}`), Timestamp: time.Now().Add(-2 * time.Hour), Headers: []kgo.RecordHeader{
		header(tiers.HeaderDue, due), header(tiers.HeaderKind, []byte("order-timeout")), header(tiers.HeaderAttempt, []byte("10")),
		header(tiers.HeaderDeadline, due), header("x-trace", []byte("t42")),
		header(tiers.HeaderReason, []byte("retries_exhausted: attempt 10 of 10: connection refused")),
		header(tiers.HeaderSource, []byte("d.cancel[0]@17")), header(tiers.HeaderDeadAt, tiers.FormatMillis(time.Now())),
	}}
	malformed := &kgo.Record{Topic: "d.dlq", Key: []byte("43"), Headers: []kgo.RecordHeader{
		header(tiers.HeaderReason, []byte("due_missing: header hourglass-due is required (unix milliseconds)")),
		header(tiers.HeaderSource, []byte("d.delay.1m[0]@3")),
	}}
	if err := cl.ProduceSync(ctx, gaveUp, malformed).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", broker, "--topic-prefix", "d."}

	stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, append([]string{"list", "--format", "json"}, base...)...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("list: %d lines, want 2:\n%s", len(lines), stdout)
	}
	var first map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"key": "42", "reason": "retries_exhausted", "attempt": 10.0, "source": "d.cancel[0]@17", "kind": "order-timeout"} {
		if first[k] != want {
			t.Errorf("list: %s = %v, want %v", k, first[k], want)
		}
	}
	stdout, _, err = cmdtest.Run(t, dlqcmd.Run, append([]string{"list", "--since", "1h"}, base...)...)
	if err != nil || !strings.Contains(stdout, "1 dead letters") || strings.Contains(stdout, "retries_exhausted") {
		t.Errorf("list --since 1h: %v, want only the recent dead letter\n%s", err, stdout)
	}
	stdout, _, err = cmdtest.Run(t, dlqcmd.Run, append([]string{"list", "--reason", "due_missing"}, base...)...)
	if err != nil || !strings.Contains(stdout, "1 dead letters") || !strings.Contains(stdout, "43") {
		t.Errorf("list --reason due_missing: %v\n%s", err, stdout)
	}

	stdout, _, err = cmdtest.Run(t, dlqcmd.Run, append([]string{"replay", "--dry-run"}, base...)...)
	if err != nil || !strings.Contains(stdout, "would replay 1 to d.cancel") || !strings.Contains(stdout, "skipped 1") {
		t.Errorf("replay --dry-run: %v\n%s", err, stdout)
	}
	stdout, _, err = cmdtest.Run(t, dlqcmd.Run, append([]string{"replay"}, base...)...)
	if err != nil || !strings.Contains(stdout, "replayed 1 to d.cancel") {
		t.Fatalf("replay: %v\n%s", err, stdout)
	}
	// The replayed record: same key, value and contract headers, attempt
	// reset, no dead-letter headers.
	rd, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics("d.cancel"), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	fs := rd.PollFetches(ctx)
	recs := fs.Records()
	if len(recs) != 1 {
		t.Fatalf("cancel topic has %d records (%v), want 1", len(recs), fs.Err0())
	}
	r := recs[0]
	m, err := tiers.DecodeRecord(r)
	if err != nil || string(r.Key) != "42" || string(r.Value) != `{"order":42}` || m.Attempt != 0 || m.Kind != "order-timeout" || m.Deadline.IsZero() {
		t.Errorf("replayed %q %q meta %+v (%v)", r.Key, r.Value, m, err)
	}
	for _, k := range []string{tiers.HeaderReason, tiers.HeaderSource, tiers.HeaderDeadAt, tiers.HeaderAttempt} {
		if _, ok := tiers.Header(r.Headers, k); ok {
			t.Errorf("replayed record keeps %s", k)
		}
	}
	if v, _ := tiers.Header(r.Headers, "x-trace"); string(v) != "t42" {
		t.Errorf("replayed record lost x-trace: %v", r.Headers)
	}
}

// TestDLQBadArgs: a missing subcommand and bad flags are usage errors.
func TestDLQBadArgs(t *testing.T) {
	cmdtest.CheckBadConfig(t, []cmdtest.BadConfigCase{
		{"no subcommand", dlqcmd.Run, nil, nil, []string{"list or replay"}},
		{"unknown subcommand", dlqcmd.Run, []string{"purge"}, nil, []string{"list or replay"}},
		{"list format", dlqcmd.Run, []string{"list", "--format", "xml"}, nil, []string{"--format"}},
		{"replay to a bad topic", dlqcmd.Run, []string{"replay", "--to", "bad topic"}, nil, []string{"--to"}},
		{"list since negative", dlqcmd.Run, []string{"list", "--since", "-1h"}, nil, []string{"--since"}},
		{"replay format", dlqcmd.Run, []string{"replay", "--format", "yaml"}, nil, []string{"--format"}},
		{"replay tiers", dlqcmd.Run, []string{"replay", "--tiers", "1m,fast"}, nil, []string{"--tiers"}},
		{"replay tiers from env", dlqcmd.Run, []string{"replay"}, map[string]string{"HOURGLASS_TIERS": "1x"}, []string{"HOURGLASS_TIERS"}},
		{"replay to a bad target topic", dlqcmd.Run, []string{"replay", "--topics", "d.cancel,bad topic"}, nil, []string{"--topics"}},
		{"replay to the dead-letter topic", dlqcmd.Run, []string{"replay", "--topics", "hourglass.dlq"}, nil, []string{"--topics", "dead-letter"}},
		{"replay to a bad target topic from env", dlqcmd.Run, []string{"replay"}, map[string]string{"HOURGLASS_TOPICS": "a,b/c"}, []string{"HOURGLASS_TOPICS"}},
	}, func(t *testing.T, stdout string) {
		if stdout != "" {
			t.Errorf("stdout is not empty:\n%s", stdout)
		}
	})
}

// hostile is what a producer can put in a dead letter's key or headers: a
// screen clear, a carriage return and a newline that would fake a row, a
// bidi override and a C1 control sequence introducer.
const hostile = "k\x1b[2J\rFAKE\n\u202eevil\u009b1m"

// rawControls returns the runes of s that a terminal may act on: anything
// not graphic but the newlines that end lines.
func rawControls(s string) []rune {
	var bad []rune
	for _, r := range s {
		if r != '\n' && !unicode.IsGraphic(r) {
			bad = append(bad, r)
		}
	}
	return bad
}

// TestDLQQuotes: dlq list and replay print the key, kind, reason, source and
// detail of a dead letter without a raw control character: text as Go
// literals on one row, JSON as escapes that decode to the original.
func TestDLQQuotes(t *testing.T) {
	broker, cl := dlqCluster(t, "d.dlq")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	source := hostile + "[0]@1"
	r := &kgo.Record{Topic: "d.dlq", Key: []byte(hostile), Headers: []kgo.RecordHeader{
		header(tiers.HeaderDue, tiers.FormatMillis(time.Now())), header(tiers.HeaderKind, []byte(hostile)),
		header(tiers.HeaderReason, []byte(hostile+": "+hostile)), header(tiers.HeaderSource, []byte(source)),
	}}
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", broker, "--topic-prefix", "d."}
	for _, args := range [][]string{
		{"list"}, {"list", "--format", "json"}, {"replay", "--dry-run"}, {"replay", "--dry-run", "--format", "json"}, {"replay"},
	} {
		stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, append(args, base...)...)
		if err != nil {
			t.Fatalf("%v: %v\n%s", args, err, stderr)
		}
		if bad := rawControls(stdout); len(bad) > 0 {
			t.Errorf("%v: raw control characters %q in:\n%s", args, bad, stdout)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		switch strings.Join(args, " ") {
		case "list":
			// Header, the dead letter, the count.
			if len(lines) != 3 || strings.Count(lines[1], term.Quote(hostile)) != 4 || !strings.Contains(lines[1], term.Quote(source)) {
				t.Errorf("list: want one row with the key, kind, reason, detail and source quoted:\n%s", stdout)
			}
		case "list --format json":
			var d map[string]any
			if err := json.Unmarshal([]byte(stdout), &d); err != nil {
				t.Fatalf("list --format json: %v\n%s", err, stdout)
			}
			for _, k := range []string{"key", "kind", "reason", "detail"} {
				if d[k] != hostile {
					t.Errorf("list --format json: %s = %q, want %q", k, d[k], hostile)
				}
			}
			if d["source"] != source {
				t.Errorf("list --format json: source = %q, want %q", d["source"], source)
			}
		case "replay --dry-run", "replay":
			if !strings.Contains(stdout, "skipped 1") || !strings.Contains(stdout, term.Quote(hostile)) {
				t.Errorf("%v: want the dead letter skipped, its key quoted:\n%s", args, stdout)
			}
		}
	}
}

// replayLine is a line of dlq replay --format json.
type replayLine struct {
	Key, Source, Action, Topic, Reason string
}

// replayJSON runs dlq replay --format json with args and returns its lines
// by key.
func replayJSON(t *testing.T, args ...string) map[string]replayLine {
	t.Helper()
	stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, append([]string{"replay", "--format", "json"}, args...)...)
	if err != nil {
		t.Fatalf("replay %v: %v\n%s", args, err, stderr)
	}
	out := map[string]replayLine{}
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var r replayLine
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("replay %v: %v in %q", args, err, l)
		}
		out[r.Key] = r
	}
	return out
}

// records returns what topic holds, read committed, from its start to its
// end offset.
func records(t *testing.T, broker, topic string) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ends, err := kadm.NewClient(cl).ListEndOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	end, _ := ends.Lookup(topic, 0)
	var out []*kgo.Record
	for len(out) < int(end.Offset) {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("%s: %d records of %d: %v", topic, len(out), end.Offset, err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// keys returns the keys of rs.
func keys(rs []*kgo.Record) []string {
	var out []string
	for _, r := range rs {
		out = append(out, string(r.Key))
	}
	return out
}

// TestDLQReplaySources: replay sends a dead letter back only to a topic it
// can prove the dead letter came from (a delay topic of --tiers or a target
// of --topics), or to --to; a forged hourglass-dlq-source naming another
// topic, or a hourglass-target naming one for the router to forward to, is
// skipped with the reason and never produced.
func TestDLQReplaySources(t *testing.T) {
	broker, cl := dlqCluster(t, "d.dlq", "d.cancel", "d.delay.1m", "orders.cancel", "payments.commands", "d.elsewhere", "x.delay.1m")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	due := tiers.FormatMillis(time.Now().Add(-time.Minute))
	deadLetter := func(key, source string, extra ...kgo.RecordHeader) *kgo.Record {
		return &kgo.Record{Topic: "d.dlq", Key: []byte(key), Value: []byte(key), Headers: append([]kgo.RecordHeader{
			header(tiers.HeaderDue, due), header(tiers.HeaderReason, []byte("close_failed: HTTP 500")), header(tiers.HeaderSource, []byte(source)),
		}, extra...)}
	}
	if err := cl.ProduceSync(ctx,
		deadLetter("forged", "payments.commands[0]@5"),
		deadLetter("cancel", "d.cancel[0]@17"),
		deadLetter("delay", "d.delay.1m[0]@3"),
		deadLetter("orders", "orders.cancel[0]@1"),
		deadLetter("via-target", "d.delay.1m[0]@4", header(tiers.HeaderTarget, []byte("payments.commands"))),
		deadLetter("bad-source", "d.cancel"),
		deadLetter("other-prefix", "x.delay.1m[0]@1"),
		deadLetter("truncated", "d.cancel[0]@18", header(tiers.HeaderTruncated, []byte("value 990000"))),
	).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", broker, "--topic-prefix", "d."}

	// Replay everything with the defaults: only the provable sources.
	stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, append([]string{"replay"}, base...)...)
	if err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr)
	}
	if got := keys(records(t, broker, "payments.commands")); len(got) != 0 {
		t.Errorf("replay wrote %q to payments.commands, a topic no dead letter can prove it came from", got)
	}
	if got := keys(records(t, broker, "d.cancel")); !slices.Equal(got, []string{"cancel"}) {
		t.Errorf("d.cancel holds %q, want [cancel]", got)
	}
	if got := keys(records(t, broker, "d.delay.1m")); !slices.Equal(got, []string{"delay"}) {
		t.Errorf("d.delay.1m holds %q, want [delay]", got)
	}
	for _, want := range []string{`key "forged": source topic "payments.commands"`, `key "via-target": hourglass-target "payments.commands"`, `key "truncated": cut to fit`, "replayed 2, skipped 6"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("replay output has no %q:\n%s", want, stdout)
		}
	}

	// Which sources each configuration proves (dry runs).
	skip := ""
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want map[string]string // key -> topic replayed to, skip for skipped
	}{
		{"defaults: the delay topics of the default ladder and d.cancel", nil, nil, map[string]string{
			"forged": skip, "cancel": "d.cancel", "delay": "d.delay.1m", "orders": skip, "via-target": skip, "bad-source": skip, "other-prefix": skip, "truncated": skip}},
		{"--topics replaces d.cancel", []string{"--topics", "orders.cancel, d.elsewhere"}, nil, map[string]string{
			"forged": skip, "cancel": skip, "delay": "d.delay.1m", "orders": "orders.cancel", "via-target": skip, "bad-source": skip, "other-prefix": skip, "truncated": skip}},
		{"--tiers without 1m", []string{"--tiers", "5m,30m"}, nil, map[string]string{
			"forged": skip, "cancel": "d.cancel", "delay": skip, "orders": skip, "via-target": skip, "bad-source": skip, "other-prefix": skip, "truncated": skip}},
		{"HOURGLASS_TOPICS and HOURGLASS_TIERS", nil, map[string]string{"HOURGLASS_TOPICS": "orders.cancel,payments.commands", "HOURGLASS_TIERS": "1m"}, map[string]string{
			"forged": "payments.commands", "cancel": skip, "delay": "d.delay.1m", "orders": "orders.cancel", "via-target": "d.delay.1m", "bad-source": skip, "other-prefix": skip, "truncated": skip}},
		{"--to names the destination", []string{"--to", "d.elsewhere"}, nil, map[string]string{
			"forged": "d.elsewhere", "cancel": "d.elsewhere", "delay": "d.elsewhere", "orders": "d.elsewhere", "via-target": skip, "bad-source": "d.elsewhere", "other-prefix": "d.elsewhere", "truncated": skip}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			got := replayJSON(t, append(append([]string{"--dry-run"}, base...), tt.args...)...)
			for key, want := range tt.want {
				g, ok := got[key]
				switch {
				case !ok:
					t.Errorf("%s: not in the output", key)
				case want == skip && (g.Action != "skipped" || g.Topic != "" || g.Reason == ""):
					t.Errorf("%s: %+v, want skipped with a reason", key, g)
				case want != skip && (g.Action != "would_replay" || g.Topic != want || g.Reason != ""):
					t.Errorf("%s: %+v, want would_replay to %s", key, g, want)
				}
			}
		})
	}

	// --to replays a dead letter whose source is not provable, once the
	// operator names where it goes.
	stdout, stderr, err = cmdtest.Run(t, dlqcmd.Run, append([]string{"replay", "--key", "forged", "--to", "d.elsewhere"}, base...)...)
	if err != nil || !strings.Contains(stdout, "replayed 1 to d.elsewhere") {
		t.Fatalf("replay --to: %v\n%s%s", err, stdout, stderr)
	}
	if got := keys(records(t, broker, "d.elsewhere")); !slices.Equal(got, []string{"forged"}) {
		t.Errorf("d.elsewhere holds %q, want [forged]", got)
	}
	if got := keys(records(t, broker, "payments.commands")); len(got) != 0 {
		t.Errorf("payments.commands holds %q, want nothing", got)
	}
}

// TestDLQReadCommitted: dlq list reads committed records only. Dead letters
// of aborted transactions are not listed, and a transaction still open when
// the command starts neither shows nor holds it up.
func TestDLQReadCommitted(t *testing.T) {
	broker, cl := dlqCluster(t, "d.dlq")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dead := func(key string) *kgo.Record {
		return &kgo.Record{Topic: "d.dlq", Key: []byte(key), Headers: []kgo.RecordHeader{header(tiers.HeaderReason, []byte("due_missing: no due"))}}
	}
	txn, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.TransactionalID("dlq-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer txn.Close()
	begin := func(key string) {
		t.Helper()
		if err := txn.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := txn.ProduceSync(ctx, dead(key)).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	end := func(commit kgo.TransactionEndTry) {
		t.Helper()
		if err := txn.EndTransaction(ctx, commit); err != nil {
			t.Fatal(err)
		}
	}
	if err := cl.ProduceSync(ctx, dead("plain")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	begin("aborted")
	end(kgo.TryAbort)
	begin("committed")
	end(kgo.TryCommit)
	if err := cl.ProduceSync(ctx, dead("plain-last")).FirstErr(); err != nil {
		t.Fatal(err)
	}
	begin("aborted-last") // the end offset is after its abort marker
	end(kgo.TryAbort)
	want := []string{"plain", "committed", "plain-last"}
	begin("open") // neither committed nor aborted while the command runs
	defer end(kgo.TryAbort)

	stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, "list", "--format", "json", "--brokers", broker, "--topic-prefix", "d.")
	if err != nil {
		t.Fatalf("list: %v\n%s", err, stderr)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(stdout), "\n") {
		var d struct{ Key string }
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("%v in %q", err, l)
		}
		got = append(got, d.Key)
	}
	if !slices.Equal(got, want) {
		t.Errorf("list: %q, want %q", got, want)
	}
}
