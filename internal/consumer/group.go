package consumer

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/kafka"
)

// Defaults of the consumer settings every Hourglass consumer shares.
const (
	// DefaultSessionTimeout is how long the group waits for a member that
	// stopped heartbeating before it gives the member's partitions to
	// others: what a dead (not restarted) instance costs in lateness. It is
	// the smallest session timeout a Kafka broker accepts with its default
	// group.min.session.timeout.ms; Kafka's own default, 45s, would hold a
	// crashed router's deadlines for 45 seconds. A restarted instance with
	// an instance id takes its partitions back at once, whatever this is.
	DefaultSessionTimeout = 6 * time.Second
	// MetadataMinAge is the least time between two metadata refreshes of
	// a service's client (franz-go's default is 5s).
	MetadataMinAge = 250 * time.Millisecond
	// MetadataMaxAge is the most time between two metadata refreshes of
	// a service's client: how long a partition added to a consumed topic
	// goes unread. franz-go's default, 5m, held the deadlines produced to
	// a partition added to a delay topic for up to five minutes.
	MetadataMaxAge = 5 * time.Second
	// HeartbeatInterval is how often a member heartbeats (at most a third
	// of the session timeout).
	HeartbeatInterval = 250 * time.Millisecond
)

// Group is how a service joins its consumer group. The zero value is a
// dynamic member with the default session timeout.
type Group struct {
	// Name is the consumer group; required.
	Name string
	// Topics are the topics consumed; required.
	Topics []string
	// TopicsMatching, when set, is a regular expression: every topic it
	// matches is consumed too, as it is created, besides Topics.
	TopicsMatching string
	// InstanceID makes the member static (KIP-345): a member restarted with
	// the same id within the session timeout gets its partitions back
	// without a rebalance, and so without waiting for the session timeout.
	// Two running members must never share an id. Empty: a dynamic member.
	InstanceID string
	// SessionTimeout is the group session timeout; default
	// DefaultSessionTimeout. Heartbeats go every HeartbeatInterval, or
	// every third of it if that is shorter.
	SessionTimeout time.Duration
	// MaxDecompressBatchBytes caps a fetched batch's decompressed size;
	// default kafka.DefaultMaxDecompressBatchBytes. A larger batch, or one that
	// does not decompress, is reported by the poll as a
	// *kgo.ErrDecompressTooLarge and its partition stops until the consumer
	// skips the batch (see SkipBatch).
	MaxDecompressBatchBytes int
}

// Opts returns the consumer options every Hourglass group consumer shares:
//
//   - the group, its topics, and a new group starting at the oldest record
//     (a deadline scheduled before the first consumer started fires too);
//   - manual commits only: Kafka's autocommit would commit records still
//     held in memory (DESIGN.md invariant 2);
//   - rebalance callbacks only between polls (BlockRebalanceOnPoll), so a
//     revoke never races the taking of a poll's records;
//   - read committed: a record of an aborted transaction never fires
//     (invariant 6);
//   - the decompression cap, the session timeout with heartbeats well
//     within it, metadata refreshed within MetadataMinAge after a leader
//     moves, partitions added to a topic assigned within MetadataMaxAge,
//     and the instance id when set.
func (g Group) Opts() []kgo.Opt {
	session := g.SessionTimeout
	if session == 0 {
		session = DefaultSessionTimeout
	}
	maxBatch := g.MaxDecompressBatchBytes
	if maxBatch == 0 {
		maxBatch = kafka.DefaultMaxDecompressBatchBytes
	}
	opts := append(kafka.ReaderOpts(maxBatch),
		kgo.ConsumerGroup(g.Name),
		kgo.ConsumeTopics(g.consumed()...),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		kgo.SessionTimeout(session),
		// A member learns of a rebalance from its next heartbeat, and an
		// incremental rebalance takes two rounds: the partitions that move
		// wait about two heartbeat intervals for their new owner. Kafka's
		// usual 3s would make every join or leave cost their deadlines
		// seconds; a heartbeat is one small request.
		kgo.HeartbeatInterval(min(HeartbeatInterval, session/3)),
		// A produce or fetch refused because a partition's leader moved
		// waits for fresh metadata; franz-go refreshes it at most every 5s
		// by default, which a leader change would add to every deadline
		// of the partition.
		kgo.MetadataMinAge(MetadataMinAge),
		// The group's leader sees a partition added to a consumed topic
		// only in a metadata refresh, and only then is it assigned.
		kgo.MetadataMaxAge(MetadataMaxAge),
	)
	if g.TopicsMatching != "" {
		opts = append(opts, kgo.ConsumeRegex())
	}
	if g.InstanceID != "" {
		opts = append(opts, kgo.InstanceID(g.InstanceID))
	}
	return opts
}

