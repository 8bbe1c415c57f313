package kafka

import (
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// A record a broker refuses for good (not a retriable error, which franz-go
// retries itself) is produced again after RefusedBackoff, doubling up to
// RefusedBackoffMax: the services never give up on a dead letter or an
// outcome event, and never stop for one.
const (
	RefusedBackoff    = 100 * time.Millisecond
	RefusedBackoffMax = 30 * time.Second
)

// RefusedWait is the wait before the try after tries refusals (from 1).
func RefusedWait(tries int) time.Duration {
	return min(RefusedBackoff<<min(max(tries-1, 0), 20), RefusedBackoffMax)
}

// TooLarge reports whether err refuses a record as too large.
func TooLarge(err error) bool {
	return errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge)
}

// SkippedBatch is why the records of a batch that SkipBatch skipped go
// unread: the reason of the dead letter that stands for them.
func SkippedBatch(b *kgo.ErrDecompressTooLarge) *tiers.InvalidError {
	return &tiers.InvalidError{Reason: tiers.ReasonBatchTooLarge, Detail: fmt.Sprintf(
		"the record batch at offsets %d to %d does not decompress and decode within %d bytes (too large, too many records, or malformed); its records were not read",
		b.Offset, b.NextOffset-1, DefaultMaxDecompressBatchBytes)}
}
