// Package cancels keeps the cancellations of the cancellations topic
// (tiers.CancellationsTopic) where the router can look them up before it
// forwards a deadline: on disk, in a Pebble store, so that the router's
// memory stays flat however many cancellations are pending (users cancel most
// deadlines).
//
// # Store
//
// A Store holds one cancellation per task id, the latest, as the compacted
// topic does, each with its expiry: the time after which it can no longer
// call off a deadline, when Sweep may delete it. Beside them it holds the
// next offset of each partition of the topic read so far, written in the
// same batch as the cancellations they cover, so that the two always agree.
//
// Writes come in batches (Store.NewBatch, Batch.Put, Batch.Withdraw,
// Batch.SetOffset, Batch.Commit) from one writer; lookups (Store.Lookup)
// come from any goroutine and see a committed batch at once. There is no
// write-ahead log and no fsync: the topic is the source of truth, so a crash
// may lose the latest batches (whole batches, never part of one), and the
// offsets that survive say where to read again. With an empty Options.Dir
// the store lives in a temporary directory that Close removes, and it is
// rebuilt from the topic at every start.
//
// Memory: the block cache (Options.CacheBytes, DefaultCacheBytes by default)
// bounds the blocks held in memory and accounts for the memtables (2 MiB
// each) too; the file cache holds at most 128 open tables; bloom filters
// answer most lookups of tasks never cancelled without reading a block; and
// blocks are sized to the Go allocator's size classes, so that a full cache
// does not fragment the heap. "CGO_ENABLED=0 go test -run '^$' -bench
// BenchmarkStoreMemory ./internal/cancels" prints the resident memory of a
// store of 10,000 and of 1,000,000 cancellations, built as the image is.
//
// # Reader
//
// A Reader consumes the whole topic into a Store (every router reads every
// partition, so a rebalance moves no cancellation), from the offsets the
// store records or from the start of the topic. Check answers the router's
// question before it forwards a due deadline: "may it leave, or does a
// cancellation acknowledged before it was due call it off?".
//
// Rounds make the answer sure: a round notes the time, lists the high
// watermark of every partition and waits until the positions reach them;
// every record acknowledged before the noted time has then been read, and
// Covered moves to it. Want asks for a round; rounds run back to back
// while a later Covered is wanted, so that every instant at which deadlines
// fall due costs one listing, whatever the number of deadlines.
//
// The Reader reads uncommitted records, so that a transaction another
// writer leaves open cannot hide what was acknowledged after it began (a
// reader of committed records stops at the last stable offset, which the
// open transaction pins). A record written in a transaction is pending
// until its transaction's marker: the deadlines of its task id are Held
// meanwhile, and no others; a commit applies it, an abort drops it, and a
// later record of its task id in its partition replaces it either way.
// Pending records live in memory, bounded (see txns); the store's offsets
// stay below the first of them, so a restart reads them again.
//
// A record outside the limits of a deadline (a key longer than a
// deadline's, a due time further than MaxDelay from the cancellation's
// time, a malformed header) is reported and withdraws its task's
// cancellation, as the compacted topic, which keeps only that record,
// tells a router that reads it later. A cancellation is kept until Grace
// after the furthest deadline it can call off, MaxDelay after it was made,
// however late the router reaches that deadline; one stamped more than
// MaxAhead ahead of the router's clock calls nothing off until then.
//
// On disk, a cancellation is a key 'c'+id whose value is a flags byte and
// varints (At in unix milliseconds, Due-At when Due is set, expiry-At),
// and an expiry index key 'e'+expiry+id, so that Sweep reads the expired
// ones in order. Sweep deletes a cancellation only if its stored expiry is
// the index entry's, so an index entry left behind cannot delete a newer
// cancellation of the same task.
package cancels