// consumed returns what kgo.ConsumeTopics takes: the topics, or with
// TopicsMatching regular expressions for the topics and for it.
func (g Group) consumed() []string {
	if g.TopicsMatching == "" {
		return g.Topics
	}
	out := make([]string, 0, len(g.Topics)+1)
	for _, t := range g.Topics {
		out = append(out, "^"+regexp.QuoteMeta(t)+"$")
	}
	return append(out, g.TopicsMatching)
}

// NewClient returns a group consumer client with g's options (Opts) and
// opts (the connection, callbacks, producer settings). It resolves where a
// partition without a committed offset starts to the partition's log start
// offset before consuming it: franz-go skips a batch refused as too large to
// decompress only on a partition it has a position for (see SkipBatch), and
// without this a first batch over the cap would stop its partition for good.
func (g Group) NewClient(opts ...kgo.Opt) (*kgo.Client, error) {
	var (
		cl    *kgo.Client
		built = make(chan struct{})
	)
	resolve := func(ctx context.Context, offs map[string]map[int32]kgo.Offset) (map[string]map[int32]kgo.Offset, error) {
		select { // the group may join before NewClient has returned
		case <-built:
		case <-ctx.Done():
			return offs, nil
		}
		if cl == nil {
			return offs, nil
		}
		return resolveStarts(ctx, kadm.NewClient(cl), offs), nil
	}
	all := append(append(g.Opts(), kgo.AdjustFetchOffsetsFn(resolve)), opts...)
	c, err := kgo.NewClient(all...)
	cl = c
	close(built)
	return c, err
}

// resolveStarts replaces "the start" in offs (the reset of a partition
// without a committed offset) by the partition's log start offset. Where the
// lookup fails it leaves the offset as it was.
func resolveStarts(ctx context.Context, adm *kadm.Client, offs map[string]map[int32]kgo.Offset) map[string]map[int32]kgo.Offset {
	var topics []string
	for topic, ps := range offs {
		for _, o := range ps {
			if o.EpochOffset().Offset < 0 {
				topics = append(topics, topic)
				break
			}
		}
	}
	if len(topics) == 0 {
		return offs
	}
	starts, err := adm.ListStartOffsets(ctx, topics...)
	if err != nil {
		return offs
	}
	for _, topic := range topics {
		for p, o := range offs[topic] {
			if o.EpochOffset().Offset >= 0 {
				continue
			}
			if s, ok := starts.Lookup(topic, p); ok && s.Err == nil {
				offs[topic][p] = kgo.NewOffset().At(s.Offset).WithEpoch(-1)
			}
		}
	}
	return offs
}

// LeaveGroup removes the static member instanceID from group, through a
// short-lived client of conn (the connection options), bounded by 5s. A
// static member does not leave its group when its client closes, so that a
// restart with the same id takes its partitions back at once; a member that
// stops for good must leave explicitly, or its partitions wait for the
// session timeout.
func LeaveGroup(ctx context.Context, conn []kgo.Opt, group, instanceID string) error {
	cl, err := kgo.NewClient(conn...)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).LeaveGroup(ctx, kadm.LeaveGroup(group).InstanceIDs(instanceID))
	if err != nil {
		return fmt.Errorf("leave group %s as %s: %w", group, instanceID, err)
	}
	if err := resp.Error(); err != nil {
		return fmt.Errorf("leave group %s as %s: %w", group, instanceID, err)
	}
	return nil
}

// ConfigField names a field of Group as the field of a service's Config
// that sets it: Name is its Group, the others keep their names. With
// field.Rename, a service reports the problems of Check in its own terms.
func ConfigField(f string) string {
	if f == "Name" {
		return "Group"
	}
	return f
}

// Check reports the problems of g's Name, InstanceID and SessionTimeout,
// each a *field.Error naming the field; the services check their own
// topics. Like the services' Validate it applies no default: a zero
// SessionTimeout is reported.
func (g Group) Check() error {
	var errs []error
	if g.Name == "" {
		errs = append(errs, field.Errorf("Name", "must not be empty"))
	}
	if len(g.InstanceID) > 249 || strings.ContainsFunc(g.InstanceID, func(r rune) bool { return r < 0x21 || r > 0x7e }) {
		errs = append(errs, field.Errorf("InstanceID", "%q: want at most 249 printable ASCII characters without spaces", g.InstanceID))
	}
	if _, err := regexp.Compile(g.TopicsMatching); err != nil {
		errs = append(errs, field.Errorf("TopicsMatching", "%q: %v", g.TopicsMatching, err))
	}
	if g.SessionTimeout < time.Second || g.SessionTimeout > 30*time.Minute {
		errs = append(errs, field.Errorf("SessionTimeout", "%v: want 1s to 30m", g.SessionTimeout))
	}
	return errors.Join(errs...)
}
