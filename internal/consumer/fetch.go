package consumer

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
)

// Pause pauses fetching partitions for the service (its own limits) until
// Resume. A service pauses through the Member, not its client, so that a
// partition paused by both the service and a fetch error's backoff is
// fetched again only when both have let go of it.
func (m *Member) Pause(parts map[string][]int32) { m.backoff.Pause(parts) }

// Resume resumes partitions the service paused (see Pause).
func (m *Member) Resume(parts map[string][]int32) { m.backoff.Resume(parts) }

// FetchErrors handles a poll's errors: a batch the client left to a later
// fetch, being over its decode budget (kafka.Deferred), is no error; a
// batch too large to decompress, or malformed, is skipped and handed to
// skipped (see TakeSkipped); the fencing
// of the member's instance id by another member, or a consumed topic
// deleted and created again (which the client would never read), is
// returned, and the service must stop; other errors are logged (a canceled
// poll's are not) and their partition is paused for a backoff
// (kafka.FetchBackoff): the client would fetch it again at once, and the
// poll would return the error again at once. Errors that last make
// FetchFailing report them.
func (m *Member) FetchErrors(fs kgo.Fetches, skipped func(*kgo.ErrDecompressTooLarge)) error {
	var fatal error
	fs.EachError(func(topic string, partition int32, err error) {
		if kafka.Deferred(err) {
			return
		}
		switch tooLarge := kafka.SkipBatch(m.cl, err); {
		case tooLarge != nil:
			skipped(tooLarge)
		case errors.Is(err, kerr.FencedInstanceID):
			if fatal == nil {
				fatal = fmt.Errorf("--instance-id %s: another member of group %s runs with this id: %w", m.cfg.Group.InstanceID, m.cfg.Group.Name, err)
			}
		case errors.Is(err, kerr.UnknownTopicID) && topic != "":
			// The topic was deleted and created again: the client keeps
			// fetching the old id, and would never read the new topic.
			if fatal == nil {
				fatal = kafka.RecreatedConsumed(topic, err)
			}
		case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		default:
			wait := m.backoff.Failed(topic, partition)
			m.fails.failed(tp{topic, partition}, m.cfg.Clock.Now(), wait, err)
			if wait > 0 {
				m.log.Warn("fetch failed; fetching the partition again after a backoff", "topic", topic, "partition", partition, "in", wait, "err", err)
			} else if topic == "" {
				m.log.Warn("fetch failed", "err", err)
			}
		}
	})
	return fatal
}
