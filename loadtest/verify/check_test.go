package verify

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/loadtest/manifest"
)

const (
	base = 1_800_000_000_000 // unix ms
	pfx  = "lt-r-"
)

// ev returns an outcome event of task id closed at closedMs.
func ev(id string, out outcome.Outcome, detail string, closedMs int64) outcome.Event {
	return outcome.Event{V: outcome.Version, TaskID: id, Outcome: out, Detail: detail, ClosedMs: closedMs}
}

func entry(id string, dueMs, scheduledMs int64, paid bool, shape string) manifest.Entry {
	return manifest.Entry{ID: id, DueMs: dueMs, ScheduledMs: scheduledMs, Paid: paid, Shape: shape}
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name    string
		entries []manifest.Entry
		events  []outcome.Event
		// want is compared field by field with the report's counts;
		// ByShape and Examples are checked where set.
		want         Report
		wantShape    map[string]*ShapeReport
		wantExamples map[string][]string
	}{
		{
			name:    "all closed on time",
			entries: []manifest.Entry{entry(pfx+"1", base+1000, base, false, "a"), entry(pfx+"2", base+2000, base, false, "a")},
			events:  []outcome.Event{ev(pfx+"1", "closed", "", base+1003), ev(pfx+"2", "closed", "", base+2001)},
			want: Report{Scheduled: 2, Final: 2, Closed: 2, Outcomes: map[outcome.Outcome]int{"closed": 2}, OK: true,
				LatenessMs: Percentiles{N: 2, Percentiles: embedded.Percentiles{P50: 1, P90: 3, P99: 3, P999: 3, Max: 3}}},
			wantShape: map[string]*ShapeReport{"a": {Scheduled: 2, LatenessMs: Percentiles{N: 2, Percentiles: embedded.Percentiles{P50: 1, P90: 3, P99: 3, P999: 3, Max: 3}}}},
		},
		{
			name:    "paid skipped as paid",
			entries: []manifest.Entry{entry(pfx+"1", base+1000, base, true, "")},
			events:  []outcome.Event{ev(pfx+"1", "skipped", "PAID", base+1000)},
			want: Report{Scheduled: 1, Paid: 1, Final: 1, SkippedPaid: 1, Outcomes: map[outcome.Outcome]int{"skipped": 1}, OK: true,
				LatenessMs: Percentiles{N: 1}},
		},
		{
			name:         "paid but closed is wrong",
			entries:      []manifest.Entry{entry(pfx+"1", base+1000, base, true, "")},
			events:       []outcome.Event{ev(pfx+"1", "closed", "", base+1000)},
			want:         Report{Scheduled: 1, Paid: 1, Final: 1, Closed: 1, WrongOutcome: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, LatenessMs: Percentiles{N: 1}},
			wantExamples: map[string][]string{"wrong_outcome": {pfx + "1"}},
		},
		{
			name:         "paid but skipped for another state is wrong",
			entries:      []manifest.Entry{entry(pfx+"1", base+1000, base, true, "")},
			events:       []outcome.Event{ev(pfx+"1", "skipped", "SHIPPED", base+1000)},
			want:         Report{Scheduled: 1, Paid: 1, Final: 1, WrongOutcome: 1, Outcomes: map[outcome.Outcome]int{"skipped": 1}, LatenessMs: Percentiles{N: 1}},
			wantExamples: map[string][]string{"wrong_outcome": {pfx + "1"}},
		},
		{
			name:    "unpaid skipped or failed is wrong, not_found is not",
			entries: []manifest.Entry{entry(pfx+"1", base, base, false, ""), entry(pfx+"2", base, base, false, ""), entry(pfx+"3", base, base, false, "")},
			events:  []outcome.Event{ev(pfx+"1", "skipped", "PAID", base), ev(pfx+"2", "failed", "", base), ev(pfx+"3", "not_found", "", base)},
			want: Report{Scheduled: 3, Final: 3, SkippedPaid: 1, WrongOutcome: 2, Outcomes: map[outcome.Outcome]int{"skipped": 1, "failed": 1, "not_found": 1},
				LatenessMs: Percentiles{N: 3}},
			wantExamples: map[string][]string{"wrong_outcome": {pfx + "1", pfx + "2"}},
		},
		{
			name:         "lost",
			entries:      []manifest.Entry{entry(pfx+"1", base, base, false, "s"), entry(pfx+"2", base, base, false, "s")},
			events:       []outcome.Event{ev(pfx+"1", "closed", "", base+5), ev(pfx+"2", "retry", "", base+5)},
			want:         Report{Scheduled: 2, Final: 1, Closed: 1, Lost: 1, Retries: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: 5, P90: 5, P99: 5, P999: 5, Max: 5}}},
			wantShape:    map[string]*ShapeReport{"s": {Scheduled: 2, Lost: 1, LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: 5, P90: 5, P99: 5, P999: 5, Max: 5}}}},
			wantExamples: map[string][]string{"lost": {pfx + "2"}},
		},
		{
			name:    "retry then closed",
			entries: []manifest.Entry{entry(pfx+"1", base, base, false, "")},
			events:  []outcome.Event{ev(pfx+"1", "retry", "", base+1), ev(pfx+"1", "closed", "", base+2000)},
			want: Report{Scheduled: 1, Final: 1, Closed: 1, Retries: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, OK: true,
				LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: 2000, P90: 2000, P99: 2000, P999: 2000, Max: 2000}}},
		},
		{
			name:    "duplicate: the first final outcome counts",
			entries: []manifest.Entry{entry(pfx+"1", base, base, false, "")},
			events:  []outcome.Event{ev(pfx+"1", "closed", "", base+1), ev(pfx+"1", "already_closed", "", base+50)},
			want: Report{Scheduled: 1, Final: 1, Closed: 1, Duplicates: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, OK: true,
				LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: 1, P90: 1, P99: 1, P999: 1, Max: 1}}},
			wantExamples: map[string][]string{"duplicates": {pfx + "1"}},
		},
		{
			name:    "early",
			entries: []manifest.Entry{entry(pfx+"1", base+1000, base, false, "x")},
			events:  []outcome.Event{ev(pfx+"1", "closed", "", base+999)},
			want: Report{Scheduled: 1, Final: 1, Closed: 1, Early: 1, Outcomes: map[outcome.Outcome]int{"closed": 1},
				LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: -1, P90: -1, P99: -1, P999: -1, Max: -1}}},
			wantShape:    map[string]*ShapeReport{"x": {Scheduled: 1, Early: 1, LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: -1, P90: -1, P99: -1, P999: -1, Max: -1}}}},
			wantExamples: map[string][]string{"early": {pfx + "1"}},
		},
		{
			name:         "an early duplicate is early",
			entries:      []manifest.Entry{entry(pfx+"1", base+1000, base, false, "")},
			events:       []outcome.Event{ev(pfx+"1", "closed", "", base+1000), ev(pfx+"1", "already_closed", "", base+10)},
			want:         Report{Scheduled: 1, Final: 1, Closed: 1, Early: 1, Duplicates: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, LatenessMs: Percentiles{N: 1}},
			wantExamples: map[string][]string{"early": {pfx + "1"}, "duplicates": {pfx + "1"}},
		},
		{
			name:    "past due: lateness from the schedule time",
			entries: []manifest.Entry{entry(pfx+"1", base-2000, base, false, "")},
			events:  []outcome.Event{ev(pfx+"1", "closed", "", base+7)},
			want: Report{Scheduled: 1, Final: 1, Closed: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, OK: true,
				LatenessMs: Percentiles{N: 1, Percentiles: embedded.Percentiles{P50: 7, P90: 7, P99: 7, P999: 7, Max: 7}}},
		},
		{
			name:    "events of other runs ignored, unknown ids of this run counted",
			entries: []manifest.Entry{entry(pfx+"1", base, base, false, "")},
			events:  []outcome.Event{ev("lt-q-1", "closed", "", base), ev(pfx+"9", "closed", "", base), ev(pfx+"1", "closed", "", base)},
			want: Report{Scheduled: 1, Final: 1, Closed: 1, Unexpected: 1, Outcomes: map[outcome.Outcome]int{"closed": 1}, OK: true,
				LatenessMs: Percentiles{N: 1}},
		},
		{
			name: "empty run",
			want: Report{Outcomes: map[outcome.Outcome]int{}, OK: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := &manifest.Manifest{Header: manifest.Header{Manifest: 1, RunID: "r", IDPrefix: pfx}, Entries: tt.entries}
			got := Check(m, tt.events, 0)
			tt.want.RunID = "r"
			shapes, examples := got.ByShape, got.Examples
			got.ByShape, got.Examples = nil, nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("report\n got %+v\nwant %+v", got, tt.want)
			}
			for s, want := range tt.wantShape {
				if g := shapes[s]; g == nil || *g != *want {
					t.Errorf("by shape %q = %+v, want %+v", s, g, want)
				}
			}
			if tt.wantExamples == nil {
				tt.wantExamples = map[string][]string{}
			}
			if examples == nil {
				examples = map[string][]string{}
			}
			if !reflect.DeepEqual(examples, tt.wantExamples) {
				t.Errorf("examples %v, want %v", examples, tt.wantExamples)
			}
		})
	}
}

