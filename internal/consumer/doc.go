// Package consumer is the commit-safe consumer group member that the
// router, the canceller and the recorder share: the one place where
// Hourglass decides which offsets may be committed, and when.
//
// A service takes each polled record (Member.Take) and finishes it
// (Member.Done) once its results are durable: the router's produce onward
// acknowledged, the canceller's close applied and its outcome, retry or dead
// letter acknowledged, the recorder's row inserted. The member commits, for
// each partition, the contiguous watermark: the lowest offset taken and not
// finished, or one past the highest when all are (DESIGN.md invariant 2, a
// record is committed only once it is handed on). Commits go soon after the
// watermark moves, at most every Config.CommitInterval, and always with a
// fresh context bounded by Config.CommitTimeout, never a caller's context
// that a stop, a revoke or a slow close may have used up.
//
// A record held for long (a deadline in the router's timer) holds the
// watermark while the records after it are finished: each commit's
// metadata also records which offsets above the watermark are finished
// (handled.go), and after an assignment the member hands those back from
// Take marked Handled, for the service to drop, so that a crash or a
// rebalance does not repeat them.
//
// Rebalances: the group's client blocks rebalances while a poll's records
// are being taken (kgo.BlockRebalanceOnPoll). At a revoke the member asks
// the service to let go of the revoked partitions (Config.Release: finish,
// hand off or drop what it holds, bounded by Config.RevokeTimeout), commits
// their watermarks and forgets them; at a loss it asks the same and commits
// nothing. Marks of a forgotten partition, and of records taken before a
// partition was reset below them, are stale: Done ignores them.
//
// Group holds the options every Hourglass group consumer shares (read
// committed, manual commits, rebalances only between polls, the session
// timeout with heartbeats well within it, fast metadata refreshes, the
// instance id of a static member, the decompression cap) and LeaveGroup the
// explicit leave of a static member; Group.Check reports the problems of
// its name, instance id and session timeout.
package consumer
