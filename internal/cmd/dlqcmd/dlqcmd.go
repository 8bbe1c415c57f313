package dlqcmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/deadletter"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const dlqUsage = `hourglass dlq lists and replays dead letters.

  hourglass dlq list   [flags]   print the dead letters that match the filters
  hourglass dlq replay [flags]   produce them again, for another close

It reads the dead-letter topic from its start (or --since) up to its end when
the command starts, committed records only, without a consumer group, so it
changes nothing there and can run while the pipeline runs. Keys, kinds,
reasons and sources come from whoever produced the records: the text output
prints any that holds a control, bidi or other non-graphic character, or
invalid UTF-8, as a Go string literal ("k\x1b[2J\u202e"), and the JSON output
escapes them.

list prints at most --limit dead letters (1000 by default; --limit 0 lists
every one), each as it reads it: it keeps none, so a dead-letter topic of any
size lists within bounded memory.

replay sends each dead letter back to the topic it came from, without the
dead-letter headers and with the close attempt reset to 1: a task that failed
to close is closed again (closes are idempotent). The topic it came from is
what its hourglass-dlq-source header says, and anyone who can produce to the
dead-letter topic can write that header, so replay trusts it only when it names
a topic the pipeline reads: a delay topic of --topic-prefix and --tiers, or a
target topic of --topics (the canceller's). A dead letter from any other
topic, or whose hourglass-target names a topic outside --topics (the router
would forward it there), is skipped and listed with the reason; --to names
the destination of every replayed dead letter instead of their sources (the
hourglass-target check still applies). A record that breaks the record
contract (a missing or bad hourglass-due, no key) would be rejected again, and
one cut to fit the dead-letter topic (hourglass-dlq-truncated) is no longer
the task's record, so replay skips those too: schedule them anew. Replaying twice closes
twice, which an idempotent closer reports as already_closed.

Usage: hourglass dlq list|replay [flags]
`

// defaultListLimit is the default of dlq list --limit: enough to see what
// went wrong, and a screen's worth of scrolling, not a flood's.
const defaultListLimit = 1000

// Run is the `hourglass dlq` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay") {
		fmt.Fprint(stderr, dlqUsage+"\nRun hourglass dlq list --help or hourglass dlq replay --help for their flags.\n")
		if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
			return flag.ErrHelp
		}
		err := errors.New("dlq needs a subcommand: list or replay")
		if len(args) > 0 {
			err = fmt.Errorf("unknown dlq subcommand %q; want list or replay", args[0])
		}
		// The usage, just printed, says where to look.
		return service.UsageError{Err: &cli.CommandLineError{Err: err}}
	}
	sub, args := args[0], args[1:]
	o, err := parse(sub, args, stderr)
	if err != nil {
		return err
	}
	opts, err := flags.KafkaOpts(&o.kc)
	if err != nil {
		return err
	}

	var from time.Time
	if o.since > 0 {
		from = time.Now().Add(-o.since)
	}
	match := func(d deadletter.DeadLetter) bool {
		return (o.reason == "" || d.Reason == o.reason) && (o.key == "" || d.Key == o.key)
	}
	if sub == "list" {
		l := newLister(stdout, o.format)
		if _, err := deadletter.Scan(ctx, opts, stderr, o.topic, from, o.limit, match, l.add); err != nil {
			_ = l.flush() // the rows read before the error; the error is what to report
			return err
		}
		return l.finish(stderr, o.limit)
	}
	var found []deadletter.DeadLetter
	keep := func(d deadletter.DeadLetter) error { found = append(found, d); return nil }
	if _, err := deadletter.Scan(ctx, opts, stderr, o.topic, from, o.limit, match, keep); err != nil {
		return err
	}
	return replay(ctx, opts, stdout, found, o.rule, o.format, o.dryRun)
}

// options are the flags of dlq list and dlq replay.
type options struct {
	kc       kafka.Config
	prefix   string        // --topic-prefix
	topic    string        // --dlq-topic
	reason   string        // --reason
	key      string        // --key
	format   string        // --format
	to       string        // --to (replay)
	tierList string        // --tiers (replay)
	since    time.Duration // --since
	limit    int           // --limit
	dryRun   bool          // --dry-run (replay)
	targets  []string      // --topics (replay)
	// rule is what replay may do, from --topic-prefix, --tiers, --topics
	// and --to.
	rule deadletter.Rule
}

// parse parses and validates the flags of dlq sub (list or replay).
func parse(sub string, args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := cli.NewFlagSet("dlq "+sub, dlqUsage+"\n"+cli.FlagsHeading+"\n")
	fs.SetOutput(stderr)
	o.register(fs, sub)
	if err := service.ParseArgs(fs, args); err != nil {
		return nil, err
	}
	if err := fs.Explain(o.validate(fs, sub)); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &o, nil
}

// register registers the flags of dlq sub on fs.
func (o *options) register(fs *cli.FlagSet, sub string) {
	flags.Kafka(fs, &o.kc, "hourglass-dlq")
	fs.StringVar(&o.prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&o.topic, "dlq-topic", cli.Env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&o.reason, "reason", "", "", "only dead letters with this reason `code` (close_failed, retries_exhausted, due_missing, ...)")
	fs.StringVar(&o.key, "key", "", "", "only the dead letters of this task `id`")
	fs.DurationVar(&o.since, "since", "", 0, "only dead letters of the last `duration` (0: all)")
	if sub == "list" {
		fs.IntVar(&o.limit, "limit", "", defaultListLimit, "list at most this many dead letters (0: every one)")
	} else {
		fs.IntVar(&o.limit, "limit", "", 0, "stop after this many matches (0: no limit)")
	}
	fs.StringVar(&o.format, "format", "", "text", "output: text or json (one object per line)")
	fs.Essential("topic-prefix")
	if sub == "replay" {
		flags.Tiers(fs, &o.tierList, tiers.DefaultTiers, "delay tiers (the router's), comma-separated `durations`: a dead letter from one of their topics replays there")
		fs.StringsVar(&o.targets, "topics", cli.Env("topics"), nil, "target `topics` the canceller consumes, comma-separated (default <prefix>cancel): a dead letter from one of them replays there")
		fs.StringVar(&o.to, "to", "", "", "replay every dead letter to this `topic`, whatever its source")
		fs.BoolVar(&o.dryRun, "dry-run", "", false, "print what would be replayed, produce nothing")
	}
}

// validate reports every problem with the flags, and sets the defaults
// derived from --topic-prefix and the replay rule.
func (o *options) validate(fs *cli.FlagSet, sub string) error {
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &o.kc))
	if o.topic == "" {
		o.topic = tiers.DeadLetterTopic(o.prefix)
	}
	if err := tiers.ValidTopic(o.topic); err != nil {
		errs.Add("dlq-topic", "%v", err)
	}
	if o.to != "" {
		if err := tiers.ValidTopic(o.to); err != nil {
			errs.Add("to", "%v", err)
		}
	}
	if o.since < 0 {
		errs.Add("since", "%v: must not be negative", o.since)
	}
	if o.limit < 0 {
		errs.Add("limit", "%d: must not be negative", o.limit)
	}
	if o.format != "text" && o.format != "json" {
		errs.Add("format", "%q: want text or json", o.format)
	}
	if sub == "replay" {
		table, err := flags.ParseTiers(o.tierList)
		errs.Join(err)
		if len(o.targets) == 0 {
			o.targets = []string{tiers.CancelTopic(o.prefix)}
		}
		for _, t := range o.targets {
			if err := tiers.ValidTopic(t); err != nil {
				errs.Add("topics", "%v", err)
			} else if t == o.topic {
				errs.Add("topics", "%s is the dead-letter topic", t)
			}
		}
		o.rule = deadletter.NewRule(o.prefix, table, o.targets, o.to)
	}
	return errs.Err()
}
