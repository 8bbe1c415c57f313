// Package verify checks a load test run: it reads the outcomes topic from its
// start for the run's task ids, joins the events with the run's manifest and
// reports what was scheduled, closed, skipped as paid, lost (no final
// outcome), duplicated (more than one final outcome) and closed early
// (closed_ms before due_ms), with lateness percentiles. Check is the pure
// join; Collect reads the topic; Main is the verify command.
package verify
