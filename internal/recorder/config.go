package recorder

import (
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	DefaultGroup           = "hourglass-recorder"
	DefaultBatchRows       = 5000
	DefaultFlushInterval   = time.Second
	DefaultInsertTimeout   = 30 * time.Second
	DefaultRetryMin        = 100 * time.Millisecond
	DefaultRetryMax        = 10 * time.Second
	DefaultShutdownTimeout = 20 * time.Second
)

// Config is the recorder's behaviour; the Kafka connection and the
// ClickHouse store are passed to New. Zero fields take the defaults named on
// them (WithDefaults).
type Config struct {
	// Topic is the outcomes topic; default tiers.OutcomesTopic of
	// tiers.DefaultPrefix ("hourglass.outcomes"). --outcomes-topic.
	Topic string
	// Group is the consumer group; default DefaultGroup
	// ("hourglass-recorder"). --group.
	Group string
	// BatchRows is how many events make a batch: the batch is inserted when
	// it has that many, or FlushInterval after its first event, whichever
	// comes first. Default DefaultBatchRows (5000). --batch-rows.
	BatchRows int
	// FlushInterval bounds how long an event waits in a batch; default
	// DefaultFlushInterval (1s). --flush-interval.
	FlushInterval time.Duration
	// InsertTimeout bounds one insert attempt; default
	// DefaultInsertTimeout (30s). --insert-timeout.
	InsertTimeout time.Duration
	// RetryMin is the wait after the first failed insert; each further
	// failure doubles it up to RetryMax. Default DefaultRetryMin (100ms).
	// --retry-min.
	RetryMin time.Duration
	// RetryMax caps the wait between insert attempts; default
	// DefaultRetryMax (10s). --retry-max.
	RetryMax time.Duration
	// ShutdownTimeout bounds the graceful stop (the last insert and
	// commit); default DefaultShutdownTimeout (20s). --shutdown-timeout.
	ShutdownTimeout time.Duration
	// SessionTimeout is the group session timeout; default
	// consumer.DefaultSessionTimeout (6s). --session-timeout.
	SessionTimeout time.Duration
	// OutcomesKey, when set, makes the recorder store only events signed
	// with it by the canceller (outcome.HeaderSignature); others are
	// counted and skipped. Default none: every event is stored.
	// --outcomes-key-file.
	OutcomesKey []byte
}

// RegisterFlags registers every field of c as a flag on fs, each with its
// HOURGLASS_* environment variable, and stores the defaults in c; Topic
// stays empty, for the command to derive from its --topic-prefix.
// SessionTimeout and OutcomesKey have no flag here: the command sets them
// from the flag every service shares and from the key file.
func (c *Config) RegisterFlags(fs *cli.FlagSet) {
	env := cli.Env
	fs.StringVar(&c.Topic, "outcomes-topic", env("outcomes-topic"), "", "`topic` of outcome events (default <prefix>outcomes)")
	fs.StringVar(&c.Group, "group", env("group"), DefaultGroup, "consumer `group`")
	fs.IntVar(&c.BatchRows, "batch-rows", env("batch-rows"), DefaultBatchRows, "events per insert at most")
	fs.DurationVar(&c.FlushInterval, "flush-interval", env("flush-interval"), DefaultFlushInterval, "longest wait of an event before its batch is inserted")
	fs.DurationVar(&c.InsertTimeout, "insert-timeout", env("insert-timeout"), DefaultInsertTimeout, "bound on one insert attempt")
	fs.DurationVar(&c.RetryMin, "retry-min", env("retry-min"), DefaultRetryMin, "wait after a failed insert; doubled at each failure")
	fs.DurationVar(&c.RetryMax, "retry-max", env("retry-max"), DefaultRetryMax, "longest wait between insert attempts")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), DefaultShutdownTimeout, "bound on a graceful stop (the last insert and commit)")
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
	return c
}

// maxBatchRows bounds BatchRows: a batch is held in memory while ClickHouse
// is down.
const maxBatchRows = 1_000_000

// Validate reports every problem with c, naming fields by their flags. It
// does not apply defaults: a zero field that has a default is reported, so
// call it after WithDefaults unless zero values came from the user.
func (c Config) Validate() []error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, cli.Errorf(flag, format, args...))
	}
	if err := tiers.ValidTopic(c.Topic); err != nil {
		bad("outcomes-topic", "%v", err)
	}
	if c.Group == "" {
		bad("group", "must not be empty")
	}
	if c.BatchRows < 1 || c.BatchRows > maxBatchRows {
		bad("batch-rows", "%d: want 1 to %d", c.BatchRows, maxBatchRows)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"flush-interval", c.FlushInterval}, {"insert-timeout", c.InsertTimeout},
		{"retry-min", c.RetryMin}, {"retry-max", c.RetryMax}, {"shutdown-timeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			bad(d.flag, "%v: must be positive", d.v)
		}
	}
	if c.RetryMin > 0 && c.RetryMax > 0 && c.RetryMax < c.RetryMin {
		bad("retry-max", "%v is less than --retry-min %v", c.RetryMax, c.RetryMin)
	}
	return errs
}
