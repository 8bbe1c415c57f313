package app

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
	"github.com/hourglass/hourglass/pkg/tiers"
)

const dlqUsage = `hourglass dlq lists and replays dead letters.

  hourglass dlq list   [flags]   print the dead letters that match the filters
  hourglass dlq replay [flags]   produce them again, for another close

It reads the dead-letter topic from its start (or --since) up to its end when
the command starts, without a consumer group, so it changes nothing there and
can run while the pipeline runs.

replay sends each dead letter back to the topic it came from (its
hourglass-dlq-source), or to --to, without the dead-letter headers and with the
close attempt reset to 1: a task that failed to close is closed again (closes
are idempotent). A record that breaks the record contract (a missing or bad
hourglass-due, no key) would be rejected again, so replay skips it and says so:
fix it and schedule it anew. Replaying twice closes twice, which an idempotent
closer reports as already_closed.

Usage: hourglass dlq list|replay [flags]

Flags (each has an environment variable; flags win):
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

// sourceTopic returns the topic of a "topic[partition]@offset" source.
func sourceTopic(source string) string {
	if i := strings.LastIndexByte(source, '['); i > 0 {
		return source[:i]
	}
	return ""
}

// replayRecord returns the record that replays d to topic (its source when
// topic is ""), or why it cannot be replayed.
func replayRecord(d deadLetter, topic string, now time.Time) (*kgo.Record, error) {
	if topic == "" {
		topic = sourceTopic(d.Source)
	}
	if topic == "" {
		return nil, fmt.Errorf("no %s header and no --to", tiers.HeaderSource)
	}
	hs := make([]kgo.RecordHeader, 0, len(d.rec.Headers))
	for _, h := range d.rec.Headers {
		switch h.Key {
		case tiers.HeaderReason, tiers.HeaderSource, tiers.HeaderDeadAt, tiers.HeaderAttempt:
			continue
		}
		hs = append(hs, h)
	}
	r := &kgo.Record{Topic: topic, Key: d.rec.Key, Value: d.rec.Value, Headers: hs, Timestamp: now}
	if _, err := tiers.DecodeRecord(r); err != nil {
		return nil, err
	}
	return r, nil
}

// DLQ is the `hourglass dlq` command.
func DLQ(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || (args[0] != "list" && args[0] != "replay") {
		fmt.Fprint(stderr, dlqUsage+"  run hourglass dlq list --help or hourglass dlq replay --help\n")
		if len(args) > 0 && slices.Contains([]string{"-h", "-help", "--help", "help"}, args[0]) {
			return flag.ErrHelp
		}
		return UsageError{errors.New("dlq: want a subcommand: list or replay")}
	}
	sub, args := args[0], args[1:]
	var (
		kc     kafka.Config
		prefix string
		topic  string
		reason string
		key    string
		since  time.Duration
		limit  int
		format string
		to     string
		dryRun bool
	)
	fs := cli.NewFlagSet("dlq "+sub, dlqUsage)
	fs.SetOutput(stderr)
	kc.RegisterFlags(fs, "hourglass-dlq")
	fs.StringVar(&prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&topic, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&reason, "reason", "", "", "only dead letters with this reason `code` (close_failed, retries_exhausted, due_missing, ...)")
	fs.StringVar(&key, "key", "", "", "only the dead letters of this task `id`")
	fs.DurationVar(&since, "since", "", 0, "only dead letters of the last `duration` (0: all)")
	fs.IntVar(&limit, "limit", "", 0, "stop after this many matches (0: no limit)")
	if sub == "list" {
		fs.StringVar(&format, "format", "", "text", "output: text or json (one object per line)")
	} else {
		fs.StringVar(&to, "to", "", "", "replay to this `topic` instead of each record's source")
		fs.BoolVar(&dryRun, "dry-run", "", false, "print what would be replayed, produce nothing")
	}
	if err := parseArgs(fs, args); err != nil {
		return err
	}
	errs := checks(kc.Validate(fs))
	if topic == "" {
		topic = tiers.DeadLetterTopic(prefix)
	}
	if err := tiers.ValidTopic(topic); err != nil {
		errs.add("dlq-topic", "%v", err)
	}
	if to != "" {
		if err := tiers.ValidTopic(to); err != nil {
			errs.add("to", "%v", err)
		}
	}
	if since < 0 {
		errs.add("since", "%v: must not be negative", since)
	}
	if limit < 0 {
		errs.add("limit", "%d: must not be negative", limit)
	}
	if format != "text" && format != "json" && sub == "list" {
		errs.add("format", "%q: want text or json", format)
	}
	if err := fs.Explain(errs); err != nil {
		return UsageError{err}
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
	found, err := scanDeadLetters(ctx, opts, topic, from, limit, match)
	if err != nil {
		return err
	}
	if sub == "list" {
		return printDeadLetters(stdout, found, format)
	}
	return replay(ctx, opts, stdout, found, to, dryRun)
}

// scanDeadLetters reads topic from from (its start when zero) up to its end
// offsets at the call, and returns the records match accepts, at most limit
// (0: no limit).
func scanDeadLetters(ctx context.Context, opts []kgo.Opt, topic string, from time.Time, limit int, match func(deadLetter) bool) ([]deadLetter, error) {
	adm, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer adm.Close()
	// Where each partition's range begins and ends: partitions with nothing
	// in it are not read at all.
	ka := kadm.NewClient(adm)
	ends, err := ka.ListEndOffsets(ctx, topic)
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
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: read}))...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	var out []deadLetter
	for len(left) > 0 {
		// Every offset below an end offset is a record here (nothing
		// transactional is produced to the dead-letter topic), so a
		// partition that yields nothing for long is unreachable.
		pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if errors.Is(pctx.Err(), context.DeadlineExceeded) {
			return out, fmt.Errorf("dlq: %s partitions %v sent nothing for 30s before their end offsets", topic, slices.Sorted(maps.Keys(left)))
		}
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			end, ok := left[r.Partition]
			if !ok || r.Offset >= end {
				continue
			}
			if r.Offset+1 >= end {
				delete(left, r.Partition)
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

func printDeadLetters(w io.Writer, ds []deadLetter, format string) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		for _, d := range ds {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "DEAD AT\tKEY\tKIND\tATTEMPT\tREASON\tSOURCE\tDETAIL")
	for _, d := range ds {
		detail := d.Detail
		if len(detail) > 120 {
			detail = detail[:117] + "..."
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", time.UnixMilli(d.TimeMs).UTC().Format(time.RFC3339),
			d.Key, d.Kind, d.Attempt, d.Reason, d.Source, detail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "%d dead letters\n", len(ds))
	return nil
}

func replay(ctx context.Context, opts []kgo.Opt, w io.Writer, ds []deadLetter, to string, dryRun bool) error {
	var (
		recs    []*kgo.Record
		skipped int
		byTopic = map[string]int{}
	)
	now := time.Now()
	for _, d := range ds {
		r, err := replayRecord(d, to, now)
		if err != nil {
			skipped++
			fmt.Fprintf(w, "skip %s[%d]@%d key %q: %v\n", d.rec.Topic, d.Partition, d.Offset, d.Key, err)
			continue
		}
		recs = append(recs, r)
		byTopic[r.Topic]++
	}
	verb := "replayed"
	if dryRun {
		verb = "would replay"
	} else if len(recs) > 0 {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			return fmt.Errorf("dlq replay: %w", err)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(byTopic)) {
		fmt.Fprintf(w, "%s %d to %s\n", verb, byTopic[t], t)
	}
	fmt.Fprintf(w, "%s %d, skipped %d that break the record contract\n", verb, len(recs), skipped)
	return nil
}
