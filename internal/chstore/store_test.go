package chstore_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/testutil/fieldtest"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func TestConfigValidate(t *testing.T) {
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		cfg  chstore.Config
		want []string // fields named, in order
	}{
		{"defaults", chstore.Config{}, nil},
		{"addr without port", chstore.Config{Addr: "localhost"}, []string{"Addr"}},
		{"addr bad port", chstore.Config{Addr: "localhost:0"}, []string{"Addr"}},
		{"database not an identifier", chstore.Config{Database: "hour glass"}, []string{"Database"}},
		{"database with a backquote", chstore.Config{Database: "a`b"}, []string{"Database"}},
		{"password env unset", chstore.Config{Password: credential.Secret{Env: "HOURGLASS_TEST_NO_SUCH_VAR"}}, []string{"Password"}},
		{"password file empty", chstore.Config{Password: credential.Secret{File: empty}}, []string{"Password.File"}},
		{"cert without key", chstore.Config{TLS: credential.TLS{CertFile: "c.pem"}}, []string{"TLS.CertFile"}},
		{"ca file missing", chstore.Config{TLS: credential.TLS{CAFile: "/nonexistent/ca.pem"}}, []string{"TLS.CAFile"}},
		{"negative dial timeout", chstore.Config{DialTimeout: -time.Second}, []string{"DialTimeout"}},
		{"everything", chstore.Config{Addr: "x", Database: "1", DialTimeout: -1}, []string{"Addr", "Database", "DialTimeout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.cfg.WithDefaults().Validate()
			if got := fieldtest.Fields(err); !slices.Equal(got, tt.want) {
				t.Errorf("fields %v, want %v (errors %v)", got, tt.want, err)
			}
		})
	}
}

// TestOpenUnreachable: a server that does not answer is an error at Open,
// within the dial timeout.
func TestOpenUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	start := time.Now()
	_, err = chstore.Open(ctxT(t), chstore.Config{Addr: addr, DialTimeout: time.Second})
	if err == nil || !contains(err.Error(), addr) {
		t.Errorf("open %s: %v, want an error naming the address", addr, err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("open took %v", d)
	}
}

var t0 = time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)

// ev returns an event closed at t0+at with lateness late (ms), from cancel
// record offset off.
func ev(task, kind, out, path string, at time.Duration, late int64, off int64) outcome.Event {
	closed := t0.Add(at).UnixMilli()
	return outcome.Event{
		V: outcome.Version, TaskID: task, Kind: kind, Outcome: outcome.Outcome(out), Path: path, Attempt: 1, Hops: strings.Count(path, ",") + 1,
		ScheduledMs: closed - 60_000, DueMs: closed - late, DeadlineMs: closed - late, ForwardedMs: closed - late + 1,
		ClosedMs: closed, LatenessMs: late, Instance: "test", Topic: "hourglass.cancel", Partition: int32(off % 3), Offset: off,
	}
}

// seed is a set of attempts around the window [t0, t0+10m) with replays:
// a1 replayed later with another outcome, a2 replayed exactly, e1 first
// closed before the window and replayed inside it.
func seed() []outcome.Event {
	const ot, rem = "order-timeout", "reminder"
	a1 := ev("a1", ot, "closed", "30m*2,5m,1m", time.Minute, 10, 1)
	a1replay := a1
	a1replay.Outcome, a1replay.ClosedMs, a1replay.LatenessMs = "already_closed", t0.Add(5*time.Minute).UnixMilli(), 99_999
	a2 := ev("a2", ot, "closed", "30m*2,5m,1m", 70*time.Second, 20, 2)
	b3 := ev("b2", ot, "failed", "1m", 50*time.Second, 3000, 9)
	b3.Error, b3.Attempt = "boom", 2
	e1 := ev("e1", ot, "closed", "1m", -30*time.Second, 1, 20)
	e1replay := e1
	e1replay.Outcome, e1replay.ClosedMs = "already_closed", t0.Add(2*time.Minute).UnixMilli()
	return []outcome.Event{
		a1, a2, a2,
		ev("a3", ot, "already_closed", "30m*2,5m,1m", 2*time.Minute, 30, 3),
		ev("a4", ot, "skipped", "30m", 3*time.Minute, 40, 4),
		ev("a5", ot, "not_found", "30m,1m", 4*time.Minute, 2000, 5),
		a1replay,
		ev("b1", ot, "closed", "1m", 30*time.Second, 5, 7),
		ev("b2", ot, "retry", "1m", 40*time.Second, 7, 8),
		b3,
		ev("c1", rem, "closed", "5m,1m", 6*time.Minute, 1500, 10),
		ev("d1", ot, "closed", "1m", -time.Minute, 1, 11),
		ev("d2", ot, "closed", "1m", 10*time.Minute, 1, 12),
		e1, e1replay,
	}
}

