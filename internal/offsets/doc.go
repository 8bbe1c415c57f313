// Package offsets computes and commits the offsets Hourglass's consumers may
// commit: the contiguous watermark below which every record has been durably
// handled ([Tracker]), committed soon after it advances and always with a
// fresh context ([Committer]).
package offsets
