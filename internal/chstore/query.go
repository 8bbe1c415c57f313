package chstore

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
)

// FinalOutcomes are the outcomes that end a task with a close that needs
// nothing more (outcome.Outcome.Final): closed, already_closed, skipped,
// not_found and moved. Lateness statistics cover these.
var FinalOutcomes = slices.DeleteFunc(slices.Clone(outcome.All), func(o outcome.Outcome) bool { return !o.Final() })

// Window is a time range [From, To) of close times (closed_ms).
type Window struct {
	From, To time.Time
}

func (w Window) ms() (from, to int64) { return w.From.UnixMilli(), w.To.UnixMilli() }

func (w Window) check() error {
	if !w.From.Before(w.To) {
		return fmt.Errorf("window [%s, %s) is empty", w.From.Format(time.RFC3339), w.To.Format(time.RFC3339))
	}
	return nil
}

// dedupColumns are the columns of an attempt in the deduplicated view, each
// taken from the attempt's first row (smallest closed_ms).
var dedupColumns = []string{
	"task_id", "kind", "outcome", "detail", "error", "attempt", "hops", "path",
	"scheduled_ms", "due_ms", "deadline_ms", "forwarded_ms", "lateness_ms", "instance",
}

// maxRanges bounds the key ranges a View names in its SQL, and
// maxRangesBytes their length (their topics come from events, which a
// hostile record may make as long as it likes, and ClickHouse refuses a
// query over max_query_size, 256 KiB by default); beyond either, it looks
// the keys up with IN (slower, as exact). Variables for tests.
var maxRanges, maxRangesBytes = 1000, 64 << 10

// View is the close attempts of a window, deduplicated: one per (topic,
// partition, offset) of its cancel record, whose first row (smallest
// closed_ms) closed in the window, with the columns of that row. Rows of
// the same attempt outside the window are looked at too, so that a replay
// landing in the window of an attempt first closed before it does not
// count, whatever the merges did. Get one with Store.View; its queries
// share one look-up of the window's keys.
type View struct {
	s   *Store
	w   Window
	sub string // the subquery of the attempts
}

// View looks up the keys of w's rows: per (topic, partition) of the cancel
// records, the range of their offsets. Every row of every attempt that may
// count in w has a key in those ranges, which the primary key (topic,
// partition, offset) finds without reading the rest of the table.
func (s *Store) View(ctx context.Context, w Window) (*View, error) {
	if err := w.check(); err != nil {
		return nil, err
	}
	from, to := w.ms()
	t := s.table(OutcomesTable)
	// day prunes partitions: it is closed_ms's UTC date.
	inWindow := fmt.Sprintf("closed_ms >= %d AND closed_ms < %d AND day >= %s AND day <= %s", from, to, utcDate(from), utcDate(to))
	q := "SELECT topic, `partition`, min(`offset`), max(`offset`) FROM " + t + " WHERE " + inWindow +
		" GROUP BY topic, `partition` ORDER BY topic, `partition`"
	var ranges []string
	size := 0
	err := s.query(ctx, "key ranges", q, func(scan func(...any) error) error {
		var topic string
		var partition int32
		var lo, hi int64
		if err := scan(&topic, &partition, &lo, &hi); err != nil {
			return err
		}
		ranges = append(ranges, fmt.Sprintf("(topic = %s AND `partition` = %d AND `offset` >= %d AND `offset` <= %d)", quote(topic), partition, lo, hi))
		size += len(ranges[len(ranges)-1]) + len(" OR ")
		return nil
	})
	if err != nil {
		return nil, err
	}
	var keys string
	switch {
	case len(ranges) == 0:
		keys = "0"
	case len(ranges) <= maxRanges && size <= maxRangesBytes:
		keys = strings.Join(ranges, " OR ")
	default:
		keys = "(topic, `partition`, `offset`) IN (SELECT topic, `partition`, `offset` FROM " + t + " WHERE " + inWindow + ")"
	}
	var b strings.Builder
	b.WriteString("SELECT topic, `partition`, `offset`, d_closed_ms AS closed_ms, d_copies AS copies")
	for _, c := range dedupColumns {
		fmt.Fprintf(&b, ", d_%s AS %s", c, c)
	}
	b.WriteString(" FROM (SELECT topic, `partition`, `offset`, min(closed_ms) AS d_closed_ms, toInt64(count()) AS d_copies")
	for _, c := range dedupColumns {
		fmt.Fprintf(&b, ", argMin(%s, closed_ms) AS d_%s", c, c)
	}
	fmt.Fprintf(&b, " FROM %s WHERE %s GROUP BY topic, `partition`, `offset` HAVING d_closed_ms >= %d AND d_closed_ms < %d)", t, keys, from, to)
	return &View{s: s, w: w, sub: b.String()}, nil
}

