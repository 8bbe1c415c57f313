// Package outcome is what a close attempt found (Outcome: closed,
// already_closed, skipped, not_found, retry, failed) and the outcome event:
// one per close attempt, produced by the canceller to the outcomes topic
// (hourglass.outcomes), keyed by task id, JSON-encoded. The recorder loads
// the events into ClickHouse; the demo and the benchmark read them to
// measure lateness.
package outcome
