package router

import (
	"errors"
	"path"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup               = "hourglass-router"
	DefaultKind                = "order-timeout" // the canceller's default kind too
	DefaultMaxDelay            = 365 * 24 * time.Hour
	DefaultTimerCapacity       = 10_000
	DefaultMaxHeldPerPartition = 1_000
	// DefaultMaxHeld is what a router holds waiting out their tiers, in all
	// its partitions, before each is held to an even share: what 18
	// partitions hold at DefaultMaxHeldPerPartition, so that a longer
	// ladder of tiers (more partitions) does not multiply the memory.
	DefaultMaxHeld         = 18_000
	DefaultCommitInterval  = 50 * time.Millisecond
	DefaultShutdownTimeout = 20 * time.Second
	DefaultRevokeTimeout   = 5 * time.Second
	// DefaultFetchPartitionBytes keeps a fetch of small, well-compressed
	// records to a few of the router's polls: what a poll leaves of a
	// partition it paused is decoded for nothing, and what the client
	// decodes ahead waits in memory (docs/benchmarks.md).
	DefaultFetchPartitionBytes = 32 << 10
	// DefaultBatchWindow is the router command's default BatchWindow: a
	// few milliseconds of lateness for deadlines that leave in batches.
	DefaultBatchWindow = 5 * time.Millisecond
	// maxBatchWindow bounds BatchWindow: it is lateness added to every
	// deadline.
	maxBatchWindow = time.Second
	// DefaultMaxHeldBytesPerPartition bounds what the records one partition
	// holds (waiting, in the timer, or being produced onward) take in
	// memory, whatever they contain.
	DefaultMaxHeldBytesPerPartition = 4 << 20
	// DefaultMaxHeldBytes is DefaultMaxHeld in bytes: 18 partitions at
	// DefaultMaxHeldBytesPerPartition.
	DefaultMaxHeldBytes = 72 << 20
	// DefaultTimerBytes bounds the bytes of the records in the in-memory
	// timer.
	DefaultTimerBytes = 32 << 20
	// DefaultMaxInFlightPerTarget bounds the produces in flight to one
	// topic; more wait in the router, so that a topic that keeps failing
	// cannot fill the client's produce buffer for the others.
	DefaultMaxInFlightPerTarget = 10_000
)

