package schedulecmd

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// DefaultTimeout is the default of --timeout: the bound on connecting and
// producing.
const DefaultTimeout = 30 * time.Second

// common are the flags schedule, cancel and reschedule share.
type common struct {
	kc       kafka.Config
	prefix   string
	rawTiers string
	table    tiers.Table
	timeout  time.Duration
	id       string
	// cancellations is --cancellations-topic, of cancel and reschedule
	// only; "": <prefix>cancellations.
	cancellations string
}

// registerCancellations registers --cancellations-topic, for the commands
// that produce cancellations.
func (c *common) registerCancellations(fs *cli.FlagSet) {
	fs.StringVar(&c.cancellations, "cancellations-topic", cli.Env("cancellations-topic"), "",
		"compacted `topic` of cancellations (the router's; default <prefix>cancellations)")
}

// cancellationsTopic is the topic cancellations go to.
func (c *common) cancellationsTopic() string {
	if c.cancellations != "" {
		return c.cancellations
	}
	return tiers.CancellationsTopic(c.prefix)
}

// register registers the shared flags on fs; clientID is the default of
// --client-id.
func (c *common) register(fs *cli.FlagSet, clientID string) {
	fs.StringVar(&c.id, "id", "", "", "`task-id` (the order id): the record key")
	flags.Kafka(fs, &c.kc, clientID)
	fs.StringVar(&c.prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name (the router's)")
	flags.Tiers(fs, &c.rawTiers, tiers.DefaultTiers, "delay tiers (the router's), comma-separated `durations`")
	fs.DurationVar(&c.timeout, "timeout", "", DefaultTimeout, "bound on connecting and producing")
	fs.Essential("id", flags.TiersFlag, "topic-prefix")
}

// validate reports every problem with the shared flags.
func (c *common) validate(fs *cli.FlagSet) cli.Problems {
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &c.kc))
	table, err := flags.ParseTiers(c.rawTiers)
	errs.Join(err)
	c.table = table
	switch {
	case c.id == "":
		errs.Add("id", "required: the task id")
	case len(c.id) > tiers.DefaultMaxKeyBytes:
		errs.Add("id", "%d bytes; at most %d", len(c.id), tiers.DefaultMaxKeyBytes)
	}
	if err := tiers.ValidTopic(tiers.CancellationsTopic(c.prefix)); err != nil {
		errs.Add("topic-prefix", "%v", err)
	}
	if err := tiers.ValidTopic(c.cancellationsTopic()); c.cancellations != "" && err != nil {
		errs.Add("cancellations-topic", "%v", err)
	}
	if c.timeout <= 0 {
		errs.Add("timeout", "%v: must be positive", c.timeout)
	}
	return errs
}

// parse parses args into fs and validates them with check, which adds the
// command's own problems to the shared ones.
func (c *common) parse(fs *cli.FlagSet, args []string, check func(errs *cli.Problems)) error {
	if err := service.ParseArgs(fs, args); err != nil {
		return err
	}
	errs := c.validate(fs)
	check(&errs)
	if err := fs.Explain(errs.Err()); err != nil {
		return service.UsageError{Err: err}
	}
	return nil
}

// client returns a producing client of the flags, with extra options, and
// the partition count of each of topics, which must exist.
func (c *common) client(ctx context.Context, topicNames []string, extra ...kgo.Opt) (*kgo.Client, map[string]int, error) {
	opts, err := flags.KafkaOpts(&c.kc)
	if err != nil {
		return nil, nil, err
	}
	opts = append(opts, kafka.TimeoutOpts(c.timeout)...)
	cl, err := kgo.NewClient(append(opts, extra...)...)
	if err != nil {
		return nil, nil, fmt.Errorf("kafka client: %w", err)
	}
	parts, err := partitionCounts(ctx, kadm.NewClient(cl), topicNames)
	if err != nil {
		cl.Close()
		return nil, nil, flags.NoAnswer(ctx, &c.kc, err, c.timeout)
	}
	return cl, parts, nil
}

// partitionCounts returns the partition count of each topic, or an error
// naming the topics that do not exist: a produce to one would wait for it
// until the timeout.
func partitionCounts(ctx context.Context, adm *kadm.Client, names []string) (map[string]int, error) {
	tds, err := adm.ListTopics(ctx, names...)
	if err != nil {
		return nil, fmt.Errorf("list topics %s: %w", strings.Join(names, ", "), err)
	}
	out := map[string]int{}
	var missing []string
	for _, n := range names {
		td, ok := tds[n]
		if !ok || td.Err != nil || len(td.Partitions) == 0 {
			missing = append(missing, n)
			continue
		}
		out[n] = len(td.Partitions)
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		what := "topics " + strings.Join(missing, ", ") + " do not exist"
		if len(missing) == 1 {
			what = "topic " + missing[0] + " does not exist"
		}
		return nil, fmt.Errorf("%s: create the pipeline's topics first, or check the flags that name them (--topic-prefix, --tiers, --target)", what)
	}
	return out, nil
}

