package recorder

import (
	"errors"
	"time"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup           = "hourglass-recorder"
	DefaultBatchRows       = 5000
	DefaultFlushInterval   = time.Second
	DefaultInsertTimeout   = 30 * time.Second
	DefaultRetryMin        = 100 * time.Millisecond //nolint:revive // Min is the minimum, not minutes
	DefaultRetryMax        = 10 * time.Second
	DefaultShutdownTimeout = 20 * time.Second
)

// Config is the recorder's behaviour; the Kafka connection and the
// ClickHouse store are passed to New. Zero fields take the defaults named on
// them (WithDefaults).
type Config struct {
	// Topic is the outcomes topic; default tiers.OutcomesTopic of
	// tiers.DefaultPrefix ("hourglass.outcomes").
	Topic string
	// Group is the consumer group; default DefaultGroup
	// ("hourglass-recorder").
	Group string
	// BatchRows is how many records make a batch (outcome events and, with
	// Index, the records indexed): the batch is inserted when it has that
	// many, or FlushInterval after its first record, whichever comes
	// first. Default DefaultBatchRows (5000).
	BatchRows int
	// FlushInterval bounds how long an event waits in a batch; default
	// DefaultFlushInterval (1s).
	FlushInterval time.Duration
	// InsertTimeout bounds one insert attempt; default
	// DefaultInsertTimeout (30s).
	InsertTimeout time.Duration
	// RetryMin is the wait after the first failed insert; each further
	// failure doubles it up to RetryMax. Default DefaultRetryMin (100ms).
	RetryMin time.Duration
	// RetryMax caps the wait between insert attempts; default
	// DefaultRetryMax (10s).
	RetryMax time.Duration
	// ShutdownTimeout bounds the graceful stop (the last insert and
	// commit); default DefaultShutdownTimeout (20s).
	ShutdownTimeout time.Duration
	// SessionTimeout is the group session timeout; default
	// consumer.DefaultSessionTimeout (6s).
	SessionTimeout time.Duration
	// OutcomesKey, when set, makes the recorder store only events signed
	// with it by the canceller (outcome.HeaderSignature); others are
	// counted and skipped. Default none: every event is stored.
	OutcomesKey []byte
	// Index, when set, makes the recorder index the deadlines too (see
	// the package documentation); nil: only outcome events are recorded.
	Index *Index
}

// Index is what the recorder indexes, besides the outcome events: every
// delay topic of Prefix, the cancellations and the dead letters.
type Index struct {
	// Prefix selects the delay topics: every topic tiers.TopicPattern
	// matches, whatever the tiers; default tiers.DefaultPrefix.
	Prefix string
	// Cancellations is the cancellations topic; default
	// tiers.CancellationsTopic(Prefix).
	Cancellations string
	// DeadLetters is the dead-letter topic; default
	// tiers.DeadLetterTopic(Prefix).
	DeadLetters string
}

// withDefaults returns x with every empty field set to its default.
func (x Index) withDefaults() Index {
	if x.Prefix == "" {
		x.Prefix = tiers.DefaultPrefix
	}
	if x.Cancellations == "" {
		x.Cancellations = tiers.CancellationsTopic(x.Prefix)
	}
	if x.DeadLetters == "" {
		x.DeadLetters = tiers.DeadLetterTopic(x.Prefix)
	}
	return x
}

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Topic == "" {
		c.Topic = tiers.OutcomesTopic(tiers.DefaultPrefix)
	}
	if c.Group == "" {
		c.Group = DefaultGroup
	}
	if c.BatchRows == 0 {
		c.BatchRows = DefaultBatchRows
	}
	if c.FlushInterval == 0 {
		c.FlushInterval = DefaultFlushInterval
	}
	if c.InsertTimeout == 0 {
		c.InsertTimeout = DefaultInsertTimeout
	}
	if c.RetryMin == 0 {
		c.RetryMin = DefaultRetryMin
	}
	if c.RetryMax == 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = DefaultShutdownTimeout
	}
	if c.SessionTimeout == 0 {
		c.SessionTimeout = consumer.DefaultSessionTimeout
	}
	if c.Index != nil {
		x := c.Index.withDefaults()
		c.Index = &x
	}
	return c
}

// maxBatchRows bounds BatchRows: a batch is held in memory while ClickHouse
// is down.
const maxBatchRows = 1_000_000

// Validate reports every problem with c, each a *field.Error naming the
// field. It does not apply defaults: a zero field that has a default is
// reported, so call it after WithDefaults unless zero values came from the
// user.
func (c Config) Validate() error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if err := tiers.ValidTopic(c.Topic); err != nil {
		bad("Topic", "%v", err)
	}
	if c.Group == "" {
		bad("Group", "must not be empty")
	}
	if c.BatchRows < 1 || c.BatchRows > maxBatchRows {
		bad("BatchRows", "%d: want 1 to %d", c.BatchRows, maxBatchRows)
	}
	for _, d := range []struct {
		field string
		v     time.Duration
	}{
		{"FlushInterval", c.FlushInterval}, {"InsertTimeout", c.InsertTimeout},
		{"RetryMin", c.RetryMin}, {"RetryMax", c.RetryMax}, {"ShutdownTimeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			bad(d.field, "%v: must be positive", d.v)
		}
	}
	if x := c.Index; x != nil {
		for _, t := range []struct{ field, name string }{
			{"Index.Cancellations", x.Cancellations}, {"Index.DeadLetters", x.DeadLetters},
		} {
			if err := tiers.ValidTopic(t.name); err != nil {
				bad(t.field, "%v", err)
			}
		}
		if x.Prefix == "" {
			bad("Index.Prefix", "must not be empty")
		}
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMax < c.RetryMin {
		bad("RetryMax", "%v is less than %s %v", c.RetryMax, field.Ref("RetryMin"), c.RetryMin)
	}
	return errors.Join(errs...)
}
