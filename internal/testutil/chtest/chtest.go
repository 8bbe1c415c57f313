package chtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/hourglass/hourglass/internal/chstore"
)

// Addr is the shared server's native address: HOURGLASS_TEST_CLICKHOUSE_ADDR,
// default 127.0.0.1:9000.
func Addr() string {
	if a := os.Getenv("HOURGLASS_TEST_CLICKHOUSE_ADDR"); a != "" {
		return a
	}
	return chstore.DefaultAddr
}

// prefix is the database name prefix of this test process; pingErr is
// why the shared server did not answer.
var (
	prefixOnce sync.Once
	prefix     string
	pingErr    error
)

// seq numbers the databases of this process.
var seq atomic.Int64

// setPrefix names this process's databases after name, once, and checks
// that the shared server answers.
func setPrefix(name string) {
	prefixOnce.Do(func() {
		var b [4]byte
		rand.Read(b[:])
		prefix = fmt.Sprintf("hourglass_test_%s_%s", name, hex.EncodeToString(b[:]))
		pingErr = ping()
	})
}

// unreachable is the message of a shared server that does not answer.
func unreachable(err error) string {
	return fmt.Sprintf("ClickHouse does not answer on %s (%v): run scripts/deps.sh (it runs scripts/clickhouse.sh)", Addr(), err)
}

// Main is a TestMain: it checks that the shared server answers (exiting 1
// with a message to run scripts/deps.sh if not), calls setup (which may
// start more, such as kfake, and returns how to stop it), runs the tests,
// drops every database the tests created and checks for leaked goroutines.
// It does not return. name names the package in database names. Tests of a
// package without it may still use Config and Open: their databases are
// dropped when each test ends.
func Main(m *testing.M, name string, setup func() (teardown func())) {
	setPrefix(name)
	if pingErr != nil {
		fmt.Fprintln(os.Stderr, "chtest:", unreachable(pingErr))
		os.Exit(1)
	}
	teardown := func() {}
	if setup != nil {
		teardown = setup()
	}
	code := m.Run()
	teardown()
	if err := dropAll(); err != nil {
		fmt.Fprintln(os.Stderr, "chtest:", err)
		code = 1
	}
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "chtest: goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}

func ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := chstore.Open(ctx, chstore.Config{Addr: Addr(), Database: "default"})
	if err != nil {
		return err
	}
	return s.Close()
}

// dropAll drops the databases of this process.
func dropAll() error {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := chstore.Open(ctx, chstore.Config{Addr: Addr(), Database: "default"})
	if err != nil {
		return fmt.Errorf("drop test databases: %w", err)
	}
	defer s.Close()
	rows, err := s.Conn().Query(ctx, "SELECT name FROM system.databases WHERE startsWith(name, '"+prefix+"')")
	if err != nil {
		return fmt.Errorf("drop test databases: %w", err)
	}
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		names = append(names, n)
	}
	rows.Close()
	for _, n := range names {
		if err := s.Conn().Exec(ctx, "DROP DATABASE IF EXISTS `"+n+"`"); err != nil {
			return fmt.Errorf("drop database %s: %w", n, err)
		}
	}
	return nil
}

// Config returns a configuration of the shared server with a new, unique
// database name (not created: Migrate creates it). The database is dropped
// when t ends. It needs Main.
func Config(t testing.TB) chstore.Config {
	t.Helper()
	setPrefix("pkg")
	if pingErr != nil {
		t.Fatal("chtest: " + unreachable(pingErr))
	}
	name := fmt.Sprintf("%s_%d", prefix, seq.Add(1))
	cfg := chstore.Config{Addr: Addr(), Database: name}.WithDefaults()
	t.Cleanup(func() { Drop(t, cfg) })
	return cfg
}

// Open returns a store of a new, unique, migrated database on the shared
// server (see Config), closed when t ends.
func Open(t testing.TB, opts ...chstore.Option) *chstore.Store {
	t.Helper()
	return OpenConfig(t, Config(t), opts...)
}

// OpenConfig opens and migrates cfg's database; the store is closed when t
// ends.
func OpenConfig(t testing.TB, cfg chstore.Config, opts ...chstore.Option) *chstore.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := chstore.Open(ctx, cfg, opts...)
	if err != nil {
		t.Fatalf("chtest: %v: run scripts/deps.sh", err)
	}
	t.Cleanup(func() { s.Close() })
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatalf("chtest: %v", err)
	}
	return s
}

// Drop drops cfg's database.
func Drop(t testing.TB, cfg chstore.Config) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := chstore.Open(ctx, chstore.Config{Addr: cfg.Addr, Database: "default"})
	if err != nil {
		t.Errorf("chtest: drop %s: %v", cfg.Database, err)
		return
	}
	defer s.Close()
	if !strings.HasPrefix(cfg.Database, "hourglass_test_") {
		t.Errorf("chtest: refusing to drop %s: not a test database", cfg.Database)
		return
	}
	if err := s.Conn().Exec(ctx, "DROP DATABASE IF EXISTS `"+cfg.Database+"`"); err != nil {
		t.Errorf("chtest: drop %s: %v", cfg.Database, err)
	}
}
