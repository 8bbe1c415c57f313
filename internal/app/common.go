package app

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/telemetry"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults shared by the services.
const (
	DefaultPartitions = 6
	// DefaultSessionTimeout is the default of --session-timeout (see
	// kafka.DefaultSessionTimeout).
	DefaultSessionTimeout = kafka.DefaultSessionTimeout
)

// common are the flags every service has.
type common struct {
	Kafka          kafka.Config
	HTTPAddr       string
	LogLevel       string
	LogFormat      string
	CheckConfig    bool
	CreateTopics   bool
	Partitions     int
	Replication    int
	SessionTimeout time.Duration
	Pprof          bool
	LagInterval    time.Duration
}

// env is the environment variable of a flag.
var env = cli.Env

func (c *common) register(fs *cli.FlagSet, name, httpAddr string) {
	c.Kafka.RegisterFlags(fs, name)
	fs.StringVar(&c.HTTPAddr, "http-addr", env("http-addr"), httpAddr,
		"`address` of the HTTP server for /healthz, /readyz and /metrics (loopback by default; :port listens on every interface); empty disables it")
	fs.StringVar(&c.LogLevel, "log-level", env("log-level"), "info", "log `level`: debug, info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", env("log-format"), "text", "log `format`: text or json")
	fs.BoolVar(&c.CheckConfig, "check-config", env("check-config"), false,
		"validate the configuration, print it and exit (0 valid, 2 invalid)")
	fs.BoolVar(&c.CreateTopics, "create-topics", env("create-topics"), true,
		"create missing topics at start (existing topics are never altered; differences are logged)")
	fs.IntVar(&c.Partitions, "partitions", env("partitions"), DefaultPartitions,
		"partitions of topics created at start")
	fs.IntVar(&c.Replication, "replication-factor", env("replication-factor"), -1,
		"replication factor of topics created at start; -1 uses the broker default")
	fs.BoolVar(&c.Pprof, "pprof", env("pprof"), false, "serve Go profiles under /debug/pprof/ on --http-addr")
	fs.DurationVar(&c.LagInterval, "lag-interval", env("lag-interval"), telemetry.DefaultLagInterval, "how often hourglass_consumer_lag_records is refreshed")
	fs.DurationVar(&c.SessionTimeout, "session-timeout", env("session-timeout"), DefaultSessionTimeout,
		"consumer group session timeout: how long the partitions of an instance that died (and was not restarted) wait for another")
}

func (c *common) validate(fs *cli.FlagSet) checks {
	errs := checks(c.Kafka.Validate(fs))
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			errs.add("http-addr", "%q: want host:port or :port", c.HTTPAddr)
		}
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		errs.add("log-level", "%v", err)
	}
	if c.LogFormat != "text" && c.LogFormat != "json" {
		errs.add("log-format", "%q: want text or json", c.LogFormat)
	}
	errs.intRange("partitions", c.Partitions, 1, 10_000)
	if c.Replication == 0 || c.Replication < -1 || c.Replication > 32 {
		errs.add("replication-factor", "%d: want -1 (broker default) or 1 to 32", c.Replication)
	}
	if c.LagInterval < 100*time.Millisecond {
		errs.add("lag-interval", "%v: want at least 100ms", c.LagInterval)
	}
	if c.SessionTimeout < time.Second || c.SessionTimeout > 30*time.Minute {
		errs.add("session-timeout", "%v: want 1s to 30m", c.SessionTimeout)
	}
	return errs
}

// kgoOpts returns the connection options.
func (c *common) kgoOpts() ([]kgo.Opt, error) { return c.Kafka.Opts() }

// instanceID registers --instance-id, the static group membership of the
// router and the canceller.
func instanceID(fs *cli.FlagSet, v *string) {
	fs.StringVar(v, "instance-id", env("instance-id"), "",
		"static group membership `id`, unique per running instance (e.g. the pod name): a restarted instance takes its partitions back at once instead of after --session-timeout")
}

// readKey reads a signing key file: at least 16 bytes, a trailing newline
// trimmed. An empty path is no key.
func readKey(path string) ([]byte, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\r\n")
	if len(b) < 16 {
		return nil, fmt.Errorf("%s: %d bytes; a key needs at least 16", path, len(b))
	}
	return b, nil
}

func parseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return 0, fmt.Errorf("%q: want debug, info, warn or error", s)
	}
	return l, nil
}

func (c *common) logger(w io.Writer, name string) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if c.LogFormat == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	return slog.New(h).With("service", name)
}

// parseArgs parses args into fs. --help returns flag.ErrHelp (Main exits 0
// for it); a bad flag or a stray argument is a UsageError.
func parseArgs(fs *cli.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return UsageError{err}
	}
	if len(fs.Args()) > 0 {
		return UsageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	return nil
}

