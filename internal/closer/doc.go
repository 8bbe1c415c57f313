// Package closer defines how the canceller closes a task (Closer, Task,
// Result, Permanent, RetryAfter), and the closers that need no external
// system: log (closes nothing, records the close) and memory (an in-process
// order store, for the demo and tests). The closers' configurations report
// their problems as Problems, each at its key.
//
// The closers that reach an external system live in packages below it:
// sqlcloser (Postgres, MySQL/MariaDB), httpcloser and kafkacloser; closerfile
// reads the closers file that maps each task kind to one of them. What a
// close found is an outcome.Outcome.
package closer
