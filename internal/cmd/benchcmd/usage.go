package benchcmd

import "github.com/hourglass/hourglass/internal/cli"

const benchUsage = `hourglass bench drives the real pipeline on an embedded broker and prints one
JSON line with what it measured.

It starts an embedded Kafka broker (kfake) on 127.0.0.1 in this process, runs
the router and the canceller as child processes (this binary's "router" and
"canceller" commands, log closer by default), schedules --orders at --rate,
and reads every outcome event back. Lateness is the canceller's close time
minus the due time. Progress goes to stderr, the JSON line to stdout.

Workloads (--delays): a duration ("5s": every order due that long after it is
scheduled), or "mix": 50% exactly 5s, 30% uniform 2s-20s, 20% exactly 30s.

The JSON line: orders, fired (orders with an outcome), lost (without one),
duplicates (outcomes beyond the first), early (forwarded or closed before
due: must be 0), lateness_ms (p50, p90, p99, p999, max), schedule_rate
(orders/s produced), fire_rate (closes/s from the first close to the last)
and fire_rate_peak (the highest closes/s over one progress second), peak RSS
and CPU seconds of the router and canceller, and their CPU per deadline
fired (router_cpu_us_per_deadline, canceller_cpu_us_per_deadline, in
microseconds, over the whole run: the seconds before the first delays run
out and after the scheduling ends, when fewer deadlines fire, included).
"steady" has the same two figures over the longest stretch of the
scheduling, 5 s or more, in which every second fired at least 95% of
--rate (from_s, to_s, fired, rate): the CPU per deadline at that rate; it
is absent without such a stretch. produces_per_deadline is the records
produced into the delay topics (the bench's schedules and the router's
hops), read from the broker at the end, per deadline scheduled; with
delay_records, delay_bytes (the record batches the broker keeps for them,
compressed as produced) and delay_bytes_per_deadline. It exits 1 when an
order is lost or early, or when a --max-* bound is exceeded
(--max-produces-per-deadline among them); and at once, without a JSON
line, when the router or the canceller exits on its own.

With --closer postgres (or mysql) the canceller closes real orders: the
bench creates a table with a unique name in --dsn (loopback addresses only),
fills it with one UNPAID row per order, gives the canceller a closers file
whose sql closer points at it, and drops it at the end (unless
--keep-table). A trigger counts the updates of each row; "db" in the JSON
line has the rows CLOSED, those updated exactly once (closed_once) and the
most updates of one row, and the bench exits 1 unless every row was closed
exactly once.

With --burst N the bench schedules N deadlines due at one instant,
--burst-lead after the start (scheduling must end before it), and its JSON
line ("mode": "burst") has, from that instant: last_forward_ms and
last_close_ms (to the last forward and the last close),
forward_lateness_ms and close_lateness_ms, close_rate, and the figures of
the processes (and "db" with --closer postgres or mysql).

With --kill router (or canceller) the bench kills that process with SIGKILL
at --kill-at and starts it again --restart-after later (with the same
--instance-id when --instance-ids is set), and adds "kill": recovery_ms
(from the kill to the first forward, or close, by the new instance),
lateness_ms of the deadlines due in the 10 s after the kill, and the
duplicates, also as milliseconds of traffic at --rate.

With --hostile-rate and --bombs the bench also sends what a hostile
producer would, next to the orders: records with a value just under the
router's limit (899,000 bytes) due --pending-delay ahead, at --hostile-rate
per second, and zstd batches of 256 MiB that fit in 35 kB on the wire
(--bombs of them, one every second): the router must keep them bounded in
memory (router_peak_rss_mb; --max-router-rss-mb fails the run above a
bound) and dead-letter the batches.

With --big-batches N the bench builds N zstd batches of about 3 kB that
each decode to just under the 16 MiB cap (one deadline due --pending-delay
ahead and fifteen records with a key of 1 MiB, which are dead-lettered),
and sends them at once halfway through the scheduling into the first
partition of the largest tier's topic: the router meets dozens of them in
one fetch, next to the orders, and must stay bounded in memory and keep the
orders of the other partitions on time.

With --pending-steps the bench measures memory instead: it schedules orders
due far ahead (--pending-delay) and samples the router's RSS as the pending
deadlines reach each step. Its line has the CPU seconds of the router and
the canceller and their CPU per deadline scheduled (none fires).

With --cancel-ratio R the bench cancels that share of the orders right
after it schedules them (one record each on hourglass.cancellations): the
router drops them when due, "cancelled" in the JSON line counts them, and
lateness_ms is that of the orders that were not cancelled.

With --broker-latency D every answer of the embedded broker reaches its
client D later, as over a network: on loopback a round trip takes
microseconds, and what the services pay per round trip does not show.

Other writers of the cancellations topic, next to a throughput run: with
--open-txn D a writer begins a transaction at the start, writes into it the
cancellation of every 100th order scheduled while it is open, and aborts it
D later (as the broker aborts a killed writer's); with --cancel-flood B a
writer produces records whose keys (900 KiB) no task id can have, at B
bytes a second while the orders are scheduled. "writers" in the JSON line
has the orders the transaction wrote (in_txn: held until it ended, then
closed) and their lateness, the lateness of the other orders closed, and
the orders cancelled outside the transaction (--cancel-ratio) that were
closed all the same (leaked: the bench exits 1 unless it is 0).

With --cancellation-steps the bench measures the memory cancellations cost
instead: it produces cancellations of deadlines due --pending-delay ahead
and samples the router's RSS once its store holds each step's count (read
from its metrics), like --pending-steps. Its line has the CPU seconds of
the router and the canceller and their CPU per cancellation read
(router_cpu_us_per_cancellation, canceller_cpu_us_per_cancellation).

Usage: hourglass bench [flags]

` + cli.FlagsHeading + "\n"
