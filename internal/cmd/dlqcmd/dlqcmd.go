package dlqcmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/topics"
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

Flags (an environment variable, where a flag has one, is shown with it; flags win):
`

// deadLetter is one record of the dead-letter topic, as dlq list shows it.
type deadLetter struct {
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	TimeMs    int64  `json:"time_ms"` // when it was dead-lettered
	Key       string `json:"key"`
	Reason    string `json:"reason"` // the code: due_missing, close_failed, ...
	Detail    string `json:"detail"` // the rest of hourglass-dlq-reason
	Source    string `json:"source"` // topic[partition]@offset
	Kind      string `json:"kind,omitempty"`
	Attempt   int    `json:"attempt,omitempty"`
	DueMs     int64  `json:"due_ms,omitempty"`
	Bytes     int    `json:"value_bytes"`
	Truncated string `json:"truncated,omitempty"` // hourglass-dlq-truncated: what was cut to fit

	rec *kgo.Record
}

func readDeadLetter(r *kgo.Record) deadLetter {
	d := deadLetter{Partition: r.Partition, Offset: r.Offset, TimeMs: r.Timestamp.UnixMilli(), Key: string(r.Key), Bytes: len(r.Value), rec: r}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderReason); ok {
		d.Reason, d.Detail, _ = strings.Cut(string(v), ": ")
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderSource); ok {
		d.Source = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderTruncated); ok {
		d.Truncated = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderDeadAt); ok {
		if ms, err := strconv.ParseInt(string(v), 10, 64); err == nil {
			d.TimeMs = ms
		}
	}
	// The contract headers, where they can be read.
	if v, ok := tiers.Header(r.Headers, tiers.HeaderKind); ok {
		d.Kind = string(v)
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderAttempt); ok {
		d.Attempt, _ = strconv.Atoi(string(v))
	}
	if v, ok := tiers.Header(r.Headers, tiers.HeaderDue); ok {
		d.DueMs, _ = strconv.ParseInt(string(v), 10, 64)
	}
	return d
}

// sourceTopic returns the topic of a "topic[partition]@offset" source, or
// why source is not one.
func sourceTopic(source string) (string, error) {
	bad := fmt.Errorf("%s %q is not topic[partition]@offset", tiers.HeaderSource, source)
	topic, rest, ok := strings.Cut(source, "[")
	if !ok {
		return "", bad
	}
	partition, offset, ok := strings.Cut(rest, "]@")
	if !ok || !digits(partition) || !digits(offset) {
		return "", bad
	}
	if err := tiers.ValidTopic(topic); err != nil {
		return "", fmt.Errorf("%s %q: %v", tiers.HeaderSource, source, err)
	}
	return topic, nil
}

// digits reports whether s is a decimal number without sign.
func digits(s string) bool {
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// replayRule says where dead letters may be replayed.
type replayRule struct {
	// to, when set, is the destination of every dead letter.
	to string
	// sources are the topics a dead letter may name as its source to be
	// replayed there: the delay topics and the targets.
	sources map[string]bool
	// targets are the topics a hourglass-target may name.
	targets map[string]bool
}

// newReplayRule returns the rule of the delay topics of prefix and table,
// the target topics targets, and the destination to ("" for each dead
// letter's source).
func newReplayRule(prefix string, table tiers.Table, targets []string, to string) replayRule {
	r := replayRule{to: to, sources: map[string]bool{}, targets: map[string]bool{}}
	for _, t := range table.Topics(prefix) {
		r.sources[t] = true
	}
	for _, t := range targets {
		r.sources[t] = true
		r.targets[t] = true
	}
	return r
}

// replayRecord returns the record that replays d under rule, or why it
// cannot be replayed.
func replayRecord(d deadLetter, rule replayRule, now time.Time) (*kgo.Record, error) {
	topic := rule.to
	if topic == "" {
		if d.Source == "" {
			return nil, fmt.Errorf("no %s header and no --to", tiers.HeaderSource)
		}
		src, err := sourceTopic(d.Source)
		if err != nil {
			return nil, err
		}
		if !rule.sources[src] {
			return nil, fmt.Errorf("source topic %q is neither a delay topic of --tiers nor a target of --topics, so %s may be forged: if the canceller consumes it, add it to --topics; or name the destination with --to", src, tiers.HeaderSource)
		}
		topic = src
	}
	if d.Truncated != "" {
		return nil, fmt.Errorf("cut to fit the dead-letter topic (%s %q), so not the record that failed: schedule it anew", tiers.HeaderTruncated, d.Truncated)
	}
	// Without the headers only Hourglass writes (the dead-letter ones, and
	// hourglass-forwarded, which a dead letter never carries unless forged)
	// and with the attempt reset.
	hs := make([]kgo.RecordHeader, 0, len(d.rec.Headers))
	for _, h := range d.rec.Headers {
		if record.Owned(h.Key) || h.Key == tiers.HeaderAttempt {
			continue
		}
		hs = append(hs, h)
	}
	r := &kgo.Record{Topic: topic, Key: d.rec.Key, Value: d.rec.Value, Headers: hs, Timestamp: now}
	m, err := tiers.DecodeRecord(r)
	if err != nil {
		return nil, err
	}
	// The router forwards a record to its hourglass-target; a delay topic
	// is a way to any topic unless the target is one of ours.
	if m.Target != "" && !rule.targets[m.Target] {
		return nil, fmt.Errorf("%s %q is not a target of --topics", tiers.HeaderTarget, m.Target)
	}
	return r, nil
}

// Run is the `hourglass dlq` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay") {
		fmt.Fprint(stderr, dlqUsage+"  run hourglass dlq list --help or hourglass dlq replay --help\n")
		if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
			return flag.ErrHelp
		}
		return service.UsageError{Err: errors.New("dlq: want a subcommand: list or replay")}
	}
	sub, args := args[0], args[1:]
	var (
		kc       kafka.Config
		prefix   string
		topic    string
		reason   string
		key      string
		since    time.Duration
		limit    int
		format   string
		to       string
		dryRun   bool
		tierList string
		targets  []string
	)
	fs := cli.NewFlagSet("dlq "+sub, dlqUsage)
	fs.SetOutput(stderr)
	kc.RegisterFlags(fs, "hourglass-dlq")
	fs.StringVar(&prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&topic, "dlq-topic", cli.Env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&reason, "reason", "", "", "only dead letters with this reason `code` (close_failed, retries_exhausted, due_missing, ...)")
	fs.StringVar(&key, "key", "", "", "only the dead letters of this task `id`")
	fs.DurationVar(&since, "since", "", 0, "only dead letters of the last `duration` (0: all)")
	fs.IntVar(&limit, "limit", "", 0, "stop after this many matches (0: no limit)")
	fs.StringVar(&format, "format", "", "text", "output: text or json (one object per line)")
	if sub == "replay" {
		topics.TiersVar(fs, &tierList, tiers.DefaultTiers, "delay tiers (the router's), comma-separated `durations`: a dead letter from one of their topics replays there")
		fs.StringsVar(&targets, "topics", cli.Env("topics"), nil, "target `topics` the canceller consumes, comma-separated (default <prefix>cancel): a dead letter from one of them replays there")
		fs.StringVar(&to, "to", "", "", "replay every dead letter to this `topic`, whatever its source")
		fs.BoolVar(&dryRun, "dry-run", "", false, "print what would be replayed, produce nothing")
	}
	if err := service.ParseArgs(fs, args); err != nil {
		return err
	}
	errs := service.Checks(kc.Validate(fs))
	if topic == "" {
		topic = tiers.DeadLetterTopic(prefix)
	}
	if err := tiers.ValidTopic(topic); err != nil {
		errs.Add("dlq-topic", "%v", err)
	}
	if to != "" {
		if err := tiers.ValidTopic(to); err != nil {
			errs.Add("to", "%v", err)
		}
	}
	if since < 0 {
		errs.Add("since", "%v: must not be negative", since)
	}
	if limit < 0 {
		errs.Add("limit", "%d: must not be negative", limit)
	}
	if format != "text" && format != "json" {
		errs.Add("format", "%q: want text or json", format)
	}
	var rule replayRule
	if sub == "replay" {
		table := errs.Tiers(tierList)
		if len(targets) == 0 {
			targets = []string{tiers.CancelTopic(prefix)}
		}
		for _, t := range targets {
			if err := tiers.ValidTopic(t); err != nil {
				errs.Add("topics", "%v", err)
			} else if t == topic {
				errs.Add("topics", "%s is the dead-letter topic", t)
			}
		}
		rule = newReplayRule(prefix, table, targets, to)
	}
	if err := fs.Explain(errs); err != nil {
		return service.UsageError{Err: err}
	}
	opts, err := kc.Opts()
	if err != nil {
		return err
	}

	var from time.Time
	if since > 0 {
		from = time.Now().Add(-since)
	}
	match := func(d deadLetter) bool {
		return (reason == "" || d.Reason == reason) && (key == "" || d.Key == key)
	}
	found, err := scanDeadLetters(ctx, opts, stderr, topic, from, limit, match)
	if err != nil {
		return err
	}
	if sub == "list" {
		return printDeadLetters(stdout, found, format)
	}
	return replay(ctx, opts, stdout, found, rule, format, dryRun)
}

// scanDeadLetters reads topic from from (its start when zero) up to its end
// offsets at the call, and returns the records match accepts, at most limit
// (0: no limit). It reads committed records only (kafka.ReaderOpts), and
// its end offsets are the last stable offsets, so a transaction still open
// neither shows nor holds the scan up. A batch too large to decompress is
// skipped and reported on stderr.
func scanDeadLetters(ctx context.Context, opts []kgo.Opt, stderr io.Writer, topic string, from time.Time, limit int, match func(deadLetter) bool) ([]deadLetter, error) {
	opts = append(slices.Clip(opts), kafka.ReaderOpts(0)...)
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	// Where each partition's range begins and ends: partitions with nothing
	// in it are not read at all.
	ka := kadm.NewClient(adm)
	ends, err := ka.ListCommittedOffsets(ctx, topic)
	if err == nil {
		err = ends.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("dlq: end offsets of %s: %w", topic, err)
	}
	var starts kadm.ListedOffsets
	if from.IsZero() {
		starts, err = ka.ListStartOffsets(ctx, topic)
	} else {
		starts, err = ka.ListOffsetsAfterMilli(ctx, from.UnixMilli(), topic)
	}
	if err == nil {
		err = starts.Error()
	}
	if err != nil {
		return nil, fmt.Errorf("dlq: start offsets of %s: %w", topic, err)
	}
	left := map[int32]int64{} // partition -> end offset still to reach
	read := map[int32]kgo.Offset{}
	ends.Each(func(end kadm.ListedOffset) {
		if s, ok := starts.Lookup(topic, end.Partition); ok && s.Offset < end.Offset {
			left[end.Partition] = end.Offset
			read[end.Partition] = kgo.NewOffset().At(s.Offset)
		}
	})
	if len(left) == 0 {
		return nil, nil
	}
	// Control records (the commit and abort markers of transactions) are
	// kept: they take offsets too, and a partition whose last offsets are
	// a marker, or aborted records and their marker, ends on the marker.
	cl, err := kgo.NewClient(append(opts, kgo.KeepControlRecords(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: read}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	// reached notes that partition p got to offset o.
	reached := func(p int32, o int64) {
		if end, ok := left[p]; ok && o >= end-1 {
			delete(left, p)
		}
	}
	var out []deadLetter
	for len(left) > 0 {
		// Below its last stable offset every offset of a partition is a
		// record, a marker, or an aborted record followed by its marker,
		// so a partition that yields nothing for long is unreachable, or
		// the marker of its last aborted records came after another
		// producer's transaction began, which is still open.
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(pctx.Err(), context.DeadlineExceeded) {
			return out, fmt.Errorf("dlq: %s partitions %v sent nothing for 30s before their end offsets (unreachable, or held by an open transaction)", topic, slices.Sorted(maps.Keys(left)))
		}
		var fetchErr error
		fs.EachError(func(_ string, p int32, err error) {
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return
			}
			if big := kafka.SkipBatch(cl, err); big != nil {
				fmt.Fprintf(stderr, "dlq: skipped a batch of %s[%d]: %v\n", topic, p, kafka.SkippedBatch(big))
				reached(p, big.NextOffset-1)
				return
			}
			fetchErr = errors.Join(fetchErr, fmt.Errorf("dlq: read %s[%d]: %w", topic, p, err))
		})
		if fetchErr != nil {
			return out, fetchErr
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			end, ok := left[r.Partition]
			reached(r.Partition, r.Offset)
			if !ok || r.Offset >= end || r.Attrs.IsControl() {
				continue
			}
			if d := readDeadLetter(r); match(d) {
				out = append(out, d)
				if limit > 0 && len(out) >= limit {
					return out, nil
				}
			}
		}
	}
	return out, nil
}

// writeJSONLine writes v as one line of JSON, with the runes a terminal may
// act on that encoding/json leaves raw escaped (cli.EscapeJSON).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(cli.EscapeJSON(b), '\n'))
	return err
}

// printDeadLetters writes ds as a table (format text), every string from the
// record through cli.Quote, or as one JSON object a line (format json).
func printDeadLetters(w io.Writer, ds []deadLetter, format string) error {
	if format == "json" {
		for _, d := range ds {
			if err := writeJSONLine(w, d); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEAD AT\tKEY\tKIND\tATTEMPT\tREASON\tSOURCE\tDETAIL")
	for _, d := range ds {
		detail := d.Detail
		if r := []rune(detail); len(r) > 120 {
			detail = string(r[:117]) + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", time.UnixMilli(d.TimeMs).UTC().Format(time.RFC3339),
			cli.Quote(d.Key), cli.Quote(d.Kind), d.Attempt, cli.Quote(d.Reason), cli.Quote(d.Source), cli.Quote(detail))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d dead letters\n", len(ds))
	return nil
}

// replayed is one line of dlq replay --format json: what became of one dead
// letter.
type replayed struct {
	Partition int32  `json:"partition"` // of the dead letter
	Offset    int64  `json:"offset"`
	Key       string `json:"key"`
	Source    string `json:"source"`
	Action    string `json:"action"`           // replayed, would_replay (--dry-run) or skipped
	Topic     string `json:"topic,omitempty"`  // where it was, or would be, replayed
	Reason    string `json:"reason,omitempty"` // why it was skipped
}

func replay(ctx context.Context, opts []kgo.Opt, w io.Writer, ds []deadLetter, rule replayRule, format string, dryRun bool) error {
	var (
		recs    []*kgo.Record
		done    []replayed // of recs
		skipped int
		byTopic = map[string]int{}
	)
	verb, action := "replayed", "replayed"
	if dryRun {
		verb, action = "would replay", "would_replay"
	}
	now := time.Now()
	for _, d := range ds {
		line := replayed{Partition: d.Partition, Offset: d.Offset, Key: d.Key, Source: d.Source}
		r, err := replayRecord(d, rule, now)
		if err != nil {
			skipped++
			line.Action, line.Reason = "skipped", err.Error()
			if format == "json" {
				if err := writeJSONLine(w, line); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "skip %s[%d]@%d key %s: %s\n", d.rec.Topic, d.Partition, d.Offset, strconv.QuoteToGraphic(d.Key), cli.Quote(err.Error()))
			}
			continue
		}
		recs = append(recs, r)
		line.Action, line.Topic = action, r.Topic
		done = append(done, line)
		byTopic[r.Topic]++
	}
	if !dryRun && len(recs) > 0 {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("dlq replay: %w", err)
		}
	}
	if format == "json" {
		for _, line := range done {
			if err := writeJSONLine(w, line); err != nil {
				return err
			}
		}
		return nil
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		fmt.Fprintf(w, "%s %d to %s\n", verb, byTopic[t], cli.Quote(t))
	}
	fmt.Fprintf(w, "%s %d, skipped %d\n", verb, len(recs), skipped)
	return nil
}
