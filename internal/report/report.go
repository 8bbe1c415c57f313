package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/outcome"
)

// Defaults of Options.
const (
	DefaultLateThreshold = time.Second
	DefaultLimit         = 20
	// MaxBuckets is how many timeline buckets an automatic bucket size
	// allows at most.
	MaxBuckets = 60
	// DefaultForecast is how far past To the forecast of due deadlines
	// reaches.
	DefaultForecast = 6 * time.Hour
	// ForecastLookback is how far before To the forecast starts, so that
	// the open deadlines already overdue show.
	ForecastLookback = 10 * time.Minute
	// MaxForecast is the longest Forecast: with the lookback, the longest
	// window chstore.Store.Forecast takes is 31 days.
	MaxForecast = 30 * 24 * time.Hour
)

// Options say what a report covers. Zero fields take the defaults named on
// them.
type Options struct {
	// From and To are the window [From, To) of close times; required.
	From, To time.Time
	// LateThreshold: a final attempt later than this is late; default
	// DefaultLateThreshold (1s).
	LateThreshold time.Duration
	// Limit bounds the list of late or failed attempts; default
	// DefaultLimit (20); a negative Limit lists none.
	Limit int
	// Bucket is the timeline's bucket size; default AutoBucket(To-From).
	Bucket time.Duration
	// Now is the report's generation time; default time.Now().
	Now time.Time
	// Forecast is how far past To the forecast of open deadlines due per
	// minute reaches; it starts ForecastLookback before To. Default
	// DefaultForecast (6h); a negative Forecast leaves the forecast out; at
	// most MaxForecast.
	Forecast time.Duration
}

// bucketSteps are the bucket sizes AutoBucket chooses from.
var bucketSteps = []time.Duration{
	time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
	time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute,
	time.Hour, 2 * time.Hour, 3 * time.Hour, 6 * time.Hour, 12 * time.Hour, 24 * time.Hour,
}

// AutoBucket returns the smallest of 1s, 2s, 5s, 10s, 15s, 30s, 1m, 2m, 5m,
// 10m, 15m, 30m, 1h, 2h, 3h, 6h, 12h and 24h that cuts window into at most
// MaxBuckets buckets (one minute for an hour), or whole days beyond.
func AutoBucket(window time.Duration) time.Duration {
	for _, s := range bucketSteps {
		if window <= s*MaxBuckets {
			return s
		}
	}
	day := 24 * time.Hour
	return (window/MaxBuckets + day - 1) / day * day
}

// Report is what happened to the close attempts of a window. Its JSON field
// names are stable. Every count takes each attempt once, however often it
// was recorded (see package chstore); lateness values are milliseconds.
type Report struct {
	Generated       time.Time `json:"generated"`
	From            time.Time `json:"from"`
	To              time.Time `json:"to"`
	Database        string    `json:"database"`
	LateThresholdMs int64     `json:"late_threshold_ms"`
	BucketMs        int64     `json:"bucket_ms"`
	Limit           int       `json:"limit"`
	Summary         Summary   `json:"summary"`
	// Outcomes are the attempts by outcome, all kinds together, in the
	// order of outcome.All, then any other outcome, sorted.
	Outcomes []OutcomeCount `json:"outcomes"`
	// Counts are the attempts by kind and outcome.
	Counts []Count `json:"counts"`
	// Lateness are the lateness quantiles of final attempts by the first
	// tier of their path and kind.
	Lateness []Lateness `json:"lateness"`
	// Late are the latest attempts, newest first, that failed or whose
	// final outcome came later than the threshold.
	Late []Attempt `json:"late"`
	// Timeline is the lateness of final attempts per bucket.
	Timeline []Bucket `json:"timeline"`
	// Forecast are the open deadlines due around and after To; nil when
	// Options.Forecast left it out.
	Forecast *Forecast `json:"forecast,omitempty"`
}

// Forecast are the deadlines due per minute in [From, To) that are still
// open: no outcome ended them and no cancellation covers them (see
// chstore.Store.Forecast). From is ForecastLookback before the report's
// To, so the deadlines already overdue are counted too.
type Forecast struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Total counts every open deadline of the window.
	Total int64 `json:"total"`
	// Overdue counts those due in the whole minutes before the report's To.
	Overdue int64 `json:"overdue"`
	// Peak is the minute with the most deadlines due, the earliest of
	// equals; zero when none is due.
	Peak Minute `json:"peak"`
	// Minutes are the deadlines due per minute, all kinds and targets
	// together, leaving out the minutes without any.
	Minutes []Minute `json:"minutes"`
	// ByKind and ByTarget are the totals of each kind and target ("" is
	// the router's default), most first.
	ByKind   []DueCount `json:"by_kind"`
	ByTarget []DueCount `json:"by_target"`
	// Due are the deadlines due per minute, kind and target.
	Due []Due `json:"due"`
}

// Minute is how many deadlines fall due in the minute that starts at Start.
type Minute struct {
	Start time.Time `json:"start"`
	Count int64     `json:"count"`
}

