package statuscmd

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/term"
)

// Status is what status found about a task: the output of --format json.
// The field names are stable.
type Status struct {
	TaskID string `json:"task_id"`
	NowMs  int64  `json:"now_ms"`
	// SinceMs is where the reads began (--since before now).
	SinceMs int64 `json:"since_ms"`
	// AllPartitions is set when every partition of each topic was read
	// (--all-partitions), not only the one murmur2 gives the task id.
	AllPartitions bool `json:"all_partitions,omitempty"`
	// Complete is set when every partition was read to its end and
	// ClickHouse, when asked, answered: a status that is not complete may
	// miss records.
	Complete  bool                  `json:"complete"`
	Deadlines []taskstatus.Deadline `json:"deadlines"`
	// Events are the task's records and ClickHouse rows, by time: of the
	// records, the latest 1000.
	Events []taskstatus.Event `json:"events"`
	Read   []*PartRead        `json:"read"`
	CH     *ClickHouseQ       `json:"clickhouse,omitempty"`
	// Index is the lookup in the deadline index (--clickhouse without
	// --scan), which takes the place of Read.
	Index *IndexQ `json:"index,omitempty"`

	// EventsDropped counts the older records of the task left out of
	// Events; the deadlines they belong to may show a later state only.
	EventsDropped int `json:"events_dropped,omitempty"`
}

// ClickHouseQ is what the ClickHouse query found.
type ClickHouseQ struct {
	Database string `json:"database"`
	// Rows counts the attempts ClickHouse holds; Only those of them that
	// no outcome event read from Kafka showed.
	Rows  int    `json:"rows"`
	Only  int    `json:"only_in_clickhouse"`
	Error string `json:"error,omitempty"`
}

// render writes st as text or JSON.
func render(w io.Writer, st *Status, format string) error {
	if format == "json" {
		b, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(term.EscapeJSON(b), '\n'))
		return err
	}
	return renderText(w, st)
}