// parse parses a service's args into fs and validates them with check. It
// reports stop when the command has nothing more to do: after --help, or
// after printing the configuration for --check-config.
func parse(fs *cli.FlagSet, args []string, stdout io.Writer, c *common, check func() checks) (stop bool, err error) {
	if err := parseArgs(fs, args); err != nil {
		return true, err
	}
	errs := append(c.validate(fs), check()...)
	if err := fs.Explain(errs); err != nil {
		return true, UsageError{err}
	}
	if c.CheckConfig {
		fs.PrintConfig(stdout)
		fmt.Fprintln(stdout, "configuration is valid")
		return true, nil
	}
	return false, nil
}

// provision creates (or, with create false, only checks) the topics of
// specs on a short-lived client and reports what it found.
func provision(ctx context.Context, opts []kgo.Opt, specs []kafka.TopicSpec, create bool) ([]kafka.TopicStatus, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	st, err := kafka.EnsureTopics(ctx, kadm.NewClient(cl), specs, create)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	return st, nil
}

// ensureTopics provisions the topics a service needs at its start and logs
// what differs from the spec. It fails only when it cannot reach the
// brokers or create a missing topic.
func ensureTopics(ctx context.Context, opts []kgo.Opt, specs []kafka.TopicSpec, create bool, log *slog.Logger) error {
	st, err := provision(ctx, opts, specs, create)
	if err != nil {
		return err
	}
	for _, s := range st {
		switch {
		case s.Created:
			log.Info("created topic", "topic", s.Spec.Name, "partitions", s.Partitions)
		case len(s.Mismatches) > 0:
			log.Warn("topic differs from the recommended settings", "topic", s.Spec.Name, "differences", strings.Join(s.Mismatches, "; "))
		case !s.Existed:
			log.Warn("topic is missing; it is created by `hourglass topics` or --create-topics", "topic", s.Spec.Name)
		}
	}
	return nil
}

// checks collects configuration problems, each naming its flag.
type checks []error

func (c *checks) add(flag, format string, args ...any) {
	*c = append(*c, cli.Errorf(flag, format, args...))
}

// intRange reports v outside [lo, hi].
func (c *checks) intRange(flag string, v, lo, hi int) {
	if v < lo || v > hi {
		c.add(flag, "%d: want %d to %d", v, lo, hi)
	}
}

// tiers parses a tier list, reporting a bad one.
func (c *checks) tiers(flag, raw string) tiers.Table {
	t, err := tiers.Parse(raw)
	if err != nil {
		c.add(flag, "%v", err)
	}
	return t
}

// Topic retentions of TopicSpecs.
const (
	defaultRetention    = 7 * 24 * time.Hour
	deadLetterRetention = 30 * 24 * time.Hour
)

// TopicSet names the topics a command needs; empty names are left out.
type TopicSet struct {
	Prefix     string
	Tiers      tiers.Table
	Targets    []string
	Outcomes   string
	DeadLetter string
}

// TopicSpecs returns every topic of the set with the recommended settings:
// delay topics keep records 7 days or ten times the tier, whichever is
// longer; target and outcome topics 7 days; the dead-letter topic 30 days.
func TopicSpecs(set TopicSet, partitions int32, replicas int16) []kafka.TopicSpec {
	var specs []kafka.TopicSpec
	seen := map[string]bool{}
	add := func(name string, retention time.Duration) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		specs = append(specs, kafka.TopicSpec{Name: name, Partitions: partitions, Replicas: replicas,
			Configs: map[string]string{"retention.ms": fmt.Sprint(retention.Milliseconds()), "cleanup.policy": "delete"}})
	}
	for _, d := range set.Tiers.Durations() {
		add(tiers.Topic(set.Prefix, d), max(defaultRetention, 10*d))
	}
	add(set.DeadLetter, deadLetterRetention)
	for _, t := range set.Targets {
		add(t, defaultRetention)
	}
	add(set.Outcomes, defaultRetention)
	return specs
}

// DefaultTopicSet is every topic of a pipeline with the default names for
// prefix: the delay topics, cancel, outcomes and dlq.
func DefaultTopicSet(prefix string, table tiers.Table) TopicSet {
	return TopicSet{Prefix: prefix, Tiers: table, Targets: []string{tiers.CancelTopic(prefix)},
		Outcomes: tiers.OutcomesTopic(prefix), DeadLetter: tiers.DeadLetterTopic(prefix)}
}

// serveHTTP serves /healthz (the process is up), /readyz (ready() is true),
// /metrics and, with pprofOn, Go's profiles on addr until ctx is canceled.
func serveHTTP(ctx context.Context, addr string, ready func() bool, gatherer prometheus.Gatherer, pprofOn bool, log *slog.Logger) error {
	if addr == "" {
		<-ctx.Done()
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(gatherer, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}))
	if pprofOn {
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok\n") })
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !ready() {
			http.Error(w, "not ready", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "ready\n")
	})
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("http: %w", err)
	}
	log.Info("http listening", "addr", ln.Addr().String())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second, IdleTimeout: 60 * time.Second}
	if !pprofOn {
		// A CPU profile or trace streams for as long as it was asked for.
		srv.WriteTimeout = 30 * time.Second
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("http: %w", err)
	}
	return nil
}
