package statuscmd

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/chflags"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of --since and --timeout.
const (
	DefaultSince   = 7 * 24 * time.Hour
	DefaultTimeout = 30 * time.Second
)

// maxNamedTargets bounds the other target topics status reads because a
// delay record of the task names them.
const maxNamedTargets = 8

const statusUsage = `hourglass status shows where a task is: for each of its deadlines, waiting in
which tier since when and due when, forwarded when and to which topic, closed
with which outcome, cancelled (by which cancellation, made before or after
the due time or the forward), or dead-lettered with which reason; then the
records of the task by time, the latest 1000.

With --clickhouse it looks the task up in the deadline index that
hourglass recorder keeps in ClickHouse (every deadline's first record, the
cancellations, the dead letters and the close attempts): a few milliseconds
whatever the volume, and outcomes older than Kafka keeps. The index does not
hold hops and forwards: --scan reads Kafka too.

Without --clickhouse (or with --scan) it reads, in each topic the task
passes through, the one partition its key goes to (murmur2, as the Go and
Java clients partition; --all-partitions reads every partition), from
--since ago up to the end, committed records only: a scan that grows with
the topics. It changes nothing. --timeout bounds it: a read that did not
finish is reported, and the command exits 1, as it does when a partition's
offsets could not be looked up (it names the partition and the broker's
error). Strings from records are printed as Go string literals when they
hold control or other non-graphic characters.

Usage: hourglass status ID [flags]

Examples:
  hourglass status order-42 --clickhouse --clickhouse-addr 127.0.0.1:9000
  hourglass status order-42
  hourglass status order-42 --since 720h --format json

` + cli.FlagsHeading + "\n"

// options are the flags of status.
type options struct {
	kc            kafka.Config
	ch            chstore.Config
	id            string        // the task id, the command's argument
	prefix        string        // --topic-prefix
	rawTiers      string        // --tiers
	outcomes      string        // --outcomes-topic
	deadLetter    string        // --dlq-topic
	cancellations string        // --cancellations-topic
	format        string        // --format
	targets       []string      // --topics
	since         time.Duration // --since
	timeout       time.Duration // --timeout
	clickhouse    bool          // --clickhouse
	scan          bool          // --scan
	allParts      bool          // --all-partitions
	table         tiers.Table   // parsed from rawTiers
}

// register registers the flags of status on fs.
func (o *options) register(fs *cli.FlagSet) {
	flags.Kafka(fs, &o.kc, "hourglass-status")
	fs.StringVar(&o.prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	flags.Tiers(fs, &o.rawTiers, tiers.DefaultTiers, "delay tiers (the router's), comma-separated `durations`: their topics are read")
	fs.StringsVar(&o.targets, "topics", cli.Env("topics"), nil, "target `topics`, comma-separated (default <prefix>cancel); a target a delay record of the task names is read too")
	fs.StringVar(&o.outcomes, "outcomes-topic", cli.Env("outcomes-topic"), "", "outcome `topic` (default <prefix>outcomes)")
	fs.StringVar(&o.deadLetter, "dlq-topic", cli.Env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&o.cancellations, "cancellations-topic", cli.Env("cancellations-topic"), "", "compacted `topic` of cancellations (default <prefix>cancellations)")
	fs.DurationVar(&o.since, "since", "", DefaultSince, "read the records of this `duration` up to now")
	fs.DurationVar(&o.timeout, "timeout", "", DefaultTimeout, "bound on the whole command; what is not read by then is reported as incomplete")
	fs.StringVar(&o.format, "format", "", "text", "output: text or json")
	fs.Essential(flags.TiersFlag, "topic-prefix", "since")
	fs.BoolVar(&o.allParts, "all-partitions", "", false, "read every partition of each topic, not only the one murmur2 gives the task id (for producers that partition otherwise)")
	fs.BoolVar(&o.clickhouse, "clickhouse", cli.Env("clickhouse"), false, "look the task up in the deadline index in ClickHouse (--clickhouse-* flags) instead of reading Kafka")
	fs.BoolVar(&o.scan, "scan", "", false, "with --clickhouse, read Kafka too, and the outcomes in ClickHouse beside it")
	fs.Essential("clickhouse")
	chflags.Register(fs, &o.ch)
}

// validate reports every problem with the flags and sets the defaults
// derived from --topic-prefix.
func (o *options) validate(fs *cli.FlagSet) error {
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &o.kc))
	table, err := flags.ParseTiers(o.rawTiers)
	errs.Join(err)
	o.table = table
	o.outcomes = cmp.Or(o.outcomes, tiers.OutcomesTopic(o.prefix))
	o.deadLetter = cmp.Or(o.deadLetter, tiers.DeadLetterTopic(o.prefix))
	o.cancellations = cmp.Or(o.cancellations, tiers.CancellationsTopic(o.prefix))
	if len(o.targets) == 0 {
		o.targets = []string{tiers.CancelTopic(o.prefix)}
	}
	for _, f := range []struct {
		flag  string
		names []string
	}{
		{"topics", o.targets}, {"outcomes-topic", []string{o.outcomes}},
		{"dlq-topic", []string{o.deadLetter}}, {"cancellations-topic", []string{o.cancellations}},
	} {
		for _, n := range f.names {
			if err := tiers.ValidTopic(n); err != nil {
				errs.Add(f.flag, "%v", err)
			}
		}
	}
	if o.since <= 0 {
		errs.Add("since", "%v: must be positive", o.since)
	}
	if o.timeout <= 0 {
		errs.Add("timeout", "%v: must be positive", o.timeout)
	}
	if o.format != "text" && o.format != "json" {
		errs.Add("format", "%q: want text or json", o.format)
	}
	if o.clickhouse {
		errs.Join(chflags.Check(o.ch.WithDefaults()))
	}
	if o.scan && !o.clickhouse {
		errs.Add("scan", "needs --clickhouse: without it status reads Kafka only")
	}
	return errs.Err()
}

