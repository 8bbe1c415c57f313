// Package offsets computes the offsets Hourglass's consumers may commit: the
// contiguous watermark below which every record has been durably handled.
package offsets
