package benchcmd

import (
	"io"
	"strings"
	"testing"
	"time"
)

func TestCheckLoopback(t *testing.T) {
	for _, tc := range []struct {
		driver, dsn string
		want        string // in the error; "" for none
	}{
		{closerPostgres, defaultDSN[closerPostgres], ""},
		{closerPostgres, "postgres://u@localhost:5432/db", ""},
		{closerPostgres, "postgres://u@[::1]:5432/db", ""},
		{closerPostgres, "host=127.0.0.1 user=u dbname=db", ""},
		{closerPostgres, "postgres://u@10.0.0.1/db", `host "10.0.0.1" is not a loopback address`},
		{closerPostgres, "postgres://u@127.0.0.1,db.example/db", `host "db.example"`},
		{closerMySQL, defaultDSN[closerMySQL], ""},
		{closerMySQL, "root@tcp(localhost:3306)/test", ""},
		{closerMySQL, "root@tcp(db.example:3306)/test", `host "db.example" is not a loopback address`},
		{closerMySQL, "root@unix(/run/mysqld.sock)/test", `network "unix"`},
	} {
		err := checkLoopback(tc.driver, tc.dsn)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %q: %v", tc.driver, tc.dsn, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s %q: error %v, want one with %q", tc.driver, tc.dsn, err, tc.want)
		}
	}
}

func TestParseBurst(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // in the error; "" for none
	}{
		{[]string{"--burst", "1000"}, ""},
		{[]string{"--burst", "1000", "--closer", "postgres"}, ""},
		{[]string{"--burst", "1000", "--closer", "oracle"}, `"oracle": want log, postgres or mysql`},
		{[]string{"--burst", "1000", "--closer", "mysql", "--dsn", "root@tcp(10.1.2.3:3306)/x"}, "not a loopback address"},
		{[]string{"--burst", "1000", "--kill", "router"}, "the burst mode takes neither"},
		{[]string{"--burst", "-1"}, "--burst"},
		{[]string{"--keep-table"}, "--keep-table"},
		{[]string{"--pending-steps", "10,20", "--closer", "postgres"}, "memory mode"},
		{[]string{"--big-batches", "100"}, ""},
		{[]string{"--big-batches", "-1"}, "--big-batches"},
		{[]string{"--burst", "1000", "--big-batches", "3"}, "the burst mode takes neither"},
		{[]string{"--pending-steps", "10,20", "--big-batches", "3"}, "memory mode"},
	} {
		c, err := parseBench(tc.args, io.Discard)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%q: error %v, want one with %q", tc.args, err, tc.want)
		case tc.want == "" && c.closer == closerPostgres && c.dsn != defaultDSN[closerPostgres]:
			t.Errorf("%q: dsn %q, want the default", tc.args, c.dsn)
		}
	}
}

func TestBurstLeadFor(t *testing.T) {
	if got := burstLeadFor(1_000_000); got != 25*time.Second {
		t.Errorf("burstLeadFor(1,000,000) = %v, want 25s", got)
	}
}