// renderText writes st for a person: the deadlines, the timeline and what
// was read. Strings from records go through term.Quote.
func renderText(w io.Writer, st *Status) error {
	fmt.Fprintf(w, "task %s\n", term.Quote(st.TaskID))
	unread := unreadParts(st)
	switch {
	case st.Index != nil && st.Index.Error == "" && len(st.Deadlines) == 0:
		fmt.Fprintf(w, "  the deadline index holds nothing of it: it was not scheduled under this prefix since the recorder indexes it; --scan reads Kafka too\n")
	case len(st.Deadlines) == 0 && len(unread) == 0 && st.AllPartitions:
		fmt.Fprintf(w, "  no records of it since %s in any partition\n", taskstatus.Stamp(st.SinceMs))
	case len(st.Deadlines) == 0 && len(unread) == 0:
		fmt.Fprintf(w, "  %s\n", notFound(st))
	case len(st.Deadlines) == 0:
		fmt.Fprintf(w, "  no records of it found since %s, but %s could not be read to the end (below): records of it may be there\n",
			taskstatus.Stamp(st.SinceMs), strings.Join(unread, ", "))
	case len(unread) > 0:
		fmt.Fprintf(w, "  %s could not be read to the end (below): records of it may be missing\n", strings.Join(unread, ", "))
	}
	for _, d := range st.Deadlines {
		name := "deadline " + taskstatus.Stamp(d.DeadlineMs)
		if d.DeadlineMs == 0 {
			name = "deadline unknown"
		}
		fmt.Fprintf(w, "  %s: %s\n", name, d.Summary)
	}
	if len(st.Events) > 0 {
		fmt.Fprintln(w)
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tEVENT\tRECORD\tDETAIL")
		for i := range st.Events {
			e := &st.Events[i]
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", taskstatus.Stamp(e.TimeMs), label(e), e.Where(), eventDetail(e))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if st.EventsDropped > 0 {
		fmt.Fprintf(w, "%d older records of the task not shown: status keeps the latest %d (a shorter --since reads fewer)\n", st.EventsDropped, maxEvents)
	}
	fmt.Fprintln(w)
	if st.Index != nil {
		fmt.Fprint(w, indexText(st.Index))
		return nil
	}
	fmt.Fprint(w, readText(st))
	if st.CH == nil {
		fmt.Fprintln(w, "read from Kafka, a scan that grows with the topics; --clickhouse looks the task up in the deadline index instead")
	}
	return nil
}

// notFound says where status looked for a task it found no records of, in
// the partitions murmur2 gives its key, and where else they may be.
func notFound(st *Status) string {
	var ps []int32
	for _, p := range st.Read {
		if !p.Missing && !slices.Contains(ps, p.Partition) {
			ps = append(ps, p.Partition)
		}
	}
	where := "the partition of each topic murmur2 gives its key"
	if len(ps) == 1 {
		where = fmt.Sprintf("partition %d of each topic (the partition murmur2 gives its key)", ps[0])
	}
	return fmt.Sprintf("no records of %s since %s in %s, as the Go and Java clients and the examples partition it; "+
		"a producer that partitions otherwise (kcat without -X partitioner=murmur2_random) puts it elsewhere: --all-partitions reads every partition",
		term.Quote(st.TaskID), taskstatus.Stamp(st.SinceMs), where)
}

// unreadParts names the partitions that were not read to their end: their
// offsets could not be looked up, a fetch failed, or --timeout came first.
func unreadParts(st *Status) []string {
	var out []string
	for _, p := range st.Read {
		if !p.Missing && (p.Error != "" || !p.Complete) {
			out = append(out, p.String())
		}
	}
	return out
}

// label names an event in the timeline.
func label(e *taskstatus.Event) string {
	switch {
	case e.Type == taskstatus.TypeDelay && e.Attempt > 1 && e.Hops == 0:
		return "retry"
	case e.Type == taskstatus.TypeDelay && e.Hops > 0:
		return "hop"
	case e.Type == taskstatus.TypeDelay:
		return "scheduled"
	case e.Type == taskstatus.TypeCancellation && e.Withdrawn:
		return "withdrawal"
	case e.Type == taskstatus.TypeOutcome && e.Outcome != "":
		return "outcome " + term.Quote(e.Outcome)
	}
	return strings.ReplaceAll(e.Type, "_", " ")
}

// eventDetail is the detail column of an event.
func eventDetail(e *taskstatus.Event) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if e.Type == taskstatus.TypeCancellation {
		switch {
		case e.Withdrawn:
			add("withdraws the task's cancellation")
		case e.DueMs != 0:
			add("the deadline due %s", taskstatus.Stamp(e.DueMs))
		default:
			add("every deadline scheduled until then")
		}
	} else if e.DueMs != 0 {
		add("due %s", taskstatus.Stamp(e.DueMs))
	}
	if e.Attempt > 1 {
		add("attempt %d", e.Attempt)
	}
	for _, f := range []struct{ name, v string }{
		{"kind", e.Kind}, {"target", e.Target}, {"path", e.Path}, {"reason", e.Reason},
		{"detail", e.Detail}, {"error", e.Error}, {"of", e.Of}, {"invalid", e.Invalid},
	} {
		if f.v != "" {
			add("%s %s", f.name, term.Quote(f.v))
		}
	}
	if e.InClickHouse {
		add("in ClickHouse too")
	}
	return strings.Join(parts, ", ")
}

// readText says what was read, and what was not.
func readText(st *Status) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read since %s:\n", taskstatus.Stamp(st.SinceMs))
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	for _, p := range st.Read {
		switch {
		case p.Missing:
			fmt.Fprintf(tw, "  %s\tdoes not exist\n", p.Topic)
		case p.Error != "":
			fmt.Fprintf(tw, "  %s\tnot read: %s\n", p, term.Quote(p.Error))
		default:
			note := ""
			if !p.Complete {
				note = " (incomplete)"
			}
			fmt.Fprintf(tw, "  %s\t%d/%d records read, %d of the task%s\n", p, p.Read, p.total(), p.Matched, note)
		}
	}
	tw.Flush()
	if c := st.CH; c != nil && c.Error != "" {
		fmt.Fprintf(&b, "clickhouse: %s\n", term.Quote(c.Error))
	} else if c != nil {
		fmt.Fprintf(&b, "clickhouse %s: %d attempts, %d of them not among the outcome events read from Kafka\n", c.Database, c.Rows, c.Only)
	}
	return b.String()
}
