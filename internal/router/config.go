package router

import (
	"path"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup               = "hourglass-router"
	DefaultMaxDelay            = 365 * 24 * time.Hour
	DefaultTimerCapacity       = 10_000
	DefaultMaxHeldPerPartition = 1_000
	DefaultCommitInterval      = 50 * time.Millisecond
	DefaultShutdownTimeout     = 20 * time.Second
	DefaultRevokeTimeout       = 5 * time.Second
	// DefaultFetchPartitionBytes keeps a fetch of small, well-compressed
	// records to a few of the router's polls: what a poll leaves of a
	// partition it paused is decoded for nothing, and what the client
	// decodes ahead waits in memory (docs/benchmarks.md).
	DefaultFetchPartitionBytes = 32 << 10
	// DefaultBatchWindow is the router command's --batch-window: a few
	// milliseconds of lateness for deadlines that leave in batches.
	DefaultBatchWindow = 5 * time.Millisecond
	// maxBatchWindow bounds BatchWindow: it is lateness added to every
	// deadline.
	maxBatchWindow = time.Second
	// DefaultMaxHeldBytesPerPartition bounds what the records one partition
	// holds (waiting, in the timer, or being produced onward) take in
	// memory, whatever they contain.
	DefaultMaxHeldBytesPerPartition = 4 << 20
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
	// canceller's --outcomes-key-file); default none.
	OutcomesKey []byte
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
	// never fires one early. Zero wakes at each ready time; the router
	// command's --batch-window defaults to DefaultBatchWindow.
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

// RegisterFlags registers every field of c as a flag on fs, each with its
// HOURGLASS_* environment variable, and stores the defaults in c; the topic
// names stay empty, for WithTopicDefaults to derive from the prefix. Two
// flags need parsing that is reported with every other problem, after
// fs.Parse: call the returned function then; it stores --tiers and
// --fetch-partition-bytes in c and reports a bad value, naming the flag.
// SessionTimeout has no flag of its own here: the command sets it from the
// flag every service shares.
func (c *Config) RegisterFlags(fs *cli.FlagSet) (parsed func() []error) {
	env := cli.Env
	var rawTiers string
	var fetchBytes int
	topics.TiersVar(fs, &rawTiers, tiers.DefaultTiers, "delay tiers: comma-separated `durations`, one delay topic each")
	fs.StringVar(&c.Prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&c.Target, "target", env("target"), "", "`topic` for due records without hourglass-target (default <prefix>cancel)")
	fs.StringVar(&c.DeadLetter, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&c.Outcomes, "outcomes-topic", env("outcomes-topic"), "", "the canceller's outcome `topic`, never a target (default <prefix>outcomes)")
	fs.StringVar(&c.Cancellations, "cancellations-topic", env("cancellations-topic"), "", "compacted `topic` of cancellations, never a target (default <prefix>cancellations)")
	fs.StringVar(&c.CancellationsDir, "cancellations-dir", env("cancellations-dir"), "",
		"`directory` of the on-disk store of cancellations; keep it on a volume to skip rereading the topic after a restart (default: a temporary directory)")
	fs.DurationVar(&c.CancellationGrace, "cancellation-grace", env("cancellation-grace"), cancels.DefaultGrace, "how long a cancellation is kept after the furthest deadline it can call off was due (--max-delay after it was made)")
	fs.StringsVar(&c.AllowedTargets, "allowed-targets", env("allowed-targets"), nil,
		"topics a record may name in hourglass-target, comma-separated `patterns` (orders.*, *.cancel); others go to the dead-letter topic (default: --target only)")
	fs.StringVar(&c.Group, "group", env("group"), DefaultGroup, "consumer `group`")
	consumer.InstanceIDVar(fs, &c.InstanceID)
	fs.DurationVar(&c.MaxDelay, "max-delay", env("max-delay"), DefaultMaxDelay, "records due further ahead go to the dead-letter topic")
	fs.IntVar(&c.TimerCapacity, "timer-capacity", env("timer-capacity"), DefaultTimerCapacity,
		"records held in memory for delays shorter than the smallest tier; when full, partitions pause instead")
	fs.IntVar(&c.TimerBytes, "timer-bytes", env("timer-bytes"), DefaultTimerBytes, "`bytes` of records the in-memory timer holds at most")
	fs.IntVar(&c.MaxHeldPerPartition, "max-held-per-partition", env("max-held-per-partition"), DefaultMaxHeldPerPartition,
		"records a partition holds waiting out their tier before it is paused, and the most one poll takes")
	fs.IntVar(&c.MaxHeldBytesPerPartition, "max-held-bytes-per-partition", env("max-held-bytes-per-partition"), DefaultMaxHeldBytesPerPartition,
		"`bytes` the records a partition holds (waiting, in the timer or being produced) take in memory before it is paused")
	fs.IntVar(&c.MaxInFlightPerTarget, "max-in-flight-per-target", env("max-in-flight-per-target"), DefaultMaxInFlightPerTarget,
		"produces in flight to one topic at most; more wait, so that a failing topic cannot hold up the others")
	record.LimitsVar(fs, &c.Limits)
	fs.IntVar(&fetchBytes, "fetch-partition-bytes", env("fetch-partition-bytes"), DefaultFetchPartitionBytes, "most `bytes` fetched per partition at once")
	fs.DurationVar(&c.BatchWindow, "batch-window", env("batch-window"), DefaultBatchWindow,
		"what falls due within one window leaves together at its end, in one check of the cancellations and one produce batch; adds at most this to lateness (0: each at its instant)")
	fs.DurationVar(&c.CommitInterval, "commit-interval", env("commit-interval"), DefaultCommitInterval,
		"least time between two commits; offsets are committed as produces are acknowledged, so a crash repeats about this much")
	fs.DurationVar(&c.RevokeTimeout, "revoke-timeout", env("revoke-timeout"), DefaultRevokeTimeout, "how long a rebalance waits for produces in flight")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), DefaultShutdownTimeout, "bound on a graceful stop")
	return func() []error {
		var errs []error
		t, err := topics.ParseTiers(rawTiers)
		if err != nil {
			errs = append(errs, err)
		}
		c.Tiers = t
		c.FetchPartitionBytes = int32(fetchBytes)
		if fetchBytes < 1<<10 || fetchBytes > 1<<30 {
			errs = append(errs, cli.Errorf("fetch-partition-bytes", "%d: want %d to %d", fetchBytes, 1<<10, 1<<30))
			// Reported here: Validate is not to report it again.
			c.FetchPartitionBytes = DefaultFetchPartitionBytes
		}
		return errs
	}
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

