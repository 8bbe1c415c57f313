package consolecmd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/chflags"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/console"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const consoleUsage = `hourglass console serves a web console of the pipeline: the deadlines falling
due per minute over the next hours, the outcomes and lateness of the last
hour, a task's timeline (its deadlines, cancellations and close attempts),
and the dead letters, filtered by reason, source topic and task id.

It is read-only unless started with --allow-actions, which adds replay of
dead letters (a dry run first), cancel and reschedule. It listens on
127.0.0.1:8089, this machine only; a --listen address beyond loopback with
--allow-actions needs --token-file (the token is given once on a login form,
or as an Authorization: Bearer header) or client certificates
(--console-tls-client-ca). With --token-file every page needs the token.
State-changing requests are POSTs checked against cross-origin requests. The
pages load nothing from any other address. SIGINT or SIGTERM stops it after
the requests in flight, within --shutdown-timeout.

Usage: hourglass console [--listen 127.0.0.1:8089] [--allow-actions [--token-file FILE]] [flags]

Examples:
  hourglass console
  hourglass console --allow-actions
  hourglass console --listen 0.0.0.0:8089 --allow-actions --token-file /run/secrets/console-token \
      --console-tls-cert console.pem --console-tls-key console-key.pem

` + cli.FlagsHeading + "\n"

// Sections of --help.
const (
	sectionConsole    = "Console"
	sectionClickHouse = "ClickHouse"
)

// options are the flags of console.
type options struct {
	kc       kafka.Config
	ch       chstore.Config
	cfg      console.Config
	rawTiers string
	check    bool
}

// consoleFields are the flags of console.Config's fields.
var consoleFields = cli.Fields{
	"Listen":             "listen",
	"AllowActions":       "allow-actions",
	"TokenFile":          "token-file",
	"TLS.CertFile":       "console-tls-cert",
	"TLS.KeyFile":        "console-tls-key",
	"TLS.ClientCAFile":   "console-tls-client-ca",
	"Prefix":             "topic-prefix",
	"Tiers":              flags.TiersFlag,
	"Targets":            "topics",
	"DeadLetterTopic":    "dlq-topic",
	"CancellationsTopic": "cancellations-topic",
	"Window":             "window",
	"Forecast":           "forecast",
	"LateThreshold":      "late-threshold",
	"MaxRows":            "max-rows",
	"RequestTimeout":     "request-timeout",
	"ShutdownTimeout":    "shutdown-timeout",
}