// where returns "topic[partition]" of the task id's records in topic.
func where(topic, id string, parts map[string]int) string {
	return fmt.Sprintf("%s[%d]", topic, kafka.KeyPartition(topic, []byte(id), parts[topic]))
}

// taskFlags are the flags that describe a deadline: schedule and
// reschedule.
type taskFlags struct {
	in                        time.Duration
	inSet                     bool // --in was given, even as 0
	at, kind, target, payload string
}

// register registers the task flags on fs.
func (f *taskFlags) register(fs *cli.FlagSet) {
	fs.DurationVar(&f.in, "in", "", 0, "due this `duration` from now (give --in or --at)")
	fs.StringVar(&f.at, "at", "", "", "due at this `time`: RFC 3339 (2026-05-14T12:30:00Z) or unix milliseconds (not seconds)")
	fs.StringVar(&f.kind, "kind", "", "", "task `kind`, which selects the canceller's closer (default: the canceller's, order-timeout)")
	fs.StringVar(&f.target, "target", "", "", "target `topic` when due (default: the router's --target, <prefix>cancel)")
	fs.StringVar(&f.payload, "payload", "", "", "the record value: a `string`, or @FILE for a file's bytes")
	fs.Essential("in", "at")
}

// task returns the task of the flags of fs for id at now, adding the
// problems to errs; prefix is --topic-prefix.
func (f *taskFlags) task(fs *cli.FlagSet, id, prefix string, now time.Time, errs *cli.Problems) tiers.Task {
	t := tiers.Task{ID: id, Kind: f.kind, Target: f.target}
	f.inSet = fs.Source("in") != cli.SourceDefault
	switch {
	case f.at != "" && f.inSet:
		errs.Add("at", "give --in or --at, not both")
	case f.at != "":
		due, err := record.ParseDue(f.at)
		if err != nil {
			errs.Add("at", "%v", err)
		}
		t.Due = due
	case f.in < 0:
		errs.Add("in", "%v: must not be negative (--at takes a time in the past, which fires at once)", f.in)
	case f.inSet:
		t.Due = now.Add(f.in)
	default:
		errs.Add("in", "required: give --in or --at")
	}
	if f.target != "" {
		if err := tiers.ValidTopic(f.target); err != nil {
			errs.Add("target", "%v", err)
		} else if what := ownTopic(prefix, f.target); what != "" {
			errs.Add("target", "%s is %s of --topic-prefix %s: the router never delivers to it and dead-letters the deadline (target_invalid); name the topic its close is read from (default %s)",
				f.target, what, prefix, tiers.CancelTopic(prefix))
		}
	}
	if len(f.kind) > 128 || strings.ContainsFunc(f.kind, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		errs.Add("kind", "at most 128 printable characters")
	}
	p, err := readPayload(f.payload)
	if err != nil {
		errs.Add("payload", "%v", err)
	}
	t.Payload = p
	return t
}

// ownTopic says which of the pipeline's own topics under prefix topic is,
// the ones the router refuses as a target (a delay topic would loop), or
// "" for another topic.
func ownTopic(prefix, topic string) string {
	switch {
	case strings.HasPrefix(topic, record.DelayTopicPrefix(prefix)):
		return "a delay topic"
	case topic == tiers.DeadLetterTopic(prefix):
		return "the dead-letter topic"
	case topic == tiers.OutcomesTopic(prefix):
		return "the outcomes topic"
	case topic == tiers.CancellationsTopic(prefix):
		return "the cancellations topic"
	}
	return ""
}

// readPayload returns the bytes of --payload: the string, or the file
// after an @.
func readPayload(s string) ([]byte, error) {
	b := []byte(s)
	if name, ok := strings.CutPrefix(s, "@"); ok {
		var err error
		if b, err = os.ReadFile(name); err != nil {
			return nil, err
		}
	}
	if len(b) > tiers.DefaultMaxValueBytes {
		return nil, fmt.Errorf("%d bytes; the router takes at most %d", len(b), tiers.DefaultMaxValueBytes)
	}
	return b, nil
}

// stamp formats t for output: UTC, milliseconds.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// untilText says how far t is from now: "in 29m59.98s" or "5s ago".
func untilText(t, now time.Time) string {
	d := t.Sub(now).Round(time.Millisecond)
	if d < 0 {
		return (-d).String() + " ago"
	}
	return "in " + d.String()
}
