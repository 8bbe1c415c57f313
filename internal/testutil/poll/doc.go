// Package poll waits in tests for a condition to hold, checking it at a
// fixed interval, for a bounded time.
package poll
