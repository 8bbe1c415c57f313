package tiers

import (
	"math"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		want    []time.Duration
		wantErr string // substring of the error; "" means no error
	}{
		{name: "default", in: "1m,5m,30m", want: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
		{name: "one tier", in: "30s", want: []time.Duration{30 * time.Second}},
		{name: "milliseconds", in: "500ms,2s", want: []time.Duration{500 * time.Millisecond, 2 * time.Second}},
		{name: "compound", in: "1h30m,1s500ms", want: []time.Duration{1500 * time.Millisecond, 90 * time.Minute}},
		{name: "unsorted", in: "30m,1m,5m", want: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
		{name: "spaces", in: " 1m , 5m,\t30m ", want: []time.Duration{time.Minute, 5 * time.Minute, 30 * time.Minute}},
		{name: "days as hours", in: "24h,168h", want: []time.Duration{24 * time.Hour, 168 * time.Hour}},

		{name: "duplicate", in: "1m,5m,1m", wantErr: "tier 1m: listed twice"},
		{name: "duplicate spelled differently", in: "1m,60s", wantErr: "tier 1m: listed twice"},
		{name: "zero", in: "0s,1m", wantErr: "must be positive"},
		{name: "bare zero", in: "0", wantErr: "must be positive"},
		{name: "negative", in: "1m,-5m", wantErr: "must be positive"},
		{name: "microseconds", in: "1m,1500us", wantErr: "whole number of milliseconds"},
		{name: "nanoseconds", in: "1ns", wantErr: "whole number of milliseconds"},
		{name: "fractional milliseconds", in: "1.5ms", wantErr: "whole number of milliseconds"},
		{name: "garbage", in: "1m,soon", wantErr: `tier "soon": not a duration`},
		{name: "number without unit", in: "60", wantErr: `tier "60": not a duration`},
		{name: "empty field", in: "1m,,5m", wantErr: `tier "": not a duration`},
		{name: "trailing comma", in: "1m,5m,", wantErr: `tier "": not a duration`},
		{name: "empty", in: "", wantErr: "no tiers"},
		{name: "blank", in: "  \t", wantErr: "no tiers"},
		{name: "too many", in: strings.Repeat("1m,", MaxTiers) + "1h", wantErr: "at most 64"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := Parse(tt.in)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				if got.Len() != 0 {
					t.Errorf("Parse(%q) returned %d tiers with its error, want the zero Table", tt.in, got.Len())
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if d := got.Durations(); !slices.Equal(d, tt.want) {
				t.Errorf("Parse(%q).Durations() = %v, want %v", tt.in, d, tt.want)
			}
		})
	}
}

func TestTableString(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   string
		want string
	}{
		{in: "1m,5m,30m", want: "1m,5m,30m"},
		{in: "30m, 60s ,300s", want: "1m,5m,30m"},
		{in: "90m,1500ms", want: "1s500ms,1h30m"},
	}
	for _, tt := range tests {
		tab, err := Parse(tt.in)
		if err != nil {
			t.Fatalf("Parse(%q): %v", tt.in, err)
		}
		if got := tab.String(); got != tt.want {
			t.Errorf("Parse(%q).String() = %q, want %q", tt.in, got, tt.want)
		}
		// String is in the syntax Parse accepts.
		again, err := Parse(tab.String())
		if err != nil {
			t.Fatalf("Parse(%q) (from String): %v", tab.String(), err)
		}
		if !slices.Equal(again.Durations(), tab.Durations()) {
			t.Errorf("Parse(String()) = %v, want %v", again.Durations(), tab.Durations())
		}
	}
}

