// Package app holds Hourglass's commands: the router and canceller services
// and the hourglass tool (topics, demo, bench). Each command parses its flags
// (with HOURGLASS_* environment fallbacks), validates them, and runs until
// its context is canceled.
package app
