// Package chtest gives tests a ClickHouse: a uniquely named database on the
// shared server (127.0.0.1:9000, started by scripts/clickhouse.sh), dropped
// at the end, and a private clickhouse-server a test may stop and restart.
// A server that is missing fails the tests, saying to run scripts/deps.sh;
// they never skip.
package chtest