func TestTableAccessors(t *testing.T) {
	t.Parallel()

	tab := DefaultTable()
	if got, want := tab.Len(), 14; got != want {
		t.Errorf("DefaultTable().Len() = %d, want %d", got, want)
	}
	if got, want := tab.Smallest(), time.Minute; got != want {
		t.Errorf("Smallest() = %v, want %v", got, want)
	}
	if got, want := tab.Largest(), 270*24*time.Hour; got != want {
		t.Errorf("Largest() = %v, want %v", got, want)
	}
	if !tab.Contains(5*time.Minute) || tab.Contains(3*time.Minute) {
		t.Errorf("Contains: 5m = %v (want true), 3m = %v (want false)", tab.Contains(5*time.Minute), tab.Contains(3*time.Minute))
	}

	// Durations returns a copy: changing it does not change the table.
	ds := tab.Durations()
	ds[0] = time.Hour
	if got := tab.Smallest(); got != time.Minute {
		t.Errorf("after changing Durations(): Smallest() = %v, want 1m", got)
	}

	// New does not keep the caller's slice either.
	in := []time.Duration{5 * time.Minute, time.Minute}
	tab, err := New(in...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	in[0] = time.Hour
	if got, want := tab.Durations(), []time.Duration{time.Minute, 5 * time.Minute}; !slices.Equal(got, want) {
		t.Errorf("after changing New's argument: Durations() = %v, want %v", got, want)
	}

	var zero Table
	if zero.Len() != 0 || zero.Smallest() != 0 || zero.Largest() != 0 || zero.String() != "" || zero.Contains(time.Minute) {
		t.Errorf("zero Table: Len %d, Smallest %v, Largest %v, String %q, Contains(1m) %v; want 0, 0, 0, \"\", false",
			zero.Len(), zero.Smallest(), zero.Largest(), zero.String(), zero.Contains(time.Minute))
	}
	if got := zero.For(time.Hour); got != 0 {
		t.Errorf("zero Table: For(1h) = %v, want 0", got)
	}
	if _, err := New(); err == nil {
		t.Error("New() with no tiers: want an error")
	}
}

func TestName(t *testing.T) {
	t.Parallel()

	tests := []struct {
		in   time.Duration
		want string
	}{
		{in: time.Minute, want: "1m"},
		{in: 30 * time.Minute, want: "30m"},
		{in: 90 * time.Minute, want: "1h30m"},
		{in: 500 * time.Millisecond, want: "500ms"},
		{in: 1500 * time.Millisecond, want: "1s500ms"},
		{in: 90 * time.Second, want: "1m30s"},
		{in: 24 * time.Hour, want: "24h"},
		{in: time.Hour + 30*time.Second, want: "1h30s"},
		{in: time.Second, want: "1s"},
		{in: time.Millisecond, want: "1ms"},
		{in: time.Hour + time.Millisecond, want: "1h1ms"},
		{in: 1500 * time.Microsecond, want: "1ms500us"},
		{in: time.Nanosecond, want: "1ns"},
	}
	for _, tt := range tests {
		got := Name(tt.in)
		if got != tt.want {
			t.Errorf("Name(%v) = %q, want %q", tt.in, got, tt.want)
		}
		back, err := time.ParseDuration(got)
		if err != nil {
			t.Errorf("time.ParseDuration(Name(%v) = %q): %v", tt.in, got, err)
			continue
		}
		if back != tt.in {
			t.Errorf("time.ParseDuration(Name(%v) = %q) = %v, want %v", tt.in, got, back, tt.in)
		}
	}
}

// zeroUnit matches a zero that starts a number, as in "1h0m30s" or "0s".
var zeroUnit = regexp.MustCompile(`(^|[^0-9])0`)

// TestNameRoundTrip checks Name against time.ParseDuration over many
// durations, among them ones with every unit set.
func TestNameRoundTrip(t *testing.T) {
	t.Parallel()

	ds := []time.Duration{
		1<<63 - 1, // the largest Duration
		25*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond + 999*time.Microsecond + 999,
	}
	for d := time.Millisecond; d < 1000*time.Hour; d = d*7 + 13*time.Millisecond {
		ds = append(ds, d)
	}
	for _, d := range ds {
		name := Name(d)
		back, err := time.ParseDuration(name)
		if err != nil || back != d {
			t.Errorf("time.ParseDuration(Name(%d) = %q) = %v, %v; want %v", int64(d), name, back, err, d)
		}
		if zeroUnit.MatchString(name) || strings.Contains(name, ".") {
			t.Errorf("Name(%v) = %q, want no zero units and no fractions", d, name)
		}
	}
}

func TestTableFor(t *testing.T) {
	t.Parallel()

	tab := classic(t)
	tests := []struct {
		name  string
		delay time.Duration
		want  time.Duration
	}{
		{name: "negative", delay: -time.Hour, want: time.Minute},
		{name: "zero", delay: 0, want: time.Minute},
		{name: "one millisecond", delay: time.Millisecond, want: time.Minute},
		{name: "just below smallest", delay: time.Minute - time.Millisecond, want: time.Minute},
		{name: "smallest", delay: time.Minute, want: time.Minute},
		{name: "just above smallest", delay: time.Minute + time.Millisecond, want: time.Minute},
		{name: "between 1m and 5m", delay: 4*time.Minute + 59*time.Second, want: time.Minute},
		{name: "middle", delay: 5 * time.Minute, want: 5 * time.Minute},
		{name: "between 5m and 30m", delay: 29 * time.Minute, want: 5 * time.Minute},
		{name: "largest", delay: 30 * time.Minute, want: 30 * time.Minute},
		{name: "37m", delay: 37 * time.Minute, want: 30 * time.Minute},
		{name: "a week", delay: 7 * 24 * time.Hour, want: 30 * time.Minute},
		{name: "largest Duration", delay: 1<<63 - 1, want: 30 * time.Minute},
	}
	for _, tt := range tests {
		if got := tab.For(tt.delay); got != tt.want {
			t.Errorf("%s: For(%v) = %v, want %v", tt.name, tt.delay, got, tt.want)
		}
	}

	// A one-tier table answers that tier for every delay.
	one, err := New(time.Second)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{-time.Second, 0, time.Millisecond, time.Second, time.Hour} {
		if got := one.For(d); got != time.Second {
			t.Errorf("one tier: For(%v) = %v, want 1s", d, got)
		}
	}
}

// TestTableForHops follows a record through the tiers the way the router
// moves it: while the remaining delay is at least the smallest tier, it goes
// to For(remaining); the rest it waits out in the router's timer.
func TestTableForHops(t *testing.T) {
	t.Parallel()

	tab := classic(t)
	tests := []struct {
		delay time.Duration
		want  []time.Duration
	}{
		{delay: 30 * time.Minute, want: []time.Duration{30 * time.Minute}},
		{delay: 36*time.Minute + 30*time.Second, want: []time.Duration{30 * time.Minute, 5 * time.Minute, time.Minute}},
		{delay: 37 * time.Minute, want: []time.Duration{30 * time.Minute, 5 * time.Minute, time.Minute, time.Minute}},
		{delay: 65 * time.Minute, want: []time.Duration{30 * time.Minute, 30 * time.Minute, 5 * time.Minute}},
		{delay: 59 * time.Second, want: nil},
	}
	for _, tt := range tests {
		var hops []time.Duration
		for left := tt.delay; left >= tab.Smallest(); {
			tier := tab.For(left)
			hops = append(hops, tier)
			left -= tier
		}
		if !slices.Equal(hops, tt.want) {
			t.Errorf("hops for %v = %v, want %v", tt.delay, hops, tt.want)
		}
	}
}

func TestTopic(t *testing.T) {
	t.Parallel()

	tests := []struct {
		prefix string
		d      time.Duration
		want   string
	}{
		{prefix: DefaultPrefix, d: time.Minute, want: "hourglass.delay.1m"},
		{prefix: DefaultPrefix, d: 30 * time.Minute, want: "hourglass.delay.30m"},
		{prefix: DefaultPrefix, d: 90 * time.Minute, want: "hourglass.delay.1h30m"},
		{prefix: DefaultPrefix, d: 500 * time.Millisecond, want: "hourglass.delay.500ms"},
		{prefix: DefaultPrefix, d: 60 * time.Second, want: "hourglass.delay.1m"},
		{prefix: "", d: 5 * time.Minute, want: "delay.5m"},
		{prefix: "shop-", d: time.Hour, want: "shop-delay.1h"},
	}
	for _, tt := range tests {
		got := Topic(tt.prefix, tt.d)
		if got != tt.want {
			t.Errorf("Topic(%q, %v) = %q, want %q", tt.prefix, tt.d, got, tt.want)
		}
		if err := ValidTopic(got); err != nil {
			t.Errorf("Topic(%q, %v) = %q: %v", tt.prefix, tt.d, got, err)
		}
	}

	if got, want := classic(t).Topics(DefaultPrefix), []string{"hourglass.delay.1m", "hourglass.delay.5m", "hourglass.delay.30m"}; !slices.Equal(got, want) {
		t.Errorf("Topics = %q, want %q", got, want)
	}
	if got, want := DefaultTable().Topics(DefaultPrefix)[13], "hourglass.delay.6480h"; got != want {
		t.Errorf("DefaultTable().Topics()[13] = %q, want %q", got, want)
	}
	for _, tt := range []struct{ got, want string }{
		{CancelTopic(DefaultPrefix), "hourglass.cancel"},
		{DeadLetterTopic(DefaultPrefix), "hourglass.dlq"},
		{OutcomesTopic(DefaultPrefix), "hourglass.outcomes"},
		{CancelTopic("shop."), "shop.cancel"},
	} {
		if tt.got != tt.want {
			t.Errorf("got topic %q, want %q", tt.got, tt.want)
		}
	}
}

func TestValidTopic(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name    string
		in      string
		wantErr string // substring; "" means valid
	}{
		{name: "tier topic", in: "hourglass.delay.1h30m"},
		{name: "all allowed characters", in: "Orders_cancel-v2.EU.0"},
		{name: "one character", in: "a"},
		{name: "dots in a longer name", in: "..."},
		{name: "longest", in: strings.Repeat("t", 249)},

		{name: "empty", in: "", wantErr: "empty topic name"},
		{name: "too long", in: strings.Repeat("t", 250), wantErr: "250 characters, more than 249"},
		{name: "dot", in: ".", wantErr: "reserved"},
		{name: "dot dot", in: "..", wantErr: "reserved"},
		{name: "space", in: "orders cancel", wantErr: "' '"},
		{name: "slash", in: "orders/cancel", wantErr: "'/'"},
		{name: "colon", in: "orders:cancel", wantErr: "':'"},
		{name: "newline", in: "orders\n", wantErr: "'\\n'"},
		{name: "NUL", in: "orders\x00", wantErr: "'\\x00'"},
		{name: "non-ASCII", in: "bestellungen-öffnen", wantErr: "only ASCII letters"},
	}
	for _, tt := range tests {
		err := ValidTopic(tt.in)
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%s: ValidTopic(%q) = %v, want nil", tt.name, tt.in, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("%s: ValidTopic(%q) = nil, want an error containing %q", tt.name, tt.in, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("%s: ValidTopic(%q) = %q, want it to contain %q", tt.name, tt.in, err, tt.wantErr)
		}
	}
}

