// Package taskstatus says where a task is. Its records (read from Kafka by
// `hourglass status`, or as the deadline index in ClickHouse holds them)
// become Events; Deadlines groups them by deadline and says where each is
// now: waiting in a tier, overdue, forwarded, retrying, closed with an
// outcome, cancelled, failed or dead-lettered, with the cancellation that
// covers it and whether that came before the due time, after it or after
// the forward. `hourglass status` prints it; the console shows it.
//
// Every text an Event takes from a record is cut to the limits of an
// outcome event's fields, so what is kept of a record is bounded whatever
// its headers hold.
package taskstatus