// Config is the router's behaviour; the Kafka connection is passed to New as
// kgo options. Zero fields take the defaults named on them (see
// WithDefaults).
type Config struct {
	// Tiers is the tier table; default tiers.DefaultTiers (1m,5m,30m).
	Tiers tiers.Table
	// Prefix is the topic prefix; default tiers.DefaultPrefix ("hourglass.").
	Prefix string
	// Target is the topic a due record goes to when it has no
	// hourglass-target header; default Prefix + "cancel".
	Target string
	// DeadLetter is the dead-letter topic; default Prefix + "dlq".
	DeadLetter string
	// Outcomes is the canceller's outcome topic, which a record may never
	// name as its target; default Prefix + "outcomes".
	Outcomes string
	// Cancellations is the compacted topic of cancellations
	// (tiers.Cancellation), which a record may never name as its target;
	// default Prefix + "cancellations".
	Cancellations string
	// CancellationsDir is the directory of the router's on-disk store of
	// cancellations. On a volume that survives a restart, a restarted
	// router reads only the cancellations that are new. Default "": a
	// temporary directory, removed at the stop; the store is rebuilt from
	// the topic at every start.
	CancellationsDir string
	// CancellationGrace is how long a cancellation is kept after the
	// furthest deadline it can call off was due (MaxDelay after it was
	// made), for a deadline the router reaches late; default
	// cancels.DefaultGrace (1h).
	CancellationGrace time.Duration
	// OutcomesKey, when set, signs the outcome events the router produces
	// for cancelled deadlines, as the canceller signs its own (the
	// canceller's OutcomesKey); default none.
	OutcomesKey []byte
	// DefaultKind is the kind of the outcome event of a cancelled deadline
	// without hourglass-kind: the kind the canceller would have closed it
	// as (its --default-kind); default DefaultKind.
	DefaultKind string
	// AllowedTargets are the topics a record may name in hourglass-target,
	// as patterns of path.Match ("orders.*", "*.cancel"); a record naming
	// another goes to the dead-letter topic (target_invalid). The delay
	// topics, the dead-letter topic and Outcomes are never targets, whatever
	// the patterns say. Default: Target alone.
	AllowedTargets []string
	// Group is the consumer group; default DefaultGroup.
	Group string
	// InstanceID makes the router a static member of its group: restarted
	// with the same id, it takes its partitions back at once instead of
	// after SessionTimeout. Default "": a dynamic member.
	InstanceID string
	// SessionTimeout is the group session timeout: how long the partitions
	// of a router that died (and was not restarted) wait before another
	// router takes them; default consumer.DefaultSessionTimeout (6s).
	SessionTimeout time.Duration
	// Limits bound the key, headers and value of a delay record; a larger
	// record goes to the dead-letter topic. Zero fields take the
	// tiers.Limits defaults.
	Limits tiers.Limits
	// MaxDelay rejects records due further ahead than this (to the
	// dead-letter topic); default DefaultMaxDelay (365 days).
	MaxDelay time.Duration
	// TimerCapacity bounds the records held in memory waiting for a due time
	// shorter than the smallest tier. When it is full, such a record waits at
	// the head of its partition, which is paused; default
	// DefaultTimerCapacity.
	TimerCapacity int
	// TimerBytes bounds the bytes of the records in the timer; default
	// DefaultTimerBytes.
	TimerBytes int
	// MaxHeldPerPartition is how many records a partition may hold waiting
	// out their tier before the router pauses fetching it, and the most
	// records one poll takes, so that a partition holds at most twice as
	// many; default DefaultMaxHeldPerPartition.
	MaxHeldPerPartition int
	// MaxHeldBytesPerPartition is how many bytes the records a partition
	// holds (waiting, in the timer or being produced) may take in memory,
	// with the records they are produced onward as, before the router
	// pauses fetching it; default DefaultMaxHeldBytesPerPartition.
	MaxHeldBytesPerPartition int
	// MaxHeld and MaxHeldBytes bound what the router holds in all its
	// partitions, as MaxHeldPerPartition and MaxHeldBytesPerPartition do
	// in one: once the router holds either, a partition that holds more
	// than its even share of it pauses. A partition may still fill its
	// own limits while the others hold little. Defaults DefaultMaxHeld and
	// DefaultMaxHeldBytes.
	MaxHeld      int
	MaxHeldBytes int
	// MaxInFlightPerTarget bounds the produces in flight to one topic;
	// default DefaultMaxInFlightPerTarget.
	MaxInFlightPerTarget int
	// FetchPartitionBytes bounds what one fetch returns per partition,
	// compressed (at least one batch), and so what a partition can hold
	// beyond MaxHeldBytesPerPartition; default DefaultFetchPartitionBytes
	// (32 KiB).
	FetchPartitionBytes int32
	// BatchWindow makes the router wake on a grid of this interval: what
	// is ready within one window (deadlines due, hops) leaves together at
	// its end, checked against the cancellations in one round and produced
	// in one batch, instead of a round and a produce request for each
	// instant. It adds at most this much to a deadline's lateness, and
	// never fires one early. Zero wakes at each ready time, and WithDefaults
	// leaves it so; the router command's default is DefaultBatchWindow.
	BatchWindow time.Duration
	// CommitInterval is the least time between two commits. Offsets are
	// committed as soon as produces are acknowledged, at most this often, so
	// a crash repeats about this much traffic; default
	// DefaultCommitInterval.
	CommitInterval time.Duration
	// RevokeTimeout bounds how long a revoke waits for produces in flight
	// before committing what is done; default DefaultRevokeTimeout.
	RevokeTimeout time.Duration
	// ShutdownTimeout bounds a graceful stop; default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// WithTopicDefaults returns c with the topic names it leaves empty derived
// from Prefix: Target, DeadLetter, Outcomes and Cancellations, and AllowedTargets (Target
// alone). Every other field is left as it is.
func (c Config) WithTopicDefaults() Config {
	if c.Target == "" {
		c.Target = tiers.CancelTopic(c.Prefix)
	}
	if c.DeadLetter == "" {
		c.DeadLetter = tiers.DeadLetterTopic(c.Prefix)
	}
	if c.Outcomes == "" {
		c.Outcomes = tiers.OutcomesTopic(c.Prefix)
	}
	if c.Cancellations == "" {
		c.Cancellations = tiers.CancellationsTopic(c.Prefix)
	}
	if len(c.AllowedTargets) == 0 {
		c.AllowedTargets = []string{c.Target}
	}
	return c
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Tiers.Len() == 0 {
		c.Tiers = tiers.DefaultTable()
	}
	if c.Prefix == "" {
		c.Prefix = tiers.DefaultPrefix
	}
	c = c.WithTopicDefaults()
	if c.SessionTimeout == 0 {
		c.SessionTimeout = consumer.DefaultSessionTimeout
	}
	c.Limits = c.Limits.WithDefaults()
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.DefaultKind == "" {
		c.DefaultKind = DefaultKind
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.CancellationGrace == 0 {
		c.CancellationGrace = cancels.DefaultGrace
	}
	if c.TimerCapacity == 0 {
		c.TimerCapacity = DefaultTimerCapacity
	}
	if c.TimerBytes == 0 {
		c.TimerBytes = DefaultTimerBytes
	}
	if c.MaxHeldPerPartition == 0 {
		c.MaxHeldPerPartition = DefaultMaxHeldPerPartition
	}
	if c.MaxHeldBytesPerPartition == 0 {
		c.MaxHeldBytesPerPartition = DefaultMaxHeldBytesPerPartition
	}
	if c.MaxHeld == 0 {
		c.MaxHeld = DefaultMaxHeld
	}
	if c.MaxHeldBytes == 0 {
		c.MaxHeldBytes = DefaultMaxHeldBytes
	}
	if c.MaxInFlightPerTarget == 0 {
		c.MaxInFlightPerTarget = DefaultMaxInFlightPerTarget
	}
	if c.FetchPartitionBytes == 0 {
		c.FetchPartitionBytes = DefaultFetchPartitionBytes
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.RevokeTimeout == 0 {
		c.RevokeTimeout = DefaultRevokeTimeout
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	return c
}

// Validate reports every problem with c, each a *field.Error naming the
// field (Limits.KeyBytes for the fields of Limits). It does not apply
// defaults: a zero field that has a default is reported, so call it after
// WithDefaults unless zero values came from the user.
func (c Config) Validate() error {
	errs := c.checkTopics()
	group := consumer.Group{Name: c.Group, InstanceID: c.InstanceID, SessionTimeout: c.SessionTimeout}.Check()
	errs = append(errs, field.Rename(group, consumer.ConfigField), field.In("Limits", record.CheckLimits(c.Limits)))
	errs = append(errs, c.checkHeld()...)
	for _, d := range []struct {
		field string
		v     time.Duration
	}{{"MaxDelay", c.MaxDelay}, {"CancellationGrace", c.CancellationGrace}, {"CommitInterval", c.CommitInterval}, {"RevokeTimeout", c.RevokeTimeout}, {"ShutdownTimeout", c.ShutdownTimeout}} {
		if d.v <= 0 {
			errs = append(errs, field.Errorf(d.field, "%v: must be positive", d.v))
		}
	}
	if c.BatchWindow < 0 || c.BatchWindow > maxBatchWindow {
		errs = append(errs, field.Errorf("BatchWindow", "%v: want 0 to %v", c.BatchWindow, maxBatchWindow))
	}
	return errors.Join(errs...)
}

// checkTopics checks the tiers, the topic names and the allowed targets.
func (c Config) checkTopics() []error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if c.Tiers.Len() == 0 {
		bad("Tiers", "no tiers")
	}
	if c.Prefix == "" {
		bad("Prefix", "must not be empty")
	}
	for _, t := range []struct{ field, topic string }{
		{"Target", c.Target}, {"DeadLetter", c.DeadLetter}, {"Outcomes", c.Outcomes}, {"Cancellations", c.Cancellations},
	} {
		if err := tiers.ValidTopic(t.topic); err != nil {
			bad(t.field, "%v", err)
		}
	}
	if err := tiers.ValidTopic(tiers.Topic(c.Prefix, c.Tiers.Largest())); err != nil {
		bad("Prefix", "%v", err)
	}
	if c.Prefix != "" && c.Tiers.Len() > 0 {
		if reason := c.forbidden(c.Target); reason != "" {
			bad("Target", "%s is %s", c.Target, reason)
		}
		if c.DeadLetter == c.Outcomes {
			bad("DeadLetter", "%s is also the outcomes topic", c.DeadLetter)
		}
		if strings.HasPrefix(c.DeadLetter, c.delayPrefix()) || strings.HasPrefix(c.Outcomes, c.delayPrefix()) {
			bad("DeadLetter", "the dead-letter and outcomes topics must not start with %s, the delay topics' prefix", c.delayPrefix())
		}
	}
	for _, pat := range c.AllowedTargets {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			bad("AllowedTargets", "%q: not a topic pattern (path.Match syntax: orders.*, *.cancel)", pat)
		}
	}
	return errs
}

// checkHeld checks the bounds of what the router holds.
func (c Config) checkHeld() []error {
	var errs []error
	for _, l := range []struct {
		field  string
		v, min int
		unit   string
	}{
		{"TimerCapacity", c.TimerCapacity, 1, "1"}, {"TimerBytes", c.TimerBytes, 1 << 20, "1 MiB"},
		{"MaxHeldPerPartition", c.MaxHeldPerPartition, 1, "1"},
		{"MaxHeldBytesPerPartition", c.MaxHeldBytesPerPartition, 1 << 20, "1 MiB"},
		{"MaxHeld", c.MaxHeld, 1, "1"},
		{"MaxHeldBytes", c.MaxHeldBytes, 1 << 20, "1 MiB"},
		{"MaxInFlightPerTarget", c.MaxInFlightPerTarget, 1, "1"},
		{"FetchPartitionBytes", int(c.FetchPartitionBytes), 1 << 10, "1024"},
	} {
		if l.v < l.min {
			errs = append(errs, field.Errorf(l.field, "%d: must be at least %s", l.v, l.unit))
		}
	}
	return errs
}

// delayPrefix is what every delay topic's name starts with.
func (c Config) delayPrefix() string { return record.DelayTopicPrefix(c.Prefix) }

// forbidden says why topic can never be a target, or "" if it can be one:
// a record sent to a delay topic would loop, and the dead-letter and
// outcomes topics must hold only what Hourglass itself writes there.
func (c Config) forbidden(topic string) string {
	switch {
	case strings.HasPrefix(topic, c.delayPrefix()):
		return "a delay topic"
	case topic == c.DeadLetter:
		return "the dead-letter topic"
	case topic == c.Outcomes:
		return "the outcomes topic"
	case topic == c.Cancellations:
		return "the cancellations topic"
	}
	return ""
}

// allowed says whether topic matches AllowedTargets.
func (c Config) allowed(topic string) bool {
	for _, p := range c.AllowedTargets {
		if ok, _ := path.Match(p, topic); ok {
			return true
		}
	}
	return false
}
