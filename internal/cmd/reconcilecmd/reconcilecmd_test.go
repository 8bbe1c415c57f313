package reconcilecmd_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/reconcilecmd"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/dbtest"
)

// TestReconcileCommand seeds an order table with a mix of states and ages
// and checks that hourglass reconcile closes exactly the overdue unpaid
// orders, reports them, and finds nothing on a second run.
func TestReconcileCommand(t *testing.T) {
	dsn := dbtest.PostgresDSN(t)
	db := dbtest.Open(t, "postgres", dsn)
	table := dbtest.Table(t, "reconcile_cmd")
	if _, err := db.Exec(`CREATE TABLE ` + table + ` (id bigint PRIMARY KEY, status text NOT NULL,
		created_at timestamptz NOT NULL, closed_at timestamptz)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = db.Exec(`DROP TABLE IF EXISTS ` + table) })
	if _, err := db.Exec(`CREATE INDEX ON ` + table + ` (status, created_at)`); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	seed := []struct {
		id      int
		status  string
		age     time.Duration
		overdue bool
	}{
		{1, "UNPAID", 2 * time.Hour, true},
		{2, "UNPAID", 31 * time.Minute, true},
		{3, "UNPAID", 10 * time.Minute, false}, // not due yet
		{4, "PAID", 2 * time.Hour, false},
		{5, "CLOSED", 2 * time.Hour, false},
		{6, "UNPAID", 24 * time.Hour, true},
		{7, "UNPAID", 29 * time.Minute, false},
	}
	for _, o := range seed {
		if _, err := db.Exec(`INSERT INTO `+table+` (id, status, created_at) VALUES ($1, $2, $3)`, o.id, o.status, now.Add(-o.age)); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "closers.yaml")
	t.Setenv("RECONCILE_TEST_DSN", dsn)
	if err := os.WriteFile(file, []byte(fmt.Sprintf(`closers:
  order-timeout:
    sql:
      driver: postgres
      dsn: {env: RECONCILE_TEST_DSN}
      table: %s
      reconcile: {deadline: 30m, page_size: 2}
`, table)), 0o600); err != nil {
		t.Fatal(err)
	}

	stdout, stderr, err := cmdtest.Run(t, reconcilecmd.Run, "--closers", file, "--grace", "0s", "--dry-run")
	if err != nil || !strings.Contains(stdout, ": 3 found") || !strings.Contains(stdout, "dry run: nothing closed") {
		t.Fatalf("dry run: %v\n%s\n%s", err, stdout, stderr)
	}
	stdout, stderr, err = cmdtest.Run(t, reconcilecmd.Run, "--closers", file, "--grace", "0s", "--format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	var rep struct {
		Scanned  int            `json:"scanned"`
		Outcomes map[string]int `json:"outcomes"`
		Closed   []string       `json:"closed"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Scanned != 3 || rep.Outcomes["closed"] != 3 || len(rep.Closed) != 3 {
		t.Errorf("report %+v, want 3 found and closed", rep)
	}
	if !strings.Contains(stderr, "progress") {
		t.Errorf("no progress on stderr:\n%s", stderr)
	}
	for _, o := range seed {
		var status string
		if err := db.QueryRow(`SELECT status FROM `+table+` WHERE id = $1`, o.id).Scan(&status); err != nil {
			t.Fatal(err)
		}
		want := o.status
		if o.overdue {
			want = "CLOSED"
		}
		if status != want {
			t.Errorf("order %d (%s, %v old): %s, want %s", o.id, o.status, o.age, status, want)
		}
	}
	stdout, _, err = cmdtest.Run(t, reconcilecmd.Run, "--closers", file, "--grace", "0s")
	if err != nil || !strings.Contains(stdout, ": 0 found") {
		t.Errorf("second run: %v\n%s", err, stdout)
	}
}

// TestReconcileBadConfig: reconcile names the flag or the place in the
// closers file that is wrong.
func TestReconcileBadConfig(t *testing.T) {
	dir := t.TempDir()
	noDeadline := filepath.Join(dir, "a.yaml")
	if err := os.WriteFile(noDeadline, []byte("closers:\n  order-timeout:\n    sql: {driver: postgres, dsn: {value: 'postgres://127.0.0.1/x'}}\n  reminder:\n    log: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{nil, []string{"--closers", "required"}},
		{[]string{"--closers", noDeadline}, []string{"--closers", "reconcile.deadline is not set"}},
		{[]string{"--closers", noDeadline, "--kind", "reminder"}, []string{"--kind", "reconcile needs an sql closer"}},
		{[]string{"--closers", noDeadline, "--kind", "gift"}, []string{"--kind", `"gift" is not in`}},
		{[]string{"--closers", noDeadline, "--grace", "-1s", "--format", "xml"}, []string{"--grace", "--format"}},
	} {
		_, _, err := cmdtest.Run(t, reconcilecmd.Run, tc.args...)
		for _, w := range tc.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %v, want %q", tc.args, err, w)
			}
		}
	}
}