// register registers the flags of console on fs.
func (o *options) register(fs *cli.FlagSet) {
	env := cli.Env
	c := &o.cfg
	fs.Sections(sectionConsole, service.SectionTopics, sectionClickHouse, flags.SectionKafka, service.SectionLimits, service.SectionTiming)
	fs.Section(sectionConsole)
	fs.StringVar(&c.Listen, "listen", env("console-listen"), console.DefaultListen, "`host:port` to serve the console on; beyond loopback, actions need --token-file or --console-tls-client-ca")
	fs.BoolVar(&c.AllowActions, "allow-actions", env("console-allow-actions"), false, "enable replay, cancel and reschedule (default: read-only)")
	fs.StringVar(&c.TokenFile, "token-file", env("console-token-file"), "", "`file` holding the access token (at least 16 bytes); every page then needs it")
	fs.StringVar(&c.TLS.CertFile, "console-tls-cert", env("console-tls-cert"), "", "PEM certificate `file` to serve HTTPS with (needs --console-tls-key)")
	fs.StringVar(&c.TLS.KeyFile, "console-tls-key", env("console-tls-key"), "", "PEM private key `file` of --console-tls-cert")
	fs.StringVar(&c.TLS.ClientCAFile, "console-tls-client-ca", env("console-tls-client-ca"), "", "PEM `file` of the CAs whose client certificates every connection must present")
	fs.BoolVar(&o.check, "check-config", "", false, "check the flags and the token and TLS files, print the configuration and exit")
	fs.Section(service.SectionTopics)
	fs.StringVar(&c.Prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name (the router's)")
	flags.Tiers(fs, &o.rawTiers, tiers.DefaultTiers, "delay tiers (the router's), comma-separated `durations`: a dead letter from one of their topics replays there")
	fs.StringsVar(&c.Targets, "topics", env("topics"), nil, "target `topics` the canceller consumes, comma-separated (default <prefix>cancel): a dead letter from one of them replays there")
	fs.StringVar(&c.DeadLetterTopic, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&c.CancellationsTopic, "cancellations-topic", env("cancellations-topic"), "", "compacted `topic` of cancellations (default <prefix>cancellations)")
	fs.Section(sectionClickHouse)
	chflags.Register(fs, &o.ch)
	fs.Section(service.SectionLimits)
	fs.IntVar(&c.MaxRows, "max-rows", env("console-max-rows"), console.DefaultMaxRows, "most rows of any table of a page (1 to 10000)")
	fs.Section(service.SectionTiming)
	fs.DurationVar(&c.Window, "window", env("console-window"), console.DefaultWindow, "the overview's outcomes and lateness cover this `duration` up to now")
	fs.DurationVar(&c.Forecast, "forecast", env("console-forecast"), console.DefaultForecast, "the overview's forecast covers this `duration` from now")
	fs.DurationVar(&c.LateThreshold, "late-threshold", env("console-late-threshold"), console.DefaultLateThreshold, "a final close attempt later than this `duration` counts as late")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", env("console-request-timeout"), console.DefaultRequestTimeout, "bound on the work of one request (queries, reads, produces)")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", env("console-shutdown-timeout"), console.DefaultShutdownTimeout, "bound on the wait for requests in flight when stopping")
	fs.Section("")
	flags.Kafka(fs, &o.kc, "hourglass-console")
	fs.Essential("listen", "allow-actions", "token-file", "clickhouse-addr", "topic-prefix", flags.TiersFlag)
}

// validate reports every problem with the flags, each naming its flag.
func (o *options) validate(fs *cli.FlagSet) error {
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &o.kc))
	table, err := flags.ParseTiers(o.rawTiers)
	errs.Join(err)
	o.cfg.Tiers = table
	// A zero would take the default: refuse it instead.
	c := o.cfg
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{
		{"window", c.Window}, {"forecast", c.Forecast},
		{"request-timeout", c.RequestTimeout}, {"shutdown-timeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			errs.Add(d.flag, "%v: must be positive", d.v)
		}
	}
	if c.MaxRows <= 0 {
		errs.Add("max-rows", "%d: want 1 to 10000", c.MaxRows)
	}
	if err == nil && len(errs) == 0 {
		o.cfg = o.cfg.WithDefaults()
		errs.Join(consoleFields.Flags(o.cfg.Validate(), nil))
	}
	o.ch = o.ch.WithDefaults()
	errs.Join(chflags.Check(o.ch))
	return errs.Err()
}

// parse parses and validates the command line.
func parse(args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := cli.NewFlagSet("console", consoleUsage)
	fs.SetOutput(stderr)
	o.register(fs)
	if err := service.ParseArgs(fs, args); err != nil {
		return nil, err
	}
	if err := fs.Explain(o.validate(fs)); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &o, nil
}

// Run is the `hourglass console` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	opts, err := flags.KafkaOpts(&o.kc)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil)).With("service", "console")
	if o.check {
		// New reads the token and TLS files; a store is not needed for
		// that, but New wants one: check without it.
		if err := console.CheckFiles(o.cfg); err != nil {
			return service.UsageError{Err: consoleFields.Flags(err, nil)}
		}
		fmt.Fprintf(stdout, "configuration is valid: listen %s, actions %t, token %t, tls %t, %s\n",
			o.cfg.Listen, o.cfg.AllowActions, o.cfg.TokenFile != "", o.cfg.TLS.CertFile != "", o.ch)
		return nil
	}
	store, err := chstore.Open(ctx, o.ch)
	if err != nil {
		return err
	}
	defer store.Close()
	srv, err := console.New(o.cfg, console.Options{Kafka: opts, Store: store, Logger: log})
	if err != nil {
		return err
	}
	scheme := "http"
	if o.cfg.TLS.CertFile != "" {
		scheme = "https"
	}
	fmt.Fprintf(stdout, "hourglass console on %s://%s (%s)\n", scheme, o.cfg.Listen, mode(o.cfg))
	return srv.Run(ctx)
}

// mode says what the console allows.
func mode(c console.Config) string {
	if !c.AllowActions {
		return "read-only"
	}
	if c.TokenFile != "" {
		return "actions allowed, with the token"
	}
	return "actions allowed"
}
