package workload

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// Shape is the kind of delay a task gets.
type Shape string

// The shapes of the mix.
const (
	PastDue       Shape = "past_due"
	BelowSmallest Shape = "below_smallest"
	BetweenTiers  Shape = "between_tiers"
	ExactTier     Shape = "exact_tier"
	MultiHop      Shape = "multi_hop"
)

// Shapes lists every shape in the order weights are written.
var Shapes = []Shape{PastDue, BelowSmallest, BetweenTiers, ExactTier, MultiHop}

// Defaults of Config.
const (
	DefaultPastDue = 2 * time.Second
	// DefaultWeights is the default mix, in ParseWeights syntax.
	DefaultWeights = "past_due:10,below_smallest:15,between_tiers:35,exact_tier:20,multi_hop:20"
	// maxMaxDelay bounds Config.MaxDelay: the router's default --max-delay.
	maxMaxDelay = 365 * 24 * time.Hour
	// multiHopGrid is how many candidate delays New examines for multi_hop.
	multiHopGrid = 4096
)

// Config describes a mix. The zero value of each field selects its default;
// the zero Config is invalid only for want of Tiers.
type Config struct {
	// Tiers are the router's delay tiers. Required.
	Tiers tiers.Table
	// MaxDelay is the longest delay drawn. Default: the largest tier.
	MaxDelay time.Duration
	// PastDue is how far in the past a past_due task is due at most.
	// Default DefaultPastDue (2s).
	PastDue time.Duration
	// PaidFraction is the fraction of tasks, 0 to 1, whose order is paid
	// before its deadline. Default 0.
	PaidFraction float64
	// Weights are the relative frequencies of the shapes; a shape left
	// out is never drawn. Default DefaultWeights.
	Weights map[Shape]int
}

// WithDefaults returns c with its zero fields set to their defaults.
func (c Config) WithDefaults() Config {
	if c.MaxDelay == 0 {
		c.MaxDelay = c.Tiers.Largest()
	}
	if c.PastDue == 0 {
		c.PastDue = DefaultPastDue
	}
	if c.Weights == nil {
		c.Weights, _ = ParseWeights(DefaultWeights)
	}
	return c
}

// Validate reports every problem of c (after WithDefaults), each starting
// with its key: tiers, maxDelay, pastDue, paidFraction, weights and
// weights.<shape> for a shape that no delay up to maxDelay can have.
func (c Config) Validate() []error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...)))
	}
	if c.Tiers.Len() == 0 {
		bad("tiers", "required, e.g. 1s,2s,5s,10s (the router's tiers)")
	}
	if (c.MaxDelay != 0 || c.Tiers.Len() > 0) && (c.MaxDelay <= 0 || c.MaxDelay > maxMaxDelay || c.MaxDelay%time.Millisecond != 0) {
		bad("maxDelay", "%v: want whole milliseconds from 1ms to %v", c.MaxDelay, maxMaxDelay)
	}
	if c.PastDue < 0 || c.PastDue > maxMaxDelay {
		bad("pastDue", "%v: want 0 to %v", c.PastDue, maxMaxDelay)
	}
	if !(c.PaidFraction >= 0 && c.PaidFraction <= 1) {
		bad("paidFraction", "%v: want 0 to 1", c.PaidFraction)
	}
	c.checkWeights(bad)
	if len(errs) > 0 {
		return errs // feasibility needs valid tiers and delays
	}
	for _, s := range Shapes {
		if c.Weights[s] == 0 {
			continue
		}
		if why := c.infeasible(s); why != "" {
			bad("weights."+string(s), "%s; raise maxDelay or give it weight 0", why)
		}
	}
	return errs
}

// checkWeights reports, through bad, unknown shapes and weights out of
// range in c.Weights, and weights that are all 0.
func (c Config) checkWeights(bad func(key, format string, args ...any)) {
	sum := 0
	for _, s := range sortedShapes(c.Weights) {
		w := c.Weights[s]
		switch {
		case !slices.Contains(Shapes, s):
			bad("weights", "unknown shape %q: want %s", s, shapeList())
		case w < 0 || w > 1_000_000:
			bad("weights."+string(s), "%d: want 0 to 1000000", w)
		default:
			sum += w
		}
	}
	if sum == 0 {
		bad("weights", "no shape has a weight above 0")
	}
}

