package workload

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func table(t *testing.T, s string) tiers.Table {
	t.Helper()
	tb, err := tiers.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestSteps(t *testing.T) {
	tb := table(t, "1s,2s,5s,10s")
	tests := []struct {
		delay time.Duration
		want  int
	}{
		{-time.Second, 1},             // past due: forwarded from its first topic
		{0, 1},                        //
		{500 * time.Millisecond, 1},   // below the smallest tier: waits in it until due
		{995 * time.Millisecond, 1},   // within tiers.Tolerance of 1s
		{time.Second, 1},              // exact tier
		{1500 * time.Millisecond, 1},  // 1s, then 500ms in the router's timer
		{3 * time.Second, 2},          // 2s, 1s
		{7 * time.Second, 2},          // 5s, 2s
		{8400 * time.Millisecond, 3},  // 5s, 2s, 1s, 400ms timer
		{10 * time.Second, 1},         //
		{18700 * time.Millisecond, 4}, // 10s, 5s, 2s, 1s, 700ms timer
		{35 * time.Second, 4},         // 10s*3, 5s
	}
	for _, tt := range tests {
		if got := Steps(tb, tt.delay); got != tt.want {
			t.Errorf("Steps(%v) = %d, want %d", tt.delay, got, tt.want)
		}
	}
	if got := Steps(tiers.Table{}, time.Second); got != 0 {
		t.Errorf("Steps of the zero table = %d, want 0", got)
	}
}

func TestParseWeights(t *testing.T) {
	tests := []struct {
		in      string
		want    map[Shape]int
		wantErr string
	}{
		{in: DefaultWeights, want: map[Shape]int{PastDue: 10, BelowSmallest: 15, BetweenTiers: 35, ExactTier: 20, MultiHop: 20}},
		{in: " multi_hop : 3 , past_due:0", want: map[Shape]int{MultiHop: 3, PastDue: 0}},
		{in: "", wantErr: "empty"},
		{in: "multi_hop", wantErr: "want shape:weight"},
		{in: "sideways:1", wantErr: `unknown shape "sideways"`},
		{in: "past_due:1,past_due:2", wantErr: "given twice"},
		{in: "past_due:-1", wantErr: "whole number"},
		{in: "past_due:1.5", wantErr: "whole number"},
		{in: "past_due:1000001", wantErr: "whole number"},
	}
	for _, tt := range tests {
		got, err := ParseWeights(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseWeights(%q) error %v, want one containing %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("ParseWeights(%q): %v", tt.in, err)
			continue
		}
		if len(got) != len(tt.want) {
			t.Errorf("ParseWeights(%q) = %v, want %v", tt.in, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("ParseWeights(%q) = %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func TestValidate(t *testing.T) {
	tb := table(t, "1s,2s,5s,10s")
	only := func(s Shape) map[Shape]int { return map[Shape]int{s: 1} }
	tests := []struct {
		name string
		cfg  Config
		want []string // one substring per expected problem, in order
	}{
		{"defaults", Config{Tiers: tb}, nil},
		{"no tiers", Config{}, []string{"tiers: required"}},
		{"everything wrong", Config{Tiers: tb, MaxDelay: -time.Second, PastDue: -time.Second, PaidFraction: 1.5, Weights: map[Shape]int{"sideways": 1, PastDue: -2}},
			[]string{"maxDelay: -1s", "pastDue: -1s", "paidFraction: 1.5", "weights.past_due: -2", `weights: unknown shape "sideways"`, "weights: no shape"}},
		{"NaN paid", Config{Tiers: tb, PaidFraction: math.NaN()}, []string{"paidFraction: NaN"}},
		{"sub-millisecond max", Config{Tiers: tb, MaxDelay: 1500 * time.Microsecond}, []string{"maxDelay: 1.5ms"}},
		{"all weights zero", Config{Tiers: tb, Weights: map[Shape]int{PastDue: 0}}, []string{"weights: no shape"}},
		{"max below every tier", Config{Tiers: tb, MaxDelay: 500 * time.Millisecond},
			[]string{"weights.between_tiers", "weights.exact_tier: no tier is at most maxDelay 500ms", "weights.multi_hop"}},
		{"max allows two steps", Config{Tiers: tb, MaxDelay: 3 * time.Second}, nil}, // 3s: 2s, 1s
		{"max allows one step", Config{Tiers: tb, MaxDelay: 2 * time.Second}, // 1.99s waits in 1s, then the timer
			[]string{"weights.multi_hop: no delay up to maxDelay 2s waits in two or more tiers"}},
		{"no room between", Config{Tiers: table(t, "1ms,2ms"), MaxDelay: 2 * time.Millisecond, Weights: only(BetweenTiers)},
			[]string{"weights.between_tiers: no whole millisecond"}},
		{"no room below", Config{Tiers: table(t, "1ms,1s"), Weights: only(BelowSmallest)}, []string{"weights.below_smallest"}},
		{"multi-hop impossible", Config{Tiers: table(t, "1m"), MaxDelay: 90 * time.Second, Weights: only(MultiHop)},
			[]string{"weights.multi_hop: no delay up to maxDelay 1m30s waits in two or more tiers"}},
		{"multi-hop not weighted", Config{Tiers: table(t, "1m"), MaxDelay: 90 * time.Second, Weights: only(BetweenTiers)}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := tt.cfg.WithDefaults().Validate()
			if len(errs) != len(tt.want) {
				t.Fatalf("Validate() = %v, want %d problems %q", errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("problem %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

// TestDraw draws many tasks from several mixes and checks each against its
// shape's definition, and the shapes' and the paid share against the
// weights.
func TestDraw(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		wantSteps int // the fewest tier topics a multi_hop task waits in
	}{
		{"demo tiers", Config{Tiers: table(t, "1s,2s,5s,10s"), PaidFraction: 0.2}, 3},
		{"beyond the largest tier", Config{Tiers: table(t, "1s,2s,5s,10s"), MaxDelay: 45 * time.Second, PaidFraction: 0.5}, 3},
		{"two tiers", Config{Tiers: table(t, "1s,3s"), MaxDelay: 5 * time.Second}, 2},
		{"default tiers", Config{Tiers: tiers.DefaultTable(), MaxDelay: 2 * time.Hour, PastDue: time.Minute}, 3},
		{"odd tiers", Config{Tiers: table(t, "250ms,1s500ms,7s"), MaxDelay: 7 * time.Second, Weights: map[Shape]int{MultiHop: 1, BetweenTiers: 1}}, 3},
	}
	const n = 20_000
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := m.Config()
			t0 := c.Tiers.Smallest()
			r := rand.New(rand.NewPCG(1, 2))
			count := map[Shape]int{}
			paid := 0
			for range n {
				task := m.Draw(r)
				count[task.Shape]++
				if task.Paid {
					paid++
				}
				d := task.Delay
				if d%time.Millisecond != 0 || d > c.MaxDelay {
					t.Fatalf("%s delay %v: want whole milliseconds up to %v", task.Shape, d, c.MaxDelay)
				}
				var ok bool
				switch task.Shape {
				case PastDue:
					ok = d <= 0 && d >= -c.PastDue
				case BelowSmallest:
					ok = d >= time.Millisecond && d < t0
				case ExactTier:
					ok = c.Tiers.Contains(d)
				case BetweenTiers:
					ok = d > t0 && !c.Tiers.Contains(d)
				case MultiHop:
					ok = Steps(c.Tiers, d) >= tt.wantSteps
				}
				if !ok {
					t.Fatalf("%s delay %v (steps %d) does not fit its shape", task.Shape, d, Steps(c.Tiers, d))
				}
			}
			total := 0
			for _, w := range c.Weights {
				total += w
			}
			for s, w := range c.Weights {
				want := float64(w) / float64(total)
				if got := float64(count[s]) / n; math.Abs(got-want) > 0.02 {
					t.Errorf("share of %s = %.3f, want %.3f +- 0.02", s, got, want)
				}
			}
			if got := float64(paid) / n; math.Abs(got-c.PaidFraction) > 0.02 {
				t.Errorf("paid share = %.3f, want %.3f +- 0.02", got, c.PaidFraction)
			}
		})
	}
}

// TestDrawRepeatable: the same seed draws the same tasks.
func TestDrawRepeatable(t *testing.T) {
	m, err := New(Config{Tiers: table(t, "1s,2s,5s,10s"), PaidFraction: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	a, b := rand.New(rand.NewPCG(7, 7)), rand.New(rand.NewPCG(7, 7))
	for i := range 1000 {
		if x, y := m.Draw(a), m.Draw(b); x != y {
			t.Fatalf("draw %d: %+v and %+v from the same seed", i, x, y)
		}
	}
}

func TestNewReportsEveryProblem(t *testing.T) {
	_, err := New(Config{MaxDelay: -1, PaidFraction: 2})
	if err == nil {
		t.Fatal("New accepted an invalid config")
	}
	for _, w := range []string{"tiers:", "maxDelay:", "paidFraction:"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not name %s", err, w)
		}
	}
}
