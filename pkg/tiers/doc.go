// Package tiers holds Hourglass's record contract and tier logic: what a Go
// service that schedules deadlines needs, and what a consumer of a target
// topic needs to read the contract headers. Hourglass's own services build
// on it; what only they do to the records they move (paths, dead letters,
// header edits) is not part of it.
//
// A deadline is a Kafka record in a delay topic. Tiers are the wait durations
// of those topics (DefaultTiers: 1m, 5m, 30m and longer rungs up to 270
// days); the topic of tier d is Topic(prefix, d), for example
// "hourglass.delay.30m". A producer puts a record into the topic of the
// largest tier not longer than its delay, or of the smallest tier when the
// delay is shorter than every tier (Table.Pick); the router hops it down the
// ladder as its delay runs out, a handful of times at most (Table.Walk).
//
// The record's key is the task id, its value an opaque payload passed through
// unchanged, and its headers carry the contract: HeaderDue (required, unix
// milliseconds in decimal ASCII, from 2000 to 9999 so that a due time in
// seconds is refused, not fired: PlausibleDue) and HeaderTarget (optional
// target topic),
// plus the optional headers documented on each Header constant. Decode
// validates them strictly and reports why a record is invalid with an
// *InvalidError; invalid records go to the dead-letter topic with that reason.
//
// Scheduler is a small producer helper for Go services:
//
//	s, err := tiers.NewScheduler(client, tiers.DefaultTable())
//	err = s.Schedule(ctx, tiers.Task{ID: "order-42", Due: created.Add(30 * time.Minute)})
package tiers