// infeasible says why no delay up to MaxDelay has the shape s with c's
// tiers; "" when some delay has it.
func (c Config) infeasible(s Shape) string {
	t0, longest := c.Tiers.Smallest(), c.MaxDelay
	switch s {
	case BelowSmallest:
		if t0 < 2*time.Millisecond {
			return fmt.Sprintf("the smallest tier %v leaves no delay below it", t0)
		}
	case ExactTier:
		if t0 > longest {
			return fmt.Sprintf("no tier is at most maxDelay %v", longest)
		}
	case BetweenTiers:
		if !betweenFeasible(c.Tiers, longest) {
			return fmt.Sprintf("no whole millisecond in (%v, %v] is not a tier", t0, longest)
		}
	case MultiHop:
		if _, most := multiHopCandidates(c.Tiers, longest); most < 2 {
			return fmt.Sprintf("no delay up to maxDelay %v waits in two or more tiers of %s", longest, c.Tiers)
		}
	}
	return ""
}

// Task is one drawn task.
type Task struct {
	Shape Shape
	// Delay is from now to the due time; negative for past_due.
	Delay time.Duration
	// Paid says to pay the order before it is due.
	Paid bool
}

// Mix draws tasks. It holds no mutable state: one Mix may serve many
// goroutines, each with its own *rand.Rand.
type Mix struct {
	cfg    Config
	shapes []Shape
	cum    []int // cumulative weights of shapes
	exact  []time.Duration
	multi  []time.Duration // candidate multi_hop delays
}

// New returns the Mix of c (defaults applied), or Validate's problems
// joined.
func New(c Config) (*Mix, error) {
	c = c.WithDefaults()
	if errs := c.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	m := &Mix{cfg: c}
	total := 0
	for _, s := range Shapes {
		if w := c.Weights[s]; w > 0 {
			total += w
			m.shapes = append(m.shapes, s)
			m.cum = append(m.cum, total)
		}
	}
	for _, d := range c.Tiers.Durations() {
		if d <= c.MaxDelay {
			m.exact = append(m.exact, d)
		}
	}
	if c.Weights[MultiHop] > 0 {
		m.multi, _ = multiHopCandidates(c.Tiers, c.MaxDelay)
	}
	return m, nil
}

// Config returns the mix's configuration with defaults applied.
func (m *Mix) Config() Config { return m.cfg }

// Draw draws one task with r.
func (m *Mix) Draw(r *rand.Rand) Task {
	n := r.IntN(m.cum[len(m.cum)-1])
	i, _ := slices.BinarySearch(m.cum, n+1)
	s := m.shapes[i]
	t := Task{Shape: s, Paid: m.cfg.PaidFraction > 0 && r.Float64() < m.cfg.PaidFraction}
	t0, longest := m.cfg.Tiers.Smallest(), m.cfg.MaxDelay
	switch s {
	case PastDue:
		t.Delay = -millis(r, 0, m.cfg.PastDue)
	case BelowSmallest:
		t.Delay = millis(r, time.Millisecond, min(t0-time.Millisecond, longest))
	case ExactTier:
		t.Delay = m.exact[r.IntN(len(m.exact))]
	case BetweenTiers:
		t.Delay = millis(r, t0+time.Millisecond, longest)
		for m.cfg.Tiers.Contains(t.Delay) && t.Delay < longest {
			t.Delay += time.Millisecond
		}
		for m.cfg.Tiers.Contains(t.Delay) {
			t.Delay -= time.Millisecond
		}
	case MultiHop:
		t.Delay = m.multi[r.IntN(len(m.multi))]
	}
	return t
}

