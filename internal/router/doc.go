// Package router is the router: it consumes the delay topics
// (<prefix>delay.<tier>) as a consumer group and moves each record on when
// it is due. A partition's records become due in the order they were
// appended, so the router looks only at the head of each partition and
// pauses the partition until the head is due. A due record whose remaining
// delay is at least the smallest tier hops to the largest tier not longer
// than it; one with less remaining is held in memory and forwarded on time
// to its target topic (hourglass-target, or the configured default). Records
// that break the contract (pkg/tiers) go to the dead-letter topic.
//
// Router is created with New and runs until Run's context is canceled; its
// configuration is Config. The record edits it makes on the way (the path,
// header edits, dead letters) are package record's.
package router