// Window returns v's window.
func (v *View) Window() Window { return v.w }

// utcDate is the SQL of the UTC date of unix milliseconds ms, as the day
// column computes it.
func utcDate(ms int64) string {
	return fmt.Sprintf("toDate(toDateTime(%d, 'UTC'))", ms/1000)
}

// finalIn is the SQL condition "outcome is final".
func finalIn() string {
	q := make([]string, len(FinalOutcomes))
	for i, o := range FinalOutcomes {
		q[i] = quote(string(o))
	}
	return "outcome IN (" + strings.Join(q, ", ") + ")"
}

// Count is the number of attempts of one kind with one outcome.
type Count struct {
	Kind    string
	Outcome outcome.Outcome
	// Attempts counts each attempt once.
	Attempts int64
	// Duplicates are the extra rows of those attempts, which the count
	// ignores: replays after a canceller or recorder crash that merges
	// have not removed yet.
	Duplicates int64
}

// Counts returns the attempts by kind and outcome, each attempt counted
// once, ordered by kind and outcome.
func (v *View) Counts(ctx context.Context) ([]Count, error) {
	q := "SELECT kind, outcome, toInt64(count()), toInt64(sum(copies - 1)) FROM (" + v.sub +
		") GROUP BY kind, outcome ORDER BY kind, outcome"
	var out []Count
	err := v.s.query(ctx, "counts", q, func(scan func(...any) error) error {
		var c Count
		var o string // the driver scans into a string, not a named string type
		if err := scan(&c.Kind, &o, &c.Attempts, &c.Duplicates); err != nil {
			return err
		}
		c.Outcome = outcome.Outcome(o)
		out = append(out, c)
		return nil
	})
	return out, err
}

// Totals summarize the attempts that closed in a window.
type Totals struct {
	// Attempts counts each close attempt once.
	Attempts int64
	// Tasks counts distinct task ids.
	Tasks int64
	// Duplicates are rows ignored as replays of an attempt (until merges
	// remove them).
	Duplicates int64
	// Late counts the attempts with a final outcome later than the
	// threshold given to Totals.
	Late int64
	// Failed counts the attempts with outcome failed.
	Failed int64
}

// Totals returns the totals of the window; attempts with a final outcome
// and lateness_ms above lateThreshold count as late.
func (v *View) Totals(ctx context.Context, lateThreshold time.Duration) (Totals, error) {
	q := fmt.Sprintf("SELECT toInt64(count()), toInt64(uniqExact(task_id)), toInt64(sum(copies - 1)),"+
		" toInt64(countIf(%s AND lateness_ms > %d)), toInt64(countIf(outcome = %s)) FROM (%s)",
		finalIn(), lateThreshold.Milliseconds(), quote(string(outcome.Failed)), v.sub)
	var t Totals
	err := v.s.query(ctx, "totals", q, func(scan func(...any) error) error {
		return scan(&t.Attempts, &t.Tasks, &t.Duplicates, &t.Late, &t.Failed)
	})
	return t, err
}

// Lateness are the lateness statistics, in milliseconds, of the attempts
// with a final outcome of one first tier and kind.
type Lateness struct {
	// Tier is the first tier of the attempt's path ("30m" for
	// "30m*2,5m,1m"); "" when the path is empty.
	Tier  string
	Kind  string
	Count int64
	// P50 to P999 are exact quantiles (ClickHouse quantilesExact).
	P50, P90, P99, P999, Max int64
}

