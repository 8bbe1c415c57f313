// Package workload draws the tasks of a load test: a mix of delays of every
// shape the pipeline must handle, and which orders are paid before their
// deadline.
//
// The shapes, for tiers t0 < t1 < ... and a longest delay M:
//
//   - past_due: due up to PastDue in the past; fires at once.
//   - below_smallest: 1 ms to t0 - 1 ms; waits in the smallest tier's topic
//     until due, never a whole tier.
//   - between_tiers: uniform in (t0, M], never exactly a tier; usually hops.
//   - exact_tier: exactly one of the tiers up to M; one wait, no hop.
//   - multi_hop: a delay that waits in three or more tier topics (two when
//     the tiers and M allow no more), such as 8.4s with 1s,2s,5s,10s:
//     5s, then 2s, then 1s, then the router's timer.
package workload
