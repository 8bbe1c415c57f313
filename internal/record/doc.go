// Package record is the services' side of the record contract (pkg/tiers):
// what the router and the canceller do to the records they move, and what
// producers never need.
//
// It holds the header edits (SetHeader, SetHeaders, Onward, which drops the
// headers only the services may write, Owned), the path of tiers a record
// waited in (AppendPath), the maximum-delay check (CheckDue), the reason of
// a refusal (ReasonOf), record sizes (Size, HeaderBytes), dead letters cut
// to fit the dead-letter topic (DeadLetter, MinimalDeadLetter), and the
// delay topic names read back into tiers (DelayTopicPrefix, TierOf). The
// contract itself (header names, Decode, reasons, limits, topic names and
// the Scheduler) stays in pkg/tiers, which other services import.
package record