// firstTier is the SQL of the first tier of path: up to the first ',' (the
// router's separator), '>' or '*' (a repeat count).
const firstTier = "extract(path, '^[^,>*]*')"

// Lateness returns lateness quantiles of the final attempts by first tier
// and kind, ordered by tier and kind.
func (v *View) Lateness(ctx context.Context) ([]Lateness, error) {
	return v.lateness(ctx, firstTier+" AS tier, kind", " GROUP BY tier, kind ORDER BY tier, kind")
}

// Overall returns the lateness quantiles of every final attempt, with Tier
// and Kind empty; Count 0 when there is none.
func (v *View) Overall(ctx context.Context) (Lateness, error) {
	l, err := v.lateness(ctx, "'' AS tier, '' AS kind", "")
	if err != nil || len(l) == 0 || l[0].Count == 0 {
		return Lateness{}, err
	}
	return l[0], nil
}

func (v *View) lateness(ctx context.Context, keys, group string) ([]Lateness, error) {
	q := fmt.Sprintf("SELECT %s, toInt64(count()), quantilesExact(0.5, 0.9, 0.99, 0.999)(lateness_ms), max(lateness_ms)"+
		" FROM (%s) WHERE %s%s", keys, v.sub, finalIn(), group)
	var out []Lateness
	err := v.s.query(ctx, "lateness", q, func(scan func(...any) error) error {
		var l Lateness
		var qs []int64
		if err := scan(&l.Tier, &l.Kind, &l.Count, &qs, &l.Max); err != nil {
			return err
		}
		if len(qs) != 4 {
			return fmt.Errorf("%d quantiles, want 4", len(qs))
		}
		l.P50, l.P90, l.P99, l.P999 = qs[0], qs[1], qs[2], qs[3]
		out = append(out, l)
		return nil
	})
	return out, err
}

// Attempt is one close attempt as recorded: its first row.
type Attempt struct {
	outcome.Event
	// Copies is how many rows the attempt has (1 without replays).
	Copies int64
}

// Late returns up to limit attempts, newest first, that either failed or
// have a final outcome and lateness_ms above threshold.
func (v *View) Late(ctx context.Context, threshold time.Duration, limit int) ([]Attempt, error) {
	if limit <= 0 {
		return nil, nil
	}
	q := fmt.Sprintf("SELECT task_id, kind, outcome, detail, error, attempt, hops, path, scheduled_ms, due_ms, deadline_ms,"+
		" forwarded_ms, closed_ms, lateness_ms, instance, topic, `partition`, `offset`, copies FROM (%s)"+
		" WHERE (%s AND lateness_ms > %d) OR outcome = %s ORDER BY closed_ms DESC, topic, `partition`, `offset` LIMIT %d",
		v.sub, finalIn(), threshold.Milliseconds(), quote(string(outcome.Failed)), limit)
	return v.s.attempts(ctx, "late attempts", q)
}

// attempts runs q, whose columns are an Attempt's (the event's fields in
// order, then the copies), and returns its rows.
func (s *Store) attempts(ctx context.Context, what, q string) ([]Attempt, error) {
	var out []Attempt
	err := s.query(ctx, what, q, func(scan func(...any) error) error {
		var a Attempt
		var attempt, hops int32
		var o string // the driver scans into a string, not a named string type
		e := &a.Event
		if err := scan(&e.TaskID, &e.Kind, &o, &e.Detail, &e.Error, &attempt, &hops, &e.Path,
			&e.ScheduledMs, &e.DueMs, &e.DeadlineMs, &e.ForwardedMs, &e.ClosedMs, &e.LatenessMs,
			&e.Instance, &e.Topic, &e.Partition, &e.Offset, &a.Copies); err != nil {
			return err
		}
		e.V, e.Outcome, e.Attempt, e.Hops = outcome.Version, outcome.Outcome(o), int(attempt), int(hops)
		out = append(out, a)
		return nil
	})
	return out, err
}

