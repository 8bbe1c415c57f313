package chstore

import (
	"context"
	"errors"
	"fmt"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/outcome"
)

// codeUnknownDatabase is ClickHouse's UNKNOWN_DATABASE error code.
const codeUnknownDatabase = 81

// Store is a connection pool to ClickHouse holding Hourglass's tables. It
// is safe for concurrent use. Create one with Open.
type Store struct {
	cfg   Config
	conn  driver.Conn
	db    string // quoted Config.Database, for statements
	clock clock.Clock
}

// Option configures Open.
type Option func(*Store)

// WithClock sets the clock of inserted_ms and of migration records; default
// the wall clock.
func WithClock(c clock.Clock) Option { return func(s *Store) { s.clock = c } }

// Open connects to ClickHouse over the native protocol; cfg is completed
// with WithDefaults and validated. It pings the server: an unreachable
// server is an error. Every statement names its tables with the database,
// so the database need not exist yet (Migrate creates it): when the server
// does not know it, Open connects without one.
func Open(ctx context.Context, cfg Config, opts ...Option) (*Store, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, db: "`" + cfg.Database + "`", clock: clock.Real{}}
	for _, o := range opts {
		o(s)
	}
	conn, err := s.open(ctx, cfg.Database)
	var ex *clickhouse.Exception
	if errors.As(err, &ex) && ex.Code == codeUnknownDatabase {
		conn, err = s.open(ctx, "")
	}
	if err != nil {
		return nil, fmt.Errorf("clickhouse %s: %w", cfg.Addr, err)
	}
	s.conn = conn
	return s, nil
}

func (s *Store) open(ctx context.Context, database string) (driver.Conn, error) {
	password, err := s.cfg.Password.Resolve()
	if err != nil {
		return nil, fmt.Errorf("password: %w", err)
	}
	o := &clickhouse.Options{
		Protocol:    clickhouse.Native,
		Addr:        []string{s.cfg.Addr},
		Auth:        clickhouse.Auth{Database: database, Username: s.cfg.Username, Password: password},
		DialTimeout: s.cfg.DialTimeout,
		ClientInfo:  clickhouse.ClientInfo{Products: []struct{ Name, Version string }{{"hourglass", ""}}},
	}
	if s.cfg.UsesTLS() {
		// Without TLS settings (Secure alone): the system roots, the host
		// dialed as the server name.
		tc, err := s.cfg.TLS.Build()
		if err != nil {
			return nil, err
		}
		o.TLS = tc
	}
	conn, err := clickhouse.Open(o)
	if err != nil {
		return nil, err
	}
	if err := conn.Ping(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

// Close closes the connections.
func (s *Store) Close() error { return s.conn.Close() }

// Ping checks that the server answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.conn.Ping(ctx); err != nil {
		return fmt.Errorf("clickhouse %s: ping: %w", s.cfg.Addr, err)
	}
	return nil
}

// Config returns the configuration the store was opened with, defaults
// applied.
func (s *Store) Config() Config { return s.cfg }

// Conn returns the underlying connection pool, for ad hoc statements.
func (s *Store) Conn() driver.Conn { return s.conn }

// ServerVersion returns the server's version, such as "18.16.1".
func (s *Store) ServerVersion() (string, error) {
	v, err := s.conn.ServerVersion()
	if err != nil {
		return "", fmt.Errorf("clickhouse %s: server version: %w", s.cfg.Addr, err)
	}
	return fmt.Sprintf("%d.%d.%d", v.Version.Major, v.Version.Minor, v.Version.Patch), nil
}

// table returns the qualified, quoted name of table.
func (s *Store) table(name string) string { return s.db + ".`" + name + "`" }

// insertColumns are the columns Insert names: every column but day and
// dedup_version, which the server derives from closed_ms.
var insertColumns = Columns[:len(Columns)-2]

// Insert inserts events into OutcomesTable as one batch (one INSERT naming
// its columns). Inserting an event again is harmless: queries count each
// (topic, partition, offset) once.
func (s *Store) Insert(ctx context.Context, events []outcome.Event) error {
	return s.insertEvents(ctx, OutcomesTable, events)
}

// InsertByTask inserts events into OutcomesByTaskTable, the copy of
// OutcomesTable ordered by task id that lookups of one task read. The
// recorder inserts every event into both tables.
func (s *Store) InsertByTask(ctx context.Context, events []outcome.Event) error {
	return s.insertEvents(ctx, OutcomesByTaskTable, events)
}

func (s *Store) insertEvents(ctx context.Context, table string, events []outcome.Event) error {
	now := s.clock.Now().UnixMilli()
	return insertRows(ctx, s, table, events, insertColumns, func(e *outcome.Event) []any {
		return []any{e.TaskID, e.Kind, string(e.Outcome), e.Detail, e.Error, int32(e.Attempt), int32(e.Hops), e.Path,
			e.ScheduledMs, e.DueMs, e.DeadlineMs, e.ForwardedMs, e.ClosedMs, e.LatenessMs,
			e.Instance, e.Topic, e.Partition, e.Offset, now}
	})
}

// refusedCodes are ClickHouse error codes that retrying does not cure: the
// server does not accept the user, the password or the database.
var refusedCodes = map[int32]bool{
	192: true, // UNKNOWN_USER
	193: true, // WRONG_PASSWORD
	194: true, // REQUIRED_PASSWORD
	291: true, // DATABASE_ACCESS_DENIED
	497: true, // ACCESS_DENIED
	516: true, // AUTHENTICATION_FAILED
}

// IsRefused reports whether err is the server refusing the credentials or
// access to the database, which retrying does not cure.
func IsRefused(err error) bool {
	var ex *clickhouse.Exception
	return errors.As(err, &ex) && refusedCodes[ex.Code]
}
