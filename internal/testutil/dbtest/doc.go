// Package dbtest gives tests the real databases: the shared Postgres and
// MySQL/MariaDB servers on loopback, unique table names, and private
// Postgres servers that a test can stop and start to see an outage.
//
// The shared servers are those scripts/deps.sh sets up; the environment
// variables HOURGLASS_TEST_POSTGRES_DSN and HOURGLASS_TEST_MYSQL_DSN point
// tests elsewhere. A server that cannot be reached fails the test; it is
// never skipped.
package dbtest
