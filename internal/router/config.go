package router

import (
	"time"

	"github.com/hourglass/hourglass/internal/cli"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup               = "hourglass-router"
	DefaultMaxDelay            = 365 * 24 * time.Hour
	DefaultTimerCapacity       = 10_000
	DefaultMaxHeldPerPartition = 1_000
	DefaultCommitInterval      = time.Second
	DefaultShutdownTimeout     = 20 * time.Second
	DefaultRevokeTimeout       = 5 * time.Second
	DefaultFetchPartitionBytes = 256 << 10
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
	// Group is the consumer group; default DefaultGroup.
	Group string
	// MaxDelay rejects records due further ahead than this (to the
	// dead-letter topic); default DefaultMaxDelay (365 days).
	MaxDelay time.Duration
	// TimerCapacity bounds the records held in memory waiting for a due time
	// shorter than the smallest tier. When it is full, such a record waits at
	// the head of its partition, which is paused; default
	// DefaultTimerCapacity.
	TimerCapacity int
	// MaxHeldPerPartition is how many records a partition may hold waiting
	// out their tier before the router pauses fetching it; default
	// DefaultMaxHeldPerPartition.
	MaxHeldPerPartition int
	// FetchPartitionBytes bounds what one fetch returns per partition, and so
	// what a partition can hold beyond MaxHeldPerPartition; default
	// DefaultFetchPartitionBytes (256 KiB).
	FetchPartitionBytes int32
	// CommitInterval is how often the watermarks are committed; default
	// DefaultCommitInterval.
	CommitInterval time.Duration
	// RevokeTimeout bounds how long a revoke waits for produces in flight
	// before committing what is done; default DefaultRevokeTimeout.
	RevokeTimeout time.Duration
	// ShutdownTimeout bounds a graceful stop; default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Tiers.Len() == 0 {
		c.Tiers = tiers.DefaultTable()
	}
	if c.Prefix == "" {
		c.Prefix = tiers.DefaultPrefix
	}
	if c.Target == "" {
		c.Target = tiers.CancelTopic(c.Prefix)
	}
	if c.DeadLetter == "" {
		c.DeadLetter = tiers.DeadLetterTopic(c.Prefix)
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.MaxDelay == 0 {
		c.MaxDelay = DefaultMaxDelay
	}
	if c.TimerCapacity == 0 {
		c.TimerCapacity = DefaultTimerCapacity
	}
	if c.MaxHeldPerPartition == 0 {
		c.MaxHeldPerPartition = DefaultMaxHeldPerPartition
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
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, cli.Errorf(flag, format, args...))
	}
	if c.Tiers.Len() == 0 {
		bad("tiers", "no tiers")
	}
	if c.Prefix == "" {
		bad("topic-prefix", "must not be empty")
	}
	for _, t := range []struct{ flag, topic string }{
		{"target", c.Target}, {"dlq-topic", c.DeadLetter},
	} {
		if err := tiers.ValidTopic(t.topic); err != nil {
			bad(t.flag, "%v", err)
		}
	}
	if err := tiers.ValidTopic(tiers.Topic(c.Prefix, c.Tiers.Largest())); err != nil {
		bad("topic-prefix", "%v", err)
	}
	for _, topic := range c.Tiers.Topics(c.Prefix) {
		if topic == c.Target || topic == c.DeadLetter {
			bad("target", "%s is also a delay topic", topic)
		}
	}
	if c.Group == "" {
		bad("group", "must not be empty")
	}
	if c.MaxDelay <= 0 {
		bad("max-delay", "%v: must be positive", c.MaxDelay)
	}
	if c.TimerCapacity < 1 {
		bad("timer-capacity", "%d: must be at least 1", c.TimerCapacity)
	}
	if c.MaxHeldPerPartition < 1 {
		bad("max-held-per-partition", "%d: must be at least 1", c.MaxHeldPerPartition)
	}
	if c.FetchPartitionBytes < 1<<10 {
		bad("fetch-partition-bytes", "%d: must be at least 1024", c.FetchPartitionBytes)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"commit-interval", c.CommitInterval}, {"revoke-timeout", c.RevokeTimeout}, {"shutdown-timeout", c.ShutdownTimeout}} {
		if d.v <= 0 {
			bad(d.flag, "%v: must be positive", d.v)
		}
	}
	return errs
}
