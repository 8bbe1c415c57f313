package deadletter_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/deadletter"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/testutil/headers"
	"github.com/hourglass/hourglass/pkg/tiers"
)

var now = time.Date(2026, 5, 14, 12, 0, 0, 0, time.UTC)

// dead returns the dead letter of a delay record of order-1, due in an
// hour, from source, with the headers kv set on it.
func dead(t *testing.T, source string, kv ...string) deadletter.DeadLetter {
	t.Helper()
	r := &kgo.Record{Topic: "hourglass.delay.1m", Key: []byte("order-1"), Value: []byte("payload"),
		Headers: headers.Of(tiers.HeaderDue, string(tiers.FormatMillis(now.Add(time.Hour))), tiers.HeaderAttempt, "3")}
	dl := record.DeadLetter(r, "hourglass.dlq", errors.New("close_failed: boom"), now)
	set := []kgo.RecordHeader{{Key: tiers.HeaderSource, Value: []byte(source)}}
	for i := 0; i+1 < len(kv); i += 2 {
		set = append(set, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
	}
	dl.Headers = record.SetHeaders(dl.Headers, set...)
	return deadletter.Read(dl)
}

// TestReplay: a dead letter goes back only to a topic the pipeline reads,
// whole, without the dead-letter headers and with the attempt reset; a
// forged source, a cut record, a record that breaks the contract and a
// target that is not the pipeline's are refused, each saying why.
func TestReplay(t *testing.T) {
	table, err := tiers.Parse("1m,5m")
	if err != nil {
		t.Fatal(err)
	}
	rule := deadletter.NewRule(tiers.DefaultPrefix, table, []string{"hourglass.cancel"}, "")
	tests := []struct {
		name    string
		d       deadletter.DeadLetter
		rule    deadletter.Rule
		topic   string // where it goes
		problem string // or part of why not
	}{
		{"to its delay topic", dead(t, "hourglass.delay.5m[2]@7"), rule, "hourglass.delay.5m", ""},
		{"to its target", dead(t, "hourglass.cancel[0]@1"), rule, "hourglass.cancel", ""},
		{"a destination named", dead(t, "elsewhere[0]@1"), deadletter.NewRule(tiers.DefaultPrefix, table, nil, "hourglass.delay.1m"), "hourglass.delay.1m", ""},
		{"a forged source", dead(t, "orders.payments[0]@1"), rule, "", "may be forged"},
		{"a source that is not one", dead(t, "hourglass.cancel@1"), rule, "", "is not topic[partition]@offset"},
		{"a tier not configured", dead(t, "hourglass.delay.30m[0]@1"), rule, "", "neither a delay topic"},
		{"cut to fit", dead(t, "hourglass.cancel[0]@1", tiers.HeaderTruncated, "value 990000"), rule, "", "cut to fit"},
		{"a target of someone else", dead(t, "hourglass.delay.1m[0]@1", tiers.HeaderTarget, "orders.payments"), rule, "", "is not a target topic"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := deadletter.Replay(tt.d, tt.rule, now)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("replay: %v, want an error saying %q", err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if r.Topic != tt.topic || string(r.Key) != "order-1" || string(r.Value) != "payload" || !r.Timestamp.Equal(now) {
				t.Errorf("replayed %s %q %q at %v, want %s, the key, the value, now", r.Topic, r.Key, r.Value, r.Timestamp, tt.topic)
			}
			for _, h := range r.Headers {
				if record.Owned(h.Key) || h.Key == tiers.HeaderAttempt {
					t.Errorf("replay keeps %s", h.Key)
				}
			}
		})
	}
	// A record without a due time breaks the contract.
	noDue := dead(t, "hourglass.delay.1m[0]@1")
	noDue.Record.Headers = headers.Of(tiers.HeaderSource, "hourglass.delay.1m[0]@1")
	if _, err := deadletter.Replay(noDue, rule, now); err == nil || !strings.Contains(err.Error(), string(tiers.ReasonDueMissing)) {
		t.Errorf("a record without a due time: %v, want %s", err, tiers.ReasonDueMissing)
	}
}