// Validate reports every problem with c, naming fields by their flags. It
// does not apply defaults: a zero field that has a default is reported, so
// call it after WithDefaults unless zero values came from the user.
func (c Config) Validate() []error {
	var p cli.Problems
	c.checkTopics(&p)
	p = append(p, consumer.Group{Name: c.Group, InstanceID: c.InstanceID, SessionTimeout: c.SessionTimeout}.Check()...)
	c.checkLimits(&p)
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"max-delay", c.MaxDelay}, {"cancellation-grace", c.CancellationGrace}, {"commit-interval", c.CommitInterval}, {"revoke-timeout", c.RevokeTimeout}, {"shutdown-timeout", c.ShutdownTimeout}} {
		if d.v <= 0 {
			p.Add(d.flag, "%v: must be positive", d.v)
		}
	}
	if c.BatchWindow < 0 || c.BatchWindow > maxBatchWindow {
		p.Add("batch-window", "%v: want 0 to %v", c.BatchWindow, maxBatchWindow)
	}
	return p
}

// checkTopics checks the tiers, the topic names and the allowed targets.
func (c Config) checkTopics(p *cli.Problems) {
	if c.Tiers.Len() == 0 {
		p.Add("tiers", "no tiers")
	}
	if c.Prefix == "" {
		p.Add("topic-prefix", "must not be empty")
	}
	for _, t := range []struct{ flag, topic string }{
		{"target", c.Target}, {"dlq-topic", c.DeadLetter}, {"outcomes-topic", c.Outcomes}, {"cancellations-topic", c.Cancellations},
	} {
		if err := tiers.ValidTopic(t.topic); err != nil {
			p.Add(t.flag, "%v", err)
		}
	}
	if err := tiers.ValidTopic(tiers.Topic(c.Prefix, c.Tiers.Largest())); err != nil {
		p.Add("topic-prefix", "%v", err)
	}
	if c.Prefix != "" && c.Tiers.Len() > 0 {
		if reason := c.forbidden(c.Target); reason != "" {
			p.Add("target", "%s is %s", c.Target, reason)
		}
		if c.DeadLetter == c.Outcomes {
			p.Add("dlq-topic", "%s is also the outcomes topic", c.DeadLetter)
		}
		if strings.HasPrefix(c.DeadLetter, c.delayPrefix()) || strings.HasPrefix(c.Outcomes, c.delayPrefix()) {
			p.Add("dlq-topic", "the dead-letter and outcomes topics must not start with %s, the delay topics' prefix", c.delayPrefix())
		}
	}
	for _, pat := range c.AllowedTargets {
		if _, err := path.Match(pat, ""); err != nil || pat == "" {
			p.Add("allowed-targets", "%q: not a topic pattern (path.Match syntax: orders.*, *.cancel)", pat)
		}
	}
}

// checkLimits checks the record limits and the bounds of what the router
// holds.
func (c Config) checkLimits(p *cli.Problems) {
	record.CheckLimits(p, c.Limits)
	for _, l := range []struct {
		flag   string
		v, min int
		unit   string
	}{
		{"timer-capacity", c.TimerCapacity, 1, "1"}, {"timer-bytes", c.TimerBytes, 1 << 20, "1 MiB"},
		{"max-held-per-partition", c.MaxHeldPerPartition, 1, "1"},
		{"max-held-bytes-per-partition", c.MaxHeldBytesPerPartition, 1 << 20, "1 MiB"},
		{"max-in-flight-per-target", c.MaxInFlightPerTarget, 1, "1"},
		{"fetch-partition-bytes", int(c.FetchPartitionBytes), 1 << 10, "1024"},
	} {
		if l.v < l.min {
			p.Add(l.flag, "%d: must be at least %s", l.v, l.unit)
		}
	}
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