var window = chstore.Window{From: t0, To: t0.Add(10 * time.Minute)}

// TestQueries inserts the seed (in two batches, as a recorder replay would)
// and checks every query; then it merges the table (OPTIMIZE FINAL) and
// checks that nothing changes and that the merge kept first attempts.
func TestQueries(t *testing.T) {
	ctx := ctxT(t)
	inserted := time.Date(2024, 5, 14, 13, 0, 0, 0, time.UTC)
	s := chtest.Open(t, chstore.WithClock(clock.NewFake(inserted)))
	evs := seed()
	if err := s.Insert(ctx, evs[:5]); err != nil {
		t.Fatal(err)
	}
	if err := s.Insert(ctx, evs[3:]); err != nil { // a3, a4 again
		t.Fatal(err)
	}
	checkQueries(t, s, 1)
	restore := chstore.SetMaxRanges(1) // the seed has 3 partitions: look keys up with IN
	checkQueries(t, s, 1)
	restore()

	if err := s.Conn().Exec(ctx, "OPTIMIZE TABLE `"+s.Config().Database+"`.outcomes FINAL"); err != nil {
		t.Fatal(err)
	}
	checkQueries(t, s, 0) // the merge removed the duplicates
	var outcomes []string
	rows, err := s.Conn().Query(ctx, "SELECT outcome FROM `"+s.Config().Database+"`.outcomes WHERE task_id IN ('a1', 'e1') ORDER BY task_id")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		outcomes = append(outcomes, o)
	}
	rows.Close()
	if want := []string{"closed", "closed"}; !slices.Equal(outcomes, want) {
		t.Errorf("after the merge a1, e1 rows are %v, want %v (the first attempts)", outcomes, want)
	}
	var insertedMs int64
	var day time.Time
	if err := s.Conn().QueryRow(ctx, "SELECT inserted_ms, day FROM `"+s.Config().Database+"`.outcomes WHERE task_id = 'b1'").Scan(&insertedMs, &day); err != nil {
		t.Fatal(err)
	}
	if insertedMs != inserted.UnixMilli() || day.Format(time.DateOnly) != "2024-05-14" {
		t.Errorf("b1 inserted_ms %d day %v, want %d 2024-05-14", insertedMs, day, inserted.UnixMilli())
	}
}