// betweenFeasible reports whether (smallest, longest] holds a whole millisecond
// that is not a tier.
func betweenFeasible(t tiers.Table, longest time.Duration) bool {
	t0 := t.Smallest()
	if longest <= t0 {
		return false
	}
	inside := 0
	for _, d := range t.Durations() {
		if d > t0 && d <= longest {
			inside++
		}
	}
	return int64((longest-t0)/time.Millisecond) > int64(inside)
}

// millis draws whole milliseconds uniformly from [lo, hi].
func millis(r *rand.Rand, lo, hi time.Duration) time.Duration {
	n := int64((hi - lo) / time.Millisecond)
	return lo + time.Duration(r.Int64N(n+1))*time.Millisecond
}

// Steps returns how many tier topics a task with delay d waits in, as the
// router moves it: the producer's tier (tiers.Table.Pick), then one more
// for each hop while what is left reaches the smallest tier (within
// tiers.Tolerance). The rest waits in the router's timer. A delay of zero
// or less waits in one topic, which forwards it at once.
func Steps(t tiers.Table, d time.Duration) int {
	if t.Len() == 0 {
		return 0
	}
	n := 1
	d -= t.Pick(d)
	for d > 0 && d+tiers.Tolerance >= t.Smallest() && n < 1<<20 {
		d -= t.Pick(d)
		n++
	}
	return n
}

// multiHopCandidates returns up to multiHopGrid delays in (smallest, longest]
// that wait in min(3, most) or more tiers, where most is the most tiers any
// examined delay waits in.
func multiHopCandidates(t tiers.Table, longest time.Duration) (cands []time.Duration, most int) {
	t0 := t.Smallest()
	if longest <= t0 {
		return nil, 0
	}
	step := ((longest - t0) / multiHopGrid).Truncate(time.Millisecond)
	step = max1ms(step)
	steps := make(map[time.Duration]int)
	for d := longest; d > t0 && len(steps) < multiHopGrid; d -= step {
		n := Steps(t, d)
		steps[d] = n
		most = maxInt(most, n)
	}
	want := min(3, most)
	if want < 2 {
		return nil, most
	}
	for d, n := range steps {
		if n >= want {
			cands = append(cands, d)
		}
	}
	slices.Sort(cands)
	return cands, most
}

func max1ms(d time.Duration) time.Duration {
	if d < time.Millisecond {
		return time.Millisecond
	}
	return d
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// ParseWeights parses "shape:weight,shape:weight" (see Shapes), such as
// DefaultWeights. Shapes left out get weight 0. Unknown shapes, a shape
// given twice, and weights that are not whole numbers from 0 to 1000000 are
// errors.
func ParseWeights(s string) (map[Shape]int, error) {
	out := make(map[Shape]int)
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("empty: want shape:weight,... e.g. " + DefaultWeights)
	}
	for _, f := range strings.Split(s, ",") {
		name, num, ok := strings.Cut(strings.TrimSpace(f), ":")
		if !ok {
			return nil, fmt.Errorf("%q: want shape:weight", f)
		}
		sh := Shape(strings.TrimSpace(name))
		if !slices.Contains(Shapes, sh) {
			return nil, fmt.Errorf("unknown shape %q: want %s", sh, shapeList())
		}
		if _, dup := out[sh]; dup {
			return nil, fmt.Errorf("shape %s given twice", sh)
		}
		w, err := strconv.Atoi(strings.TrimSpace(num))
		if err != nil || w < 0 || w > 1_000_000 {
			return nil, fmt.Errorf("weight of %s %q: want a whole number from 0 to 1000000", sh, num)
		}
		out[sh] = w
	}
	return out, nil
}

func shapeList() string {
	names := make([]string, len(Shapes))
	for i, s := range Shapes {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// sortedShapes returns the keys of w in a stable order, so that problems are
// reported in the same order every time.
func sortedShapes(w map[Shape]int) []Shape {
	keys := make([]Shape, 0, len(w))
	for s := range w {
		keys = append(keys, s)
	}
	slices.Sort(keys)
	return keys
}
