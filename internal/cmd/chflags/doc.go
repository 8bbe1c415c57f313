// Package chflags registers the --clickhouse-* flags of the commands that
// read or write ClickHouse (recorder, report, status), each with its
// HOURGLASS_CLICKHOUSE_* environment variable, and names the problems of
// chstore.Config by those flags. It is apart from internal/cmd/flags so
// that the binaries without ClickHouse do not link its driver.
package chflags