// checkQueries checks the queries on the seed; dup is 1 before the
// duplicates are merged away and 0 after.
func checkQueries(t *testing.T, s *chstore.Store, dup int64) {
	t.Helper()
	ctx := ctxT(t)
	counts, err := s.Counts(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	wantCounts := []chstore.Count{
		{"order-timeout", "already_closed", 1, dup},
		{"order-timeout", "closed", 3, 2 * dup},
		{"order-timeout", "failed", 1, 0},
		{"order-timeout", "not_found", 1, 0},
		{"order-timeout", "retry", 1, 0},
		{"order-timeout", "skipped", 1, dup},
		{"reminder", "closed", 1, 0},
	}
	if !slices.Equal(counts, wantCounts) {
		t.Errorf("counts\n got %+v\nwant %+v", counts, wantCounts)
	}
	totals, err := s.Totals(ctx, window, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if want := (chstore.Totals{Attempts: 9, Tasks: 8, Duplicates: 4 * dup, Late: 2, Failed: 1}); totals != want {
		t.Errorf("totals %+v, want %+v", totals, want)
	}
	lat, err := s.Lateness(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	wantLat := []chstore.Lateness{
		{Tier: "1m", Kind: "order-timeout", Count: 1, P50: 5, P90: 5, P99: 5, P999: 5, Max: 5},
		{Tier: "30m", Kind: "order-timeout", Count: 5, P50: 30, P90: 2000, P99: 2000, P999: 2000, Max: 2000},
		{Tier: "5m", Kind: "reminder", Count: 1, P50: 1500, P90: 1500, P99: 1500, P999: 1500, Max: 1500},
	}
	if !slices.Equal(lat, wantLat) {
		t.Errorf("lateness\n got %+v\nwant %+v", lat, wantLat)
	}
	overall, err := s.Overall(ctx, window)
	if err != nil {
		t.Fatal(err)
	}
	// Final lateness in the window: 5 10 20 30 40 1500 2000.
	if want := (chstore.Lateness{Count: 7, P50: 30, P90: 2000, P99: 2000, P999: 2000, Max: 2000}); overall != want {
		t.Errorf("overall %+v, want %+v", overall, want)
	}
	if none, err := s.Overall(ctx, chstore.Window{From: t0.Add(time.Hour), To: t0.Add(2 * time.Hour)}); err != nil || none != (chstore.Lateness{}) {
		t.Errorf("overall of an empty window %+v, %v; want zero", none, err)
	}
	tests := []struct {
		threshold time.Duration
		limit     int
		want      []string // task ids
	}{
		{time.Second, 20, []string{"c1", "a5", "b2"}},
		{time.Second, 2, []string{"c1", "a5"}},
		{0, 3, []string{"c1", "a5", "a4"}},
		{time.Hour, 20, []string{"b2"}},
		{time.Second, 0, nil},
	}
	for _, tt := range tests {
		late, err := s.Late(ctx, window, tt.threshold, tt.limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, a := range late {
			ids = append(ids, a.TaskID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("late(%v, %d): %v, want %v", tt.threshold, tt.limit, ids, tt.want)
		}
	}
	late, _ := s.Late(ctx, window, time.Hour, 1)
	if len(late) != 1 || late[0].Error != "boom" || late[0].Attempt != 2 || late[0].LatenessMs != 3000 || late[0].Copies != 1 || late[0].Path != "1m" {
		t.Errorf("failed attempt %+v, want b2 attempt 2 with error boom", late)
	}
	buckets, err := s.Timeline(ctx, window, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	m := t0.Add
	wantBuckets := []chstore.Bucket{
		{Start: m(0), Count: 1, P50: 5, P99: 5, Max: 5, Failed: 1, Retries: 1},
		{Start: m(time.Minute), Count: 2, P50: 20, P99: 20, Max: 20},
		{Start: m(2 * time.Minute), Count: 1, P50: 30, P99: 30, Max: 30},
		{Start: m(3 * time.Minute), Count: 1, P50: 40, P99: 40, Max: 40},
		{Start: m(4 * time.Minute), Count: 1, P50: 2000, P99: 2000, Max: 2000},
		{Start: m(6 * time.Minute), Count: 1, P50: 1500, P99: 1500, Max: 1500},
	}
	if !slices.EqualFunc(buckets, wantBuckets, func(a, b chstore.Bucket) bool {
		return a.Start.Equal(b.Start) && a.Count == b.Count && a.P50 == b.P50 && a.P99 == b.P99 && a.Max == b.Max && a.Failed == b.Failed && a.Retries == b.Retries
	}) {
		t.Errorf("timeline\n got %+v\nwant %+v", buckets, wantBuckets)
	}
	// The attempt e1 closed before the window: its replay inside does not
	// count there, and the earlier window counts it once.
	before, err := s.Counts(ctx, chstore.Window{From: t0.Add(-time.Minute), To: t0})
	if err != nil {
		t.Fatal(err)
	}
	if want := []chstore.Count{{"order-timeout", "closed", 2, dup}}; !slices.Equal(before, want) {
		t.Errorf("counts before the window %+v, want %+v", before, want)
	}
}

// TestInsertEmptyAndBadWindow: an empty insert is a no-op and an empty
// window an error.
func TestInsertEmptyAndBadWindow(t *testing.T) {
	s := chtest.Open(t)
	if err := s.Insert(ctxT(t), nil); err != nil {
		t.Errorf("insert nothing: %v", err)
	}
	if _, err := s.Counts(ctxT(t), chstore.Window{From: t0, To: t0}); err == nil {
		t.Error("counts of an empty window: no error")
	}
}

// TestInsertCanceled: an insert with a canceled context fails and inserts
// nothing.
func TestInsertCanceled(t *testing.T) {
	s := chtest.Open(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Insert(ctx, seed()); err == nil {
		t.Fatal("insert with a canceled context: no error")
	}
	c, err := s.Counts(ctxT(t), window)
	if err != nil || len(c) != 0 {
		t.Errorf("counts %v, %v; want none", c, err)
	}
}

// TestHostileTopic: an event whose topic is far longer than a Kafka topic
// name (a hostile record on the outcomes topic; the recorder stores it as
// it is) does not break the queries of its window: the good attempts
// around it are still counted.
func TestHostileTopic(t *testing.T) {
	ctx := ctxT(t)
	s := chtest.Open(t)
	good := ev("good", "order-timeout", "closed", "1m", time.Minute, 5, 1)
	bad := ev("bad", "order-timeout", "closed", "1m", 2*time.Minute, 5, 2)
	bad.Topic = strings.Repeat("t", 300_000) // over ClickHouse's max_query_size (256 KiB)
	if err := s.Insert(ctx, []outcome.Event{good, bad}); err != nil {
		t.Fatal(err)
	}
	totals, err := s.Totals(ctx, window, time.Second)
	if err != nil {
		t.Fatalf("totals: %.300v", err)
	}
	if totals.Attempts != 2 {
		t.Errorf("totals %+v, want 2 attempts", totals)
	}
}