func TestCheckExamplesBounded(t *testing.T) {
	m := &manifest.Manifest{Header: manifest.Header{RunID: "r", IDPrefix: pfx}}
	for i := range 50 {
		m.Entries = append(m.Entries, entry(pfx+string(rune('a'+i)), base, base, false, ""))
	}
	r := Check(m, nil, 3)
	if r.Lost != 50 || len(r.Examples["lost"]) != maxExamples || r.Invalid != 3 || r.OK {
		t.Errorf("lost %d, %d examples, invalid %d, ok %v; want 50, %d, 3, false", r.Lost, len(r.Examples["lost"]), r.Invalid, r.OK, maxExamples)
	}
}

// TestPercentilesJSON: the report's lateness keeps its JSON shape, the
// count first, with the bench's percentiles beside it.
func TestPercentilesJSON(t *testing.T) {
	for _, tc := range []struct {
		in   []int64
		want string
	}{
		{nil, `{"n":0,"p50":0,"p90":0,"p99":0,"p999":0,"max":0}`},
		{[]int64{9, 1}, `{"n":2,"p50":1,"p90":9,"p99":9,"p999":9,"max":9}`},
	} {
		b, err := json.Marshal(percentilesOf(tc.in))
		if err != nil || string(b) != tc.want {
			t.Errorf("percentilesOf(%v) = %s, %v; want %s", tc.in, b, err, tc.want)
		}
	}
}

func TestBound(t *testing.T) {
	for _, c := range []struct {
		p99, max        int64
		maxP99, maxLate time.Duration
		wantOK          bool
		wantOver        int
	}{
		{p99: 200, max: 900, maxP99: time.Second, maxLate: 5 * time.Second, wantOK: true},
		{p99: 1001, max: 900, maxP99: time.Second, maxLate: 5 * time.Second, wantOver: 1},
		{p99: 200, max: 5001, maxP99: time.Second, maxLate: 5 * time.Second, wantOver: 1},
		{p99: 9000, max: 9000, maxP99: time.Second, maxLate: 5 * time.Second, wantOver: 2},
		{p99: 9000, max: 9000, wantOK: true}, // no bounds
	} {
		r := Report{OK: true, LatenessMs: Percentiles{Percentiles: embedded.Percentiles{P99: c.p99, Max: c.max}}}
		r.bound(c.maxP99, c.maxLate)
		if r.OK != c.wantOK || len(r.OverBounds) != c.wantOver {
			t.Errorf("p99 %d max %d, bounds %v %v: OK %v over %q; want %v and %d", c.p99, c.max, c.maxP99, c.maxLate, r.OK, r.OverBounds, c.wantOK, c.wantOver)
		}
	}
}
