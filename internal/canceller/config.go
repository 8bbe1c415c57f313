package canceller

import (
	"errors"
	"math"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup           = "hourglass-canceller"
	DefaultKind            = "order-timeout"
	DefaultCloseTimeout    = 10 * time.Second
	DefaultCommitInterval  = 50 * time.Millisecond
	DefaultShutdownTimeout = 20 * time.Second
	DefaultMaxPollRecords  = 1000
	// DefaultMaxInFlight bounds the closes at once of a closer that
	// sends a request for each (an http closer without batch_url), and
	// DefaultMaxInFlightBatched those of closers that all batch what is
	// in flight (closer.Batcher: sql, kafka, log, http with batch_url),
	// so that the closes of a burst go out in a few large batches.
	// DefaultMaxInFlightBytes keeps the records closing at once small in
	// memory whatever their size.
	DefaultMaxInFlight        = 100
	DefaultMaxInFlightBatched = 1000
	DefaultMaxInFlightBytes   = 64 << 20
	DefaultRateBurst          = 1
	DefaultMaxAttempts        = 10
	DefaultRetryBackoff       = time.Second
	DefaultRetryBackoffMax    = 10 * time.Minute
)

// Config is the canceller's behaviour; the Kafka connection is passed to New
// as kgo options. Zero fields take the defaults named on them.
type Config struct {
	// Prefix is the topic prefix; default tiers.DefaultPrefix.
	Prefix string
	// Topics are the target topics to consume; default [Prefix + "cancel"].
	Topics []string
	// Outcomes is the topic of outcome events; default Prefix + "outcomes".
	Outcomes string
	// DeadLetter is the dead-letter topic; default Prefix + "dlq".
	DeadLetter string
	// Group is the consumer group; default DefaultGroup.
	Group string
	// InstanceID makes the canceller a static member of its group:
	// restarted with the same id, it takes its partitions back at once
	// instead of after SessionTimeout. Default "": a dynamic member.
	InstanceID string
	// SessionTimeout is the group session timeout: how long the partitions
	// of a canceller that died (and was not restarted) wait before another
	// takes them; default consumer.DefaultSessionTimeout (6s).
	SessionTimeout time.Duration
	// OutcomesKey, when set, signs every outcome event (the
	// outcome.HeaderSignature header), so that the recorder stores only
	// events this canceller wrote. Default none: events are not signed.
	OutcomesKey []byte
	// DefaultKind is the kind of tasks without hourglass-kind; default
	// DefaultKind ("order-timeout").
	DefaultKind string
	// CloseTimeout bounds one close; default DefaultCloseTimeout.
	CloseTimeout time.Duration
	// MaxPollRecords bounds the records taken per poll; default
	// DefaultMaxPollRecords.
	MaxPollRecords int
	// CommitInterval is the least time between two commits. Offsets are
	// committed as soon as closes and their events are acknowledged, at most
	// this often, so a crash repeats about this much work; default
	// DefaultCommitInterval.
	CommitInterval time.Duration
	// ShutdownTimeout bounds a graceful stop, and a revoke: the wait for
	// the closes running (each bounded by CloseTimeout, and never cut off
	// by the stop) and their events. It must be at least CloseTimeout;
	// default DefaultShutdownTimeout.
	ShutdownTimeout time.Duration
	// Instance names this canceller in outcome events; default InstanceID,
	// else the host name.
	Instance string

	// Tiers are the delay tiers a failed close is rescheduled through; the
	// router's table. Default tiers.DefaultTable().
	Tiers tiers.Table
	// Limits bound the key, headers and value of a task record; a larger
	// one goes to the dead-letter topic. They must be the router's: a
	// record within the router's limits is forwarded, and refused here it
	// would be dead-lettered unclosed. Zero fields take the tiers.Limits
	// defaults, as the router's do.
	Limits tiers.Limits
	// MaxInFlight bounds the records taken and not yet finished, closes
	// running or waiting: the records held in memory, the closes a closer
	// can batch, and the requests at once of an http closer without
	// batch_url. Two records of the same task id never close at once: the
	// later waits for the earlier, and while it waits it does not count
	// here (MaxInFlightBytes bounds it), so that the records of one task
	// id cannot hold up the others. Zero: DefaultMaxInFlightBatched when
	// every closer batches (closer.Batcher), else DefaultMaxInFlight; New
	// decides.
	MaxInFlight int
	// MaxInFlightBytes bounds the bytes of the records taken and not yet
	// finished (keys, values and headers): no more are taken while they
	// hold this much. Default DefaultMaxInFlightBytes (64 MiB).
	MaxInFlightBytes int
	// RateLimit bounds closes per second over all kinds (a token bucket of
	// RateBurst tokens), so a backlog after an outage cannot flood the
	// order store. Zero means no limit; this is the default.
	RateLimit float64
	// RateBurst is the bucket size of RateLimit; default DefaultRateBurst.
	RateBurst int
	// MaxAttempts is how many times a close is tried before the task goes
	// to the dead-letter topic; default DefaultMaxAttempts. 1 means no
	// retry.
	MaxAttempts int
	// RetryBackoff is the wait before the second attempt; each further
	// attempt doubles it, up to RetryBackoffMax, and a random half of it is
	// jitter. Default DefaultRetryBackoff.
	RetryBackoff time.Duration
	// RetryBackoffMax caps the wait between attempts; default
	// DefaultRetryBackoffMax.
	RetryBackoffMax time.Duration
}

