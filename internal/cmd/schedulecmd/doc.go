// Package schedulecmd is `hourglass schedule`, `hourglass cancel` and
// `hourglass reschedule`: deadlines produced, called off and moved from the
// command line through tiers.Scheduler, as a service does it in Go.
//
// schedule produces a task into the delay topic of its delay and prints
// which topic and partition and when it is due. cancel produces a record of
// the cancellations topic (tiers.Scheduler.Cancel) and says whether the
// broker acknowledged it before the due time; after it, it exits 1 with a
// message that points to `hourglass status`. reschedule produces the
// cancellation and the new deadline in one Kafka transaction
// (tiers.Scheduler.Reschedule on a client with a transactional id unique to
// the run), so that a reader of committed records sees both or neither.
package schedulecmd