// DueCount is how many deadlines of one kind or target fall due in the
// forecast's window.
type DueCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// Due is how many deadlines of one kind and target fall due in one minute.
type Due struct {
	Minute time.Time `json:"minute"`
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Count  int64     `json:"count"`
}

// Summary are the totals of the window.
type Summary struct {
	Attempts int64 `json:"attempts"`
	Tasks    int64 `json:"tasks"`
	// Final counts the attempts with a final outcome (closed,
	// already_closed, skipped, not_found, moved).
	Final   int64 `json:"final"`
	Retried int64 `json:"retried"`
	Failed  int64 `json:"failed"`
	// Late counts the final attempts later than the threshold.
	Late int64 `json:"late"`
	// DuplicateRows are rows ignored as replays (until merges remove
	// them).
	DuplicateRows int64 `json:"duplicate_rows"`
	// Lateness is over every final attempt.
	Lateness Quantiles `json:"lateness"`
}

// Quantiles are lateness statistics in milliseconds.
type Quantiles struct {
	Count int64 `json:"count"`
	P50   int64 `json:"p50_ms"`
	P90   int64 `json:"p90_ms"`
	P99   int64 `json:"p99_ms"`
	P999  int64 `json:"p999_ms"`
	Max   int64 `json:"max_ms"`
}

// OutcomeCount is the number of attempts with one outcome.
type OutcomeCount struct {
	Outcome  outcome.Outcome `json:"outcome"`
	Attempts int64           `json:"attempts"`
}

// Count is the number of attempts of one kind with one outcome.
type Count struct {
	Kind          string          `json:"kind"`
	Outcome       outcome.Outcome `json:"outcome"`
	Attempts      int64           `json:"attempts"`
	DuplicateRows int64           `json:"duplicate_rows"`
}

// Lateness are the quantiles of one first tier and kind.
type Lateness struct {
	Tier string `json:"tier"`
	Kind string `json:"kind"`
	Quantiles
}

// Attempt is one late or failed close attempt.
type Attempt struct {
	TaskID     string          `json:"task_id"`
	Kind       string          `json:"kind"`
	Outcome    outcome.Outcome `json:"outcome"`
	Detail     string          `json:"detail,omitempty"`
	Error      string          `json:"error,omitempty"`
	Attempt    int             `json:"attempt"`
	Path       string          `json:"path"`
	Due        time.Time       `json:"due"`
	Closed     time.Time       `json:"closed"`
	LatenessMs int64           `json:"lateness_ms"`
	Instance   string          `json:"instance"`
	Topic      string          `json:"topic"`
	Partition  int32           `json:"partition"`
	Offset     int64           `json:"offset"`
}

// Bucket is the lateness of the final attempts that closed in [Start,
// Start+bucket).
type Bucket struct {
	Start   time.Time `json:"start"`
	Count   int64     `json:"count"`
	P50     int64     `json:"p50_ms"`
	P99     int64     `json:"p99_ms"`
	Max     int64     `json:"max_ms"`
	Failed  int64     `json:"failed"`
	Retried int64     `json:"retried"`
}

// Build queries store for the report of o's window.
func Build(ctx context.Context, store *chstore.Store, o Options) (*Report, error) {
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	r := &Report{
		Generated: o.Now.UTC(), From: o.From.UTC(), To: o.To.UTC(), Database: store.Config().Database,
		LateThresholdMs: o.LateThreshold.Milliseconds(), BucketMs: o.Bucket.Milliseconds(), Limit: o.Limit,
		Outcomes: []OutcomeCount{}, Counts: []Count{}, Lateness: []Lateness{}, Late: []Attempt{}, Timeline: []Bucket{},
	}
	v, err := store.View(ctx, chstore.Window{From: o.From, To: o.To})
	if err != nil {
		return nil, err
	}
	// Totals first: it sets the Summary that counts adds to.
	for _, add := range []func(context.Context, *chstore.View, Options) error{
		r.addTotals, r.addCounts, r.addLateness, r.addLate, r.addTimeline,
	} {
		if err := add(ctx, v, o); err != nil {
			return nil, err
		}
	}
	if o.Forecast > 0 {
		from, to := o.To.Add(-ForecastLookback), o.To.Add(o.Forecast)
		due, err := store.Forecast(ctx, from, to)
		if err != nil {
			return nil, err
		}
		r.Forecast = newForecast(from, to, o.To, due)
	}
	return r, nil
}

// resolve returns o with its defaults applied, or why it cannot be built.
func (o Options) resolve() (Options, error) {
	if o.LateThreshold == 0 {
		o.LateThreshold = DefaultLateThreshold
	}
	if o.Limit == 0 {
		o.Limit = DefaultLimit
	}
	if o.Now.IsZero() {
		o.Now = time.Now()
	}
	if o.Forecast == 0 {
		o.Forecast = DefaultForecast
	}
	switch {
	case o.Forecast > MaxForecast:
		return o, fmt.Errorf("report: forecast of %v is longer than %v", o.Forecast, MaxForecast)
	case !o.From.Before(o.To):
		return o, fmt.Errorf("report: window [%s, %s) is empty", o.From.Format(time.RFC3339), o.To.Format(time.RFC3339))
	case o.LateThreshold < 0:
		return o, errors.New("report: negative late threshold")
	}
	if o.Limit < 0 {
		o.Limit = 0
	}
	if o.Bucket <= 0 {
		o.Bucket = AutoBucket(o.To.Sub(o.From))
	}
	return o, nil
}