// WithTopicDefaults returns c with the topic names it leaves empty derived
// from Prefix: Topics, Outcomes and DeadLetter. Every other field is left
// as it is.
func (c Config) WithTopicDefaults() Config {
	if len(c.Topics) == 0 {
		c.Topics = []string{tiers.CancelTopic(c.Prefix)}
	}
	if c.Outcomes == "" {
		c.Outcomes = tiers.OutcomesTopic(c.Prefix)
	}
	if c.DeadLetter == "" {
		c.DeadLetter = tiers.DeadLetterTopic(c.Prefix)
	}
	return c
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = tiers.DefaultPrefix
	}
	c = c.WithTopicDefaults()
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = consumer.DefaultSessionTimeout
	}
	if c.DefaultKind == "" {
		c.DefaultKind = DefaultKind
	}
	if c.CloseTimeout == 0 {
		c.CloseTimeout = DefaultCloseTimeout
	}
	if c.MaxPollRecords == 0 {
		c.MaxPollRecords = DefaultMaxPollRecords
	}
	if c.CommitInterval == 0 {
		c.CommitInterval = DefaultCommitInterval
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.Tiers.Len() == 0 {
		c.Tiers = tiers.DefaultTable()
	}
	c.Limits = c.Limits.WithDefaults()
	if c.MaxInFlightBytes == 0 {
		c.MaxInFlightBytes = DefaultMaxInFlightBytes
	}
	if c.RateBurst == 0 {
		c.RateBurst = DefaultRateBurst
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = DefaultMaxAttempts
	}
	if c.RetryBackoff == 0 {
		c.RetryBackoff = DefaultRetryBackoff
	}
	if c.RetryBackoffMax == 0 {
		c.RetryBackoffMax = DefaultRetryBackoffMax
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
	errs = append(errs, field.Rename(group, consumer.ConfigField))
	errs = append(errs, c.checkTimes()...)
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if c.DefaultKind == "" {
		bad("DefaultKind", "must not be empty")
	}
	if c.MaxPollRecords < 1 {
		bad("MaxPollRecords", "%d: must be at least 1", c.MaxPollRecords)
	}
	if c.MaxInFlight < 0 {
		bad("MaxInFlight", "%d: must be at least 1 (0: by the closers)", c.MaxInFlight)
	}
	if c.MaxInFlightBytes < 1<<10 {
		bad("MaxInFlightBytes", "%d: must be at least 1024", c.MaxInFlightBytes)
	}
	if c.RateLimit < 0 || math.IsNaN(c.RateLimit) || math.IsInf(c.RateLimit, 0) {
		bad("RateLimit", "%v: must be a number of closes per second, 0 for no limit", c.RateLimit)
	}
	if c.RateBurst < 1 {
		bad("RateBurst", "%d: must be at least 1", c.RateBurst)
	}
	if c.MaxAttempts < 1 {
		bad("MaxAttempts", "%d: must be at least 1", c.MaxAttempts)
	}
	errs = append(errs, field.In("Limits", record.CheckLimits(c.Limits)))
	return errors.Join(errs...)
}

// checkTopics checks the tiers and the topic names.
func (c Config) checkTopics() []error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if c.Prefix == "" {
		bad("Prefix", "must not be empty")
	}
	if c.Tiers.Len() == 0 {
		bad("Tiers", "no tiers")
	}
	if len(c.Topics) == 0 {
		bad("Topics", "no topics")
	}
	for _, t := range c.Topics {
		if err := tiers.ValidTopic(t); err != nil {
			bad("Topics", "%v", err)
		}
		if t == c.Outcomes || t == c.DeadLetter {
			bad("Topics", "%s is also the outcomes or dead-letter topic", t)
		}
		if c.Prefix != "" && strings.HasPrefix(t, record.DelayTopicPrefix(c.Prefix)) {
			bad("Topics", "%s is a delay topic: a retry would loop", t)
		}
	}
	if err := tiers.ValidTopic(c.Outcomes); err != nil {
		bad("Outcomes", "%v", err)
	}
	if err := tiers.ValidTopic(c.DeadLetter); err != nil {
		bad("DeadLetter", "%v", err)
	}
	return errs
}

// checkTimes checks the timeouts and the retry backoff.
func (c Config) checkTimes() []error {
	var errs []error
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"CloseTimeout", c.CloseTimeout}, {"CommitInterval", c.CommitInterval}, {"ShutdownTimeout", c.ShutdownTimeout},
		{"RetryBackoff", c.RetryBackoff}, {"RetryBackoffMax", c.RetryBackoffMax},
	} {
		if d.v <= 0 {
			errs = append(errs, field.Errorf(d.field, "%v: must be positive", d.v))
		}
	}
	if c.ShutdownTimeout > 0 && c.ShutdownTimeout < c.CloseTimeout {
		errs = append(errs, field.Errorf("ShutdownTimeout", "%v is less than %s %v: a stop would cut off a running close",
			c.ShutdownTimeout, field.Ref("CloseTimeout"), c.CloseTimeout))
	}
	if c.RetryBackoff > 0 && c.RetryBackoffMax > 0 && c.RetryBackoffMax < c.RetryBackoff {
		errs = append(errs, field.Errorf("RetryBackoffMax", "%v is less than %s %v", c.RetryBackoffMax, field.Ref("RetryBackoff"), c.RetryBackoff))
	}
	return errs
}