func TestTablePick(t *testing.T) {
	table := classic(t)
	tests := []struct {
		name  string
		delay time.Duration
		want  time.Duration
	}{
		{"exact tier", 5 * time.Minute, 5 * time.Minute},
		{"within the tolerance below", 5*time.Minute - Tolerance, 5 * time.Minute},
		{"beyond the tolerance below", 5*time.Minute - Tolerance - time.Nanosecond, time.Minute},
		{"negative", -time.Hour, time.Minute},
		{"saturated", math.MaxInt64, 30 * time.Minute},
	}
	for _, tt := range tests {
		if got := table.Pick(tt.delay); got != tt.want {
			t.Errorf("%s: Pick(%v) = %v, want %v", tt.name, tt.delay, got, tt.want)
		}
	}
}

// classic returns the table 1m,5m,30m, the default before the ladder grew.
func classic(t *testing.T) Table {
	t.Helper()
	tab, err := Parse("1m,5m,30m")
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

func TestWalk(t *testing.T) {
	t.Parallel()

	const day = 24 * time.Hour
	tab := DefaultTable()
	tests := []struct {
		delay time.Duration
		want  []time.Duration
	}{
		{delay: -time.Hour, want: []time.Duration{time.Minute}},
		{delay: 20 * time.Second, want: []time.Duration{time.Minute}},
		{delay: 30 * time.Minute, want: []time.Duration{30 * time.Minute}},
		{delay: 30*time.Minute - Tolerance, want: []time.Duration{30 * time.Minute}},
		{delay: 37 * time.Minute, want: []time.Duration{30 * time.Minute, 5 * time.Minute, 2 * time.Minute}},
		{delay: 4*time.Minute + 59*time.Second, want: []time.Duration{2 * time.Minute, 2 * time.Minute}},
		{delay: day, want: []time.Duration{day}},
		{delay: 7 * day, want: []time.Duration{7 * day}},
		{delay: 30 * day, want: []time.Duration{30 * day}},
		{delay: 365 * day, want: []time.Duration{270 * day, 90 * day, 3 * day, day, day}},
	}
	for _, tt := range tests {
		if got := tab.Walk(tt.delay); !slices.Equal(got, tt.want) {
			t.Errorf("Walk(%v) = %v, want %v", tt.delay, got, tt.want)
		}
	}
	if got := (Table{}).Walk(time.Hour); got != nil {
		t.Errorf("zero Table: Walk = %v, want nil", got)
	}
	// The classic table walks a week 336 times through its 30m tier.
	if got := len(classic(t).Walk(7 * day)); got != 336 {
		t.Errorf("1m,5m,30m: a week visits %d topics, want 336", got)
	}
}

// TestDefaultTableCost bounds what a deadline costs with the default ladder:
// at most 22 delay topics for any delay up to a year, and about 5 on average
// when every scale of delay, from a second to a year, is as likely.
func TestDefaultTableCost(t *testing.T) {
	t.Parallel()

	tab := DefaultTable()
	const year = 365 * 24 * time.Hour
	worst := 0
	for d := time.Duration(0); d <= year; d += 7*time.Minute + 13*time.Second {
		worst = max(worst, len(tab.Walk(d)))
	}
	if worst > 22 {
		t.Errorf("worst walk up to a year: %d visits, want at most 22", worst)
	}
	var sum, n int
	for d := time.Second; d <= year; d = d * 21 / 20 {
		sum += len(tab.Walk(d))
		n++
	}
	if avg := float64(sum) / float64(n); avg > 6 {
		t.Errorf("walks on a log scale from 1s to a year: %.2f visits on average, want at most 6", avg)
	}
	for _, d := range tab.Durations() {
		if got := len(tab.Walk(d)); got != 1 {
			t.Errorf("Walk(%v): %d visits, want 1 (its own tier)", d, got)
		}
	}
}
