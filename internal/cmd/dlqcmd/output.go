package dlqcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/deadletter"
	"github.com/hourglass/hourglass/internal/term"
)

// writeJSONLine writes v as one line of JSON, with the runes a terminal may
// act on that encoding/json leaves raw escaped (term.EscapeJSON).
func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(term.EscapeJSON(b), '\n'))
	return err
}

// Bounds of the rows of the text table held before they are written: the
// rows of one block are aligned together.
const (
	blockRows  = 1000
	blockBytes = 1 << 20
)

// lister prints the dead letters of dlq list as they are read, as a table
// (format text), every string from the record through term.Quote, or as one
// JSON object a line (format json). It keeps nothing of a dead letter but
// the text table's rows not yet written, at most one block.
type lister struct {
	w      io.Writer
	format string
	tw     *tabwriter.Writer
	held   int // rows in tw since its last flush
	bytes  int // their bytes
	n      int // dead letters printed
}

func newLister(w io.Writer, format string) *lister {
	l := &lister{w: w, format: format}
	if format != "json" {
		l.tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(l.tw, "DEAD AT\tKEY\tKIND\tATTEMPT\tREASON\tSOURCE\tDETAIL")
	}
	return l
}

// add prints d.
func (l *lister) add(d deadletter.DeadLetter) error {
	l.n++
	if l.tw == nil {
		return writeJSONLine(l.w, d)
	}
	detail := d.Detail
	if r := []rune(detail); len(r) > 120 {
		detail = string(r[:117]) + "..."
	}
	n, _ := fmt.Fprintf(l.tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\n", time.UnixMilli(d.TimeMs).UTC().Format(time.RFC3339),
		term.Quote(d.Key), term.Quote(d.Kind), d.Attempt, term.Quote(d.Reason), term.Quote(d.Source), term.Quote(detail))
	l.held++
	l.bytes += n
	if l.held >= blockRows || l.bytes >= blockBytes {
		return l.flush()
	}
	return nil
}

// flush writes the rows held.
func (l *lister) flush() error {
	if l.tw == nil {
		return nil
	}
	l.held, l.bytes = 0, 0
	return l.tw.Flush()
}

// finish writes the rows held and the count; when the listing stopped at
// limit, it says how to list every one (on notes, to keep JSON output
// only JSON).
func (l *lister) finish(notes io.Writer, limit int) error {
	more := ""
	if limit > 0 && l.n >= limit {
		more = fmt.Sprintf(" (stopped at --limit %d; --limit 0 lists every one)", limit)
	}
	if l.tw == nil {
		if more != "" {
			fmt.Fprintf(notes, "dlq list: %d dead letters%s\n", l.n, more)
		}
		return nil
	}
	if err := l.flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(l.w, "%d dead letters%s\n", l.n, more)
	return err
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

func replay(ctx context.Context, opts []kgo.Opt, w io.Writer, ds []deadletter.DeadLetter, rule deadletter.Rule, format string, dryRun bool) error {
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
		r, err := deadletter.Replay(d, rule, now)
		if err != nil {
			skipped++
			line.Action, line.Reason = "skipped", err.Error()
			if format == "json" {
				if err := writeJSONLine(w, line); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(w, "skip %s[%d]@%d key %s: %s\n", d.Record.Topic, d.Partition, d.Offset, strconv.QuoteToGraphic(d.Key), term.Quote(err.Error()))
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
		fmt.Fprintf(w, "%s %d to %s\n", verb, byTopic[t], term.Quote(t))
	}
	fmt.Fprintf(w, "%s %d, skipped %d\n", verb, len(recs), skipped)
	return nil
}