// Bucket is the lateness, in milliseconds, of the final attempts that
// closed in [Start, Start+bucket).
type Bucket struct {
	Start         time.Time
	Count         int64
	P50, P99, Max int64
	// Failed and Retries count the attempts of the bucket that failed or
	// were rescheduled; Count and the lateness leave them out.
	Failed, Retries int64
}

// Timeline returns the lateness of the final attempts per bucket (aligned
// to multiples of bucket since the epoch), oldest first. Buckets without
// attempts are left out; a bucket with only retries or failures has Count 0.
func (v *View) Timeline(ctx context.Context, bucket time.Duration) ([]Bucket, error) {
	if bucket < time.Millisecond {
		return nil, fmt.Errorf("timeline: bucket %v is shorter than 1ms", bucket)
	}
	b := bucket.Milliseconds()
	fin := finalIn()
	q := fmt.Sprintf("SELECT intDiv(closed_ms, %d) * %d AS t, toInt64(countIf(%s)),"+
		" quantilesExactIf(0.5, 0.99)(lateness_ms, %s), maxIf(lateness_ms, %s),"+
		" toInt64(countIf(outcome = %s)), toInt64(countIf(outcome = %s))"+
		" FROM (%s) GROUP BY t ORDER BY t", b, b, fin, fin, fin, quote(string(outcome.Failed)), quote(string(outcome.Retry)), v.sub)
	var out []Bucket
	err := v.s.query(ctx, "timeline", q, func(scan func(...any) error) error {
		var k Bucket
		var t int64
		var qs []int64
		if err := scan(&t, &k.Count, &qs, &k.Max, &k.Failed, &k.Retries); err != nil {
			return err
		}
		if len(qs) != 2 {
			return fmt.Errorf("%d quantiles, want 2", len(qs))
		}
		if k.Count == 0 {
			// maxIf and quantilesExactIf of no rows are not lateness.
			qs[0], qs[1], k.Max = 0, 0, 0
		}
		k.Start, k.P50, k.P99 = time.UnixMilli(t).UTC(), qs[0], qs[1]
		out = append(out, k)
		return nil
	})
	return out, err
}

// Counts is View(ctx, w) then Counts.
func (s *Store) Counts(ctx context.Context, w Window) ([]Count, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return nil, err
	}
	return v.Counts(ctx)
}

// Totals is View(ctx, w) then Totals.
func (s *Store) Totals(ctx context.Context, w Window, lateThreshold time.Duration) (Totals, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return Totals{}, err
	}
	return v.Totals(ctx, lateThreshold)
}

// Lateness is View(ctx, w) then Lateness.
func (s *Store) Lateness(ctx context.Context, w Window) ([]Lateness, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return nil, err
	}
	return v.Lateness(ctx)
}

// Overall is View(ctx, w) then Overall.
func (s *Store) Overall(ctx context.Context, w Window) (Lateness, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return Lateness{}, err
	}
	return v.Overall(ctx)
}

// Late is View(ctx, w) then Late.
func (s *Store) Late(ctx context.Context, w Window, threshold time.Duration, limit int) ([]Attempt, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return nil, err
	}
	return v.Late(ctx, threshold, limit)
}

// Timeline is View(ctx, w) then Timeline.
func (s *Store) Timeline(ctx context.Context, w Window, bucket time.Duration) ([]Bucket, error) {
	v, err := s.View(ctx, w)
	if err != nil {
		return nil, err
	}
	return v.Timeline(ctx, bucket)
}

// query runs q and calls row for each result row.
func (s *Store) query(ctx context.Context, what, q string, row func(scan func(...any) error) error) error {
	rows, err := s.conn.Query(ctx, q)
	if err != nil {
		return fmt.Errorf("query %s in %s: %w", what, s.cfg.Database, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := row(rows.Scan); err != nil {
			return fmt.Errorf("query %s in %s: %w", what, s.cfg.Database, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("query %s in %s: %w", what, s.cfg.Database, err)
	}
	return nil
}
