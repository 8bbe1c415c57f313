package chstore

import "context"

// Migration is a schema change, for tests of the migration mechanism.
type Migration = migration

// NewMigration returns a migration; {db} in stmts is the quoted database.
func NewMigration(version uint32, name string, stmts ...string) Migration {
	return migration{version: version, name: name, stmts: stmts}
}

// MigrateWith applies ms as Migrate applies the schema's migrations.
func (s *Store) MigrateWith(ctx context.Context, ms []Migration) ([]uint32, error) {
	return s.migrate(ctx, ms)
}

// SetMaxRanges sets how many key ranges a View names before it falls back
// to IN, and returns how to restore it.
func SetMaxRanges(n int) (restore func()) {
	old := maxRanges
	maxRanges = n
	return func() { maxRanges = old }
}

// Migrations returns the schema's migrations.
func Migrations() []Migration { return migrations }
