package chstore_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// open opens cfg's database without migrating it.
func open(t *testing.T, cfg chstore.Config, opts ...chstore.Option) *chstore.Store {
	t.Helper()
	s, err := chstore.Open(ctxT(t), cfg, opts...)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMigrate checks that the schema's migrations are applied once, in
// order, recorded with their time, and that running Migrate again (or from
// two processes at once) changes nothing.
func TestMigrate(t *testing.T) {
	ctx := ctxT(t)
	cfg := chtest.Config(t)
	at := time.Date(2024, 5, 14, 12, 0, 0, 0, time.UTC)
	s := open(t, cfg, chstore.WithClock(clock.NewFake(at)))

	applied, err := s.Migrate(ctx)
	if err != nil {
		t.Fatalf("first migrate: %v", err)
	}
	if want := []uint32{1, 2}; !slices.Equal(applied, want) {
		t.Errorf("first migrate applied %v, want %v", applied, want)
	}
	applied, err = s.Migrate(ctx)
	if err != nil || len(applied) != 0 {
		t.Errorf("second migrate applied %v, %v; want none, nil", applied, err)
	}
	recorded, err := s.Migrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"outcomes table", "deadline index"}
	ok := len(recorded) == len(names) && recorded[len(recorded)-1].Version == chstore.SchemaVersion()
	for i, a := range recorded {
		ok = ok && i < len(names) && a.Version == uint32(i+1) && a.Name == names[i] && a.At.Equal(at)
	}
	if !ok {
		t.Errorf("recorded %+v, want versions 1 and 2 named %q at %v", recorded, names, at)
	}
	for table, want := range map[string][]string{
		chstore.OutcomesTable:       chstore.Columns,
		chstore.OutcomesByTaskTable: chstore.Columns,
		chstore.DeadlinesTable:      append(slices.Clone(chstore.DeadlineColumns), "day"),
		chstore.CancellationsTable:  append(slices.Clone(chstore.CancelColumns), "day"),
		chstore.DeadLettersTable:    append(slices.Clone(chstore.DeadLetterColumns), "day"),
	} {
		var cols []string
		rows, err := s.Conn().Query(ctx, "SELECT name FROM system.columns WHERE database = '"+cfg.Database+"' AND table = '"+table+"'")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		rows.Close()
		if !slices.Equal(cols, want) {
			t.Errorf("columns of %s: %v, want %v", table, cols, want)
		}
	}
}

// TestMigrateConcurrent runs Migrate from two stores at once on a new
// database: both succeed and the version is recorded once.
func TestMigrateConcurrent(t *testing.T) {
	cfg := chtest.Config(t)
	stores := []*chstore.Store{open(t, cfg), open(t, cfg)}
	var wg sync.WaitGroup
	errs := make([]error, len(stores))
	for i, s := range stores {
		wg.Go(func() { _, errs[i] = s.Migrate(ctxT(t)) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("migrate %d: %v", i, err)
		}
	}
	recorded, err := stores[0].Migrations(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(recorded) != 2 || recorded[0].Version != 1 || recorded[1].Version != 2 {
		t.Errorf("recorded %+v, want versions 1 and 2 once each", recorded)
	}
}

// TestMigrateIndexKeepsOutcomes: outcomes recorded before the deadline
// index (schema version 1) are found by task after the upgrade, and those
// recorded after it too.
func TestMigrateIndexKeepsOutcomes(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, chtest.Config(t))
	if _, err := s.MigrateWith(ctx, chstore.Migrations()[:1]); err != nil {
		t.Fatal(err)
	}
	evs := seed()
	if err := s.Insert(ctx, evs[:1]); err != nil { // a1, before the upgrade
		t.Fatal(err)
	}
	if applied, err := s.Migrate(ctx); err != nil || !slices.Equal(applied, []uint32{2}) {
		t.Fatalf("upgrade applied %v, %v; want [2]", applied, err)
	}
	record(t, s, evs[1:2]) // a2, after it
	for _, id := range []string{"a1", "a2"} {
		task, err := s.Task(ctx, id, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(task.Attempts) != 1 || task.Attempts[0].TaskID != id {
			t.Errorf("%s: attempts %+v, want one", id, task.Attempts)
		}
	}
}

// TestMigrateOrderAndOnce runs a history whose second migration is not
// idempotent (it inserts a row) and depends on the first: given out of
// order, they run in order; run again, nothing runs; a new version runs
// alone.
func TestMigrateOrderAndOnce(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, chtest.Config(t))
	history := []chstore.Migration{
		chstore.NewMigration(2, "seed", "INSERT INTO {db}.log (n) SELECT 2"),
		chstore.NewMigration(1, "log table", "CREATE TABLE IF NOT EXISTS {db}.log (n UInt32) ENGINE = MergeTree ORDER BY n"),
	}
	tests := []struct {
		name    string
		history []chstore.Migration
		want    []uint32
		rows    []uint32 // of log afterwards
	}{
		{"fresh", history, []uint32{1, 2}, []uint32{2}},
		{"again", history, nil, []uint32{2}},
		{"new version", append(history, chstore.NewMigration(3, "more", "INSERT INTO {db}.log (n) SELECT 3")), []uint32{3}, []uint32{2, 3}},
	}
	for _, tt := range tests {
		applied, err := s.MigrateWith(ctx, tt.history)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !slices.Equal(applied, tt.want) {
			t.Errorf("%s: applied %v, want %v", tt.name, applied, tt.want)
		}
		var got []uint32
		rows, err := s.Conn().Query(ctx, "SELECT n FROM `"+s.Config().Database+"`.log ORDER BY n")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var n uint32
			if err := rows.Scan(&n); err != nil {
				t.Fatal(err)
			}
			got = append(got, n)
		}
		rows.Close()
		if !slices.Equal(got, tt.rows) {
			t.Errorf("%s: log rows %v, want %v", tt.name, got, tt.rows)
		}
	}
	recorded, err := s.Migrations(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var versions []uint32
	for _, a := range recorded {
		versions = append(versions, a.Version)
	}
	if want := []uint32{1, 2, 3}; !slices.Equal(versions, want) {
		t.Errorf("recorded versions %v, want %v", versions, want)
	}
}

// TestMigrateFailure: a failing migration is not recorded, the ones before
// it are, and the error names the version.
func TestMigrateFailure(t *testing.T) {
	ctx := ctxT(t)
	s := open(t, chtest.Config(t))
	applied, err := s.MigrateWith(ctx, []chstore.Migration{
		chstore.NewMigration(1, "ok", "CREATE TABLE IF NOT EXISTS {db}.a (n UInt32) ENGINE = MergeTree ORDER BY n"),
		chstore.NewMigration(2, "broken", "CREATE TABLE {db}.b (n NoSuchType) ENGINE = MergeTree ORDER BY n"),
	})
	if err == nil || !slices.Equal(applied, []uint32{1}) {
		t.Fatalf("applied %v, err %v; want [1] and an error", applied, err)
	}
	if want := "version 2 (broken)"; !contains(err.Error(), want) {
		t.Errorf("error %q does not name %q", err, want)
	}
	recorded, _ := s.Migrations(ctx)
	if len(recorded) != 1 || recorded[0].Version != 1 {
		t.Errorf("recorded %+v, want version 1 only", recorded)
	}
}
