package service

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/internal/topics"
)

// DefaultSessionTimeout is the default of --session-timeout (see
// consumer.DefaultSessionTimeout).
const DefaultSessionTimeout = consumer.DefaultSessionTimeout

// Common are the flags every service has.
type Common struct {
	// Kafka is the connection (--brokers, --tls-*, --sasl-*).
	Kafka kafka.Config
	// HTTPAddr is the address of ServeHTTP (--http-addr); empty: none.
	HTTPAddr string
	// LogLevel is debug, info, warn or error (--log-level); default info.
	LogLevel string
	// LogFormat is text or json (--log-format); default text.
	LogFormat string
	// CheckConfig validates, prints the configuration and exits
	// (--check-config).
	CheckConfig bool
	// CreateTopics creates missing topics at start (--create-topics);
	// default true.
	CreateTopics bool
	// Partitions of the topics created at start (--partitions); default
	// topics.DefaultPartitions.
	Partitions int
	// PartitionsGiven is true when --partitions (or its environment
	// variable) was given: existing topics with another count are then
	// logged as differing. False: their count is whoever created them's
	// choice, and only created topics get Partitions. Parse sets it.
	PartitionsGiven bool
	// Replication of the topics created at start (--replication-factor);
	// default -1, the broker's.
	Replication int
	// SessionTimeout is the consumer group session timeout
	// (--session-timeout); default DefaultSessionTimeout.
	SessionTimeout time.Duration
	// Pprof serves Go's profiles on HTTPAddr (--pprof).
	Pprof bool
	// LagInterval is how often the consumer lag gauge is refreshed
	// (--lag-interval); default telemetry.DefaultLagInterval.
	LagInterval time.Duration
	// ScaleProcs is --scale-procs, deprecated: accepted so that existing
	// configurations still start, and ignored (LogDeprecated says so).
	ScaleProcs bool
}

// env is the environment variable of a flag.
var env = cli.Env

// Sections of a service's --help, after Essential, in order; Register puts
// the common flags into them, and each service its own.
const (
	SectionTopics        = "Tiers and topics"
	SectionLimits        = "Limits"
	SectionTiming        = "Timing"
	SectionKafka         = flags.SectionKafka
	SectionObservability = "Observability"
	SectionAdvanced      = "Advanced"
)

// Register registers the common flags on fs with their defaults: name is the
// default Kafka client ID, httpAddr the default of --http-addr. The flags
// go into the sections of a service's help (SectionKafka, ...), in the order
// those have unless fs has one already; --brokers is Essential.
func (c *Common) Register(fs *cli.FlagSet, name, httpAddr string) {
	fs.Sections(SectionTopics, SectionLimits, SectionTiming, SectionKafka, SectionObservability, SectionAdvanced)
	fs.Section(SectionKafka)
	flags.Kafka(fs, &c.Kafka, name)
	fs.Section(SectionObservability)
	fs.StringVar(&c.HTTPAddr, "http-addr", env("http-addr"), httpAddr,
		"`address` of the HTTP server for /healthz, /readyz and /metrics (loopback by default; :port listens on every interface); empty disables it")
	fs.StringVar(&c.LogLevel, "log-level", env("log-level"), "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", env("log-format"), "text", "log `format`: text or json")
	fs.Section(SectionAdvanced)
	fs.BoolVar(&c.CheckConfig, "check-config", env("check-config"), false,
		"validate the configuration, print it and exit (0 valid, 2 invalid)")
	fs.Section(SectionTopics)
	fs.BoolVar(&c.CreateTopics, "create-topics", env("create-topics"), true,
		"create missing topics at start (existing topics are never altered; differences are logged)")
	fs.IntVar(&c.Partitions, "partitions", env("partitions"), topics.DefaultPartitions,
		"partitions of topics created at start")
	fs.IntVar(&c.Replication, "replication-factor", env("replication-factor"), -1,
		"replication factor of topics created at start; -1 uses the broker default")
	fs.Section(SectionObservability)
	fs.BoolVar(&c.Pprof, "pprof", env("pprof"), false, "serve Go profiles under /debug/pprof/ on --http-addr")
	fs.DurationVar(&c.LagInterval, "lag-interval", env("lag-interval"), telemetry.DefaultLagInterval, "how often hourglass_consumer_lag_records is refreshed")
	fs.Section(SectionAdvanced)
	fs.BoolVar(&c.ScaleProcs, "scale-procs", env("scale-procs"), false,
		"deprecated and ignored: the service runs on GOMAXPROCS processors (docs/configuration.md)")
	fs.Section(SectionTiming)
	fs.DurationVar(&c.SessionTimeout, "session-timeout", env("session-timeout"), DefaultSessionTimeout,
		"consumer group session timeout: how long the partitions of an instance that died (and was not restarted) wait for another")
	fs.Section("")
	fs.Essential("brokers")
}

// Validate reports every problem with the common flags, each naming its
// flag.
func (c *Common) Validate(fs *cli.FlagSet) error {
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &c.Kafka))
	if c.HTTPAddr != "" {
		if _, port, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs.Add("http-addr", "%q: want host:port or :port", c.HTTPAddr)
		} else if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			errs.Add("http-addr", "%q: bad port %q: want 0 to 65535 (0: any free port)", c.HTTPAddr, port)
		}
	}
	if _, err := ParseLevel(c.LogLevel); err != nil {
		errs.Add("log-level", "%v", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs.Add("log-format", "%q: want text or json", c.LogFormat)
	}
	errs.IntRange("partitions", c.Partitions, 1, 10_000)
	errs.Join(flags.CheckReplication(c.Replication))
	if c.LagInterval < 100*time.Millisecond {
		errs.Add("lag-interval", "%v: want at least 100ms", c.LagInterval)
	}
	if c.SessionTimeout < time.Second || c.SessionTimeout > 30*time.Minute {
		errs.Add("session-timeout", "%v: want 1s to 30m", c.SessionTimeout)
	}
	return errs.Err()
}

// LogDeprecated logs a warning for each deprecated flag the configuration
// sets, so that an operator learns it does nothing before it is removed.
func (c *Common) LogDeprecated(log *slog.Logger) {
	if c.ScaleProcs {
		log.Warn("--scale-procs (HOURGLASS_SCALE_PROCS) is deprecated and ignored: the service runs on GOMAXPROCS processors")
	}
}

// KgoOpts returns the connection options.
func (c *Common) KgoOpts() ([]kgo.Opt, error) { return flags.KafkaOpts(&c.Kafka) }

// Specs returns the specs of set with the partitions and replication of the
// flags; without PartitionsGiven, the partitions are only those of the
// topics created (topics.PartitionsOnCreate).
func (c *Common) Specs(set topics.Set) []topics.Spec {
	specs := topics.Specs(set, int32(c.Partitions), int16(c.Replication))
	if !c.PartitionsGiven {
		topics.PartitionsOnCreate(specs)
	}
	return specs
}

// Logger returns the logger of the --log-level and --log-format flags,
// writing to w, with service=name on every line.
func (c *Common) Logger(w io.Writer, name string) *slog.Logger {
	level, _ := ParseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("service", name)
}
