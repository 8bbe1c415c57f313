// Package canceller is the canceller: it consumes the target topics as a
// consumer group and closes each due task through the closer of its kind
// (package closer and the closers below it). Every close attempt produces an
// outcome event (package outcome); a retryable failure reschedules the task
// through the delay tiers with backoff, and a task that failed for good, or
// whose retries ran out, goes to the dead-letter topic.
//
// Canceller is created with New and runs until Run's context is canceled;
// its configuration is Config. Closes of one task id never overlap, and a
// record's offset is committed only once its outcome event and its retry or
// dead letter are acknowledged.
package canceller