// addTotals sets the Summary's totals.
func (r *Report) addTotals(ctx context.Context, v *chstore.View, o Options) error {
	totals, err := v.Totals(ctx, o.LateThreshold)
	if err != nil {
		return err
	}
	r.Summary = Summary{Attempts: totals.Attempts, Tasks: totals.Tasks, Failed: totals.Failed, Late: totals.Late, DuplicateRows: totals.Duplicates}
	return nil
}

// addCounts sets Counts and Outcomes and adds the final and retried
// attempts to the Summary.
func (r *Report) addCounts(ctx context.Context, v *chstore.View, _ Options) error {
	counts, err := v.Counts(ctx)
	if err != nil {
		return err
	}
	byOutcome := map[outcome.Outcome]int64{}
	for _, c := range counts {
		r.Counts = append(r.Counts, Count{Kind: c.Kind, Outcome: c.Outcome, Attempts: c.Attempts, DuplicateRows: c.Duplicates})
		byOutcome[c.Outcome] += c.Attempts
		switch {
		case c.Outcome.Final():
			r.Summary.Final += c.Attempts
		case c.Outcome == outcome.Retry:
			r.Summary.Retried += c.Attempts
		}
	}
	r.Outcomes = orderOutcomes(byOutcome)
	return nil
}

// addLateness sets the overall lateness quantiles and those per tier and
// kind.
func (r *Report) addLateness(ctx context.Context, v *chstore.View, _ Options) error {
	overall, err := v.Overall(ctx)
	if err != nil {
		return err
	}
	r.Summary.Lateness = quantiles(overall)
	lat, err := v.Lateness(ctx)
	if err != nil {
		return err
	}
	for _, l := range lat {
		r.Lateness = append(r.Lateness, Lateness{Tier: l.Tier, Kind: l.Kind, Quantiles: quantiles(l)})
	}
	return nil
}

// addLate lists the late or failed attempts, at most o.Limit.
func (r *Report) addLate(ctx context.Context, v *chstore.View, o Options) error {
	late, err := v.Late(ctx, o.LateThreshold, o.Limit)
	if err != nil {
		return err
	}
	for _, a := range late {
		r.Late = append(r.Late, Attempt{
			TaskID: a.TaskID, Kind: a.Kind, Outcome: a.Outcome, Detail: a.Detail, Error: a.Error, Attempt: a.Attempt,
			Path: a.Path, Due: msTime(a.DueMs), Closed: msTime(a.ClosedMs), LatenessMs: a.LatenessMs,
			Instance: a.Instance, Topic: a.Topic, Partition: a.Partition, Offset: a.Offset,
		})
	}
	return nil
}

// addTimeline sets the Timeline in buckets of o.Bucket.
func (r *Report) addTimeline(ctx context.Context, v *chstore.View, o Options) error {
	buckets, err := v.Timeline(ctx, o.Bucket)
	if err != nil {
		return err
	}
	for _, b := range buckets {
		r.Timeline = append(r.Timeline, Bucket{Start: b.Start.UTC(), Count: b.Count, P50: b.P50, P99: b.P99, Max: b.Max, Failed: b.Failed, Retried: b.Retries})
	}
	return nil
}

func quantiles(l chstore.Lateness) Quantiles {
	return Quantiles{Count: l.Count, P50: l.P50, P90: l.P90, P99: l.P99, P999: l.P999, Max: l.Max}
}

// msTime returns unix milliseconds ms as a UTC time, or the zero time
// (unknown) for 0 and for a time outside the years 0 to 9999, which JSON
// cannot write (only a hostile event has one).
func msTime(ms int64) time.Time {
	t := time.UnixMilli(ms).UTC()
	if ms == 0 || t.Year() < 0 || t.Year() > 9999 {
		return time.Time{}
	}
	return t
}

// orderOutcomes lists counts in the order of outcome.All, then any other
// outcome sorted, leaving out the known outcomes without attempts.
func orderOutcomes(counts map[outcome.Outcome]int64) []OutcomeCount {
	out := []OutcomeCount{}
	known := map[outcome.Outcome]bool{}
	for _, o := range outcome.All {
		known[o] = true
		if n := counts[o]; n > 0 {
			out = append(out, OutcomeCount{o, n})
		}
	}
	var others []outcome.Outcome
	for o := range counts {
		if !known[o] {
			others = append(others, o)
		}
	}
	slices.Sort(others)
	for _, o := range others {
		out = append(out, OutcomeCount{o, counts[o]})
	}
	return out
}
