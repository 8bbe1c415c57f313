// Package e2e runs a k6 scenario of the load test against a local pipeline
// (an embedded broker, and the router and canceller as child processes) and
// checks that k6 itself judges the run through its thresholds: a healthy
// pipeline passes, a slowed router fails the close lateness threshold.
// It has tests only; they build k6 and hourglass with the go command and
// are skipped with -short.
package e2e
