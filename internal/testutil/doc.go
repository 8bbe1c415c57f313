// Package testutil holds, in packages below it, what tests need and the
// services never import: dbtest (the shared Postgres and MySQL/MariaDB
// servers, and private Postgres servers to stop and start), chtest (a
// ClickHouse database on the shared server, and a private server),
// kfaketest (one in-process kfake cluster per test package, and a goroutine
// leak check), poll (a bounded wait for a condition), headers (record
// headers built and compared), cmdtest (a command run with bounded time
// and captured output, and how it refuses bad configuration), hung (a
// broker that accepts connections and never answers), syncbuf (a buffer
// written by one goroutine and read by the test) and fieldtest (the fields
// named by the problems a Validate reports). Only _test.go
// files and other test helpers import them.
package testutil