// parse parses the command line: flags and the task id, anywhere among
// them ("--" before an id that begins with a dash).
func parse(args []string, stderr io.Writer) (*options, error) {
	var o options
	fs := cli.NewFlagSet("status", statusUsage)
	fs.SetOutput(stderr)
	fs.Interspersed()
	o.register(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, service.UsageError{Err: err}
	}
	switch rest := fs.Args(); {
	case len(rest) == 0:
		return nil, service.UsageError{Err: fs.BadArgs("no task id given: hourglass status ID")}
	case len(rest) > 1:
		return nil, service.UsageError{Err: fs.BadArgs("unexpected arguments %q: give one task id", rest[1:])}
	case rest[0] == "":
		return nil, service.UsageError{Err: fs.BadArgs("the task id is empty")}
	default:
		o.id = rest[0]
	}
	if err := fs.Explain(o.validate(fs)); err != nil {
		return nil, service.UsageError{Err: err}
	}
	return &o, nil
}

// Run is the `hourglass status` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parse(args, stderr)
	if err != nil {
		return err
	}
	st, err := collect(ctx, o, stderr, time.Now())
	if err != nil {
		return err
	}
	if err := render(stdout, st, o.format); err != nil {
		return err
	}
	if !st.Complete {
		return incomplete(st, o.timeout)
	}
	return nil
}

// closeReserve is the part of --timeout, at most a second, left after the
// reads stop for closing the connections, which waits for a fetch in
// flight (its wait is bounded by as much).
func closeReserve(timeout time.Duration) time.Duration {
	return min(timeout/5, time.Second)
}

// collect reads what the topics and, with --clickhouse, ClickHouse hold
// of the task, within --timeout. ClickHouse is asked while Kafka is read.
func collect(ctx context.Context, o *options, progress io.Writer, now time.Time) (*Status, error) {
	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	from := now.Add(-o.since)
	st := &Status{TaskID: o.id, NowMs: now.UnixMilli(), SinceMs: from.UnixMilli(), AllPartitions: o.allParts, Events: []taskstatus.Event{}, Read: []*PartRead{}}
	if o.clickhouse && !o.scan {
		events, q := lookupIndex(ctx, o.ch, o.id, o.prefix, time.Now)
		st.Index, st.Events = q, append(st.Events, events...)
		slices.SortStableFunc(st.Events, func(a, b taskstatus.Event) int { return taskstatus.ByTime(&a, &b) })
		st.Deadlines = taskstatus.Deadlines(st.Events, now)
		st.Complete = q.Error == ""
		return st, nil
	}
	ch := make(chan func(*Status), 1)
	if o.clickhouse {
		go func() { ch <- queryClickHouse(ctx, o.ch, o.id, from) }()
	} else {
		ch <- func(*Status) {}
	}
	deadline, _ := ctx.Deadline()
	readCtx, cancelRead := context.WithDeadline(ctx, deadline.Add(-closeReserve(o.timeout)))
	defer cancelRead()
	got, reads, err := readKafka(readCtx, o, progress, from)
	merge := <-ch
	if err != nil {
		return nil, fmt.Errorf("status %s: %w", o.id, err)
	}
	st.Read = reads
	st.Events, st.EventsDropped = append(st.Events, got.events...), got.dropped
	merge(st)
	slices.SortStableFunc(st.Events, func(a, b taskstatus.Event) int { return taskstatus.ByTime(&a, &b) })
	st.Deadlines = taskstatus.Deadlines(st.Events, now)
	st.Complete = !slices.ContainsFunc(reads, func(p *PartRead) bool { return !p.Complete || p.Error != "" }) &&
		(st.CH == nil || st.CH.Error == "")
	return st, nil
}

// readKafka reads the task's records since from: the topics of the flags,
// then the targets its delay records name.
func readKafka(ctx context.Context, o *options, progress io.Writer, from time.Time) (*kept, []*PartRead, error) {
	opts, err := flags.KafkaOpts(&o.kc)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, kgo.FetchMaxWait(closeReserve(o.timeout)))
	opts = append(opts, kafka.TimeoutOpts(o.timeout)...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka client: %w", err)
	}
	defer cl.Close()
	r := &reader{opts: opts, adm: kadm.NewClient(cl), key: []byte(o.id), prefix: o.prefix, all: o.allParts, progress: progress}
	reads, err := r.read(ctx, o.sources(), from)
	if err != nil {
		return nil, nil, flags.NoAnswer(ctx, &o.kc, err, o.timeout)
	}
	if extra := namedTargets(r.kept.targets); len(extra) > 0 {
		moreReads, err := r.read(ctx, extra, from)
		if err != nil {
			return nil, nil, err
		}
		reads = append(reads, moreReads...)
	}
	return &r.kept, reads, nil
}

// sources are the topics status reads, each once.
func (o *options) sources() []source {
	var out []source
	add := func(topic string, role taskstatus.Role) {
		if !slices.ContainsFunc(out, func(s source) bool { return s.topic == topic }) {
			out = append(out, source{topic, role})
		}
	}
	for _, t := range o.table.Topics(o.prefix) {
		add(t, taskstatus.RoleDelay)
	}
	for _, t := range o.targets {
		add(t, taskstatus.RoleTarget)
	}
	add(o.outcomes, taskstatus.RoleOutcomes)
	add(o.deadLetter, taskstatus.RoleDeadLetter)
	add(o.cancellations, taskstatus.RoleCancellations)
	return out
}

// namedTargets are the sources of the targets the task's delay records
// name (kept.targets: not among the topics read, at most maxNamedTargets).
func namedTargets(targets []string) []source {
	out := make([]source, len(targets))
	for i, t := range targets {
		out[i] = source{t, taskstatus.RoleTarget}
	}
	return out
}

// incomplete is the error of a status that may miss records: the
// partitions it could not look up or read, and why, and those --timeout cut
// short.
func incomplete(st *Status, timeout time.Duration) error {
	var why, short []string
	for _, p := range st.Read {
		switch {
		case p.Error != "":
			why = append(why, p.Error)
		case !p.Complete:
			short = append(short, fmt.Sprintf("%s read %d of %d records", p, p.Read, p.total()))
		}
	}
	if len(short) > 0 {
		why = append(why, fmt.Sprintf("%s (--timeout %v; a shorter --since reads less)", strings.Join(short, "; "), timeout))
	}
	if st.CH != nil && st.CH.Error != "" {
		why = append(why, "clickhouse: "+st.CH.Error)
	}
	if st.Index != nil && st.Index.Error != "" {
		why = append(why, "deadline index: "+st.Index.Error+" (without --clickhouse status reads Kafka)")
	}
	return fmt.Errorf("status of %s is incomplete: %s", term.Quote(st.TaskID), strings.Join(why, "; "))
}
