package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hourglass/hourglass/internal/term"
)

// Formats of Render.
const (
	FormatText = "text"
	FormatJSON = "json"
	FormatHTML = "html"
)

// Formats lists the formats Render accepts.
var Formats = []string{FormatText, FormatJSON, FormatHTML}

// Render writes r in format: FormatText, FormatJSON or FormatHTML.
func (r *Report) Render(w io.Writer, format string) error {
	switch format {
	case FormatText:
		return r.WriteText(w)
	case FormatJSON:
		return r.WriteJSON(w)
	case FormatHTML:
		return r.WriteHTML(w)
	}
	return fmt.Errorf("report: unknown format %q: want text, json or html", format)
}

// WriteJSON writes r as indented JSON, with the runes a terminal may act on
// that encoding/json leaves raw (bidi controls, C1 controls) as \u escapes
// (term.EscapeJSON).
func (r *Report) WriteJSON(w io.Writer) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return err
	}
	_, err := w.Write(term.EscapeJSON(b.Bytes()))
	return err
}

// thousands formats n with a comma between groups of three digits:
// 1234567 is "1,234,567". The text and HTML reports write counts with it;
// JSON keeps plain numbers.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	b := make([]byte, 0, len(s)+len(s)/3+1)
	if neg {
		b = append(b, '-')
	}
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			b = append(b, ',')
		}
		b = append(b, s[i])
	}
	return string(b)
}

// ms formats milliseconds as a duration: 1500 is "1.5s". Beyond
// time.Duration's range (about 292 years, only in a hostile event) it
// counts the hours itself rather than wrap around.
func ms(v int64) string {
	const maxMs = math.MaxInt64 / int64(time.Millisecond)
	if v >= -maxMs && v <= maxMs {
		return (time.Duration(v) * time.Millisecond).String()
	}
	sign, h, rem := "", v/3_600_000, v%3_600_000
	if v < 0 {
		sign, h, rem = "-", -h, -rem
	}
	// The remainder as Duration writes it after its hours: 1h27m44.703s.
	rest := strings.TrimPrefix((time.Hour + time.Duration(rem)*time.Millisecond).String(), "1h")
	return sign + strconv.FormatInt(h, 10) + "h" + rest
}

// timeLayout is how times are written in text and HTML: UTC, to the second
// (to the millisecond in lists of attempts).
const (
	timeLayout   = "2006-01-02 15:04:05"
	attemptTime  = "2006-01-02 15:04:05.000"
	minuteLayout = "2006-01-02 15:04"
	noneLabel    = "-"
	defaultLabel = "(default)"
	tierNoneName = "(none)"
)

func tierName(t string) string {
	if t == "" {
		return tierNoneName
	}
	return t
}

// WriteText writes r as plain text with aligned tables. Every string that
// comes from events (task ids, kinds, outcomes, tiers, paths, errors) is
// written through term.Quote, so none can reach a terminal with a control
// character or break a row.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	r.writeSummary(&b)
	writeTable(&b, "Outcomes", "OUTCOME\tATTEMPTS", r.outcomeRows())
	writeTable(&b, "Attempts by kind and outcome", "KIND\tOUTCOME\tATTEMPTS\tDUPLICATE ROWS", r.countRows())
	writeTable(&b, "Lateness of final attempts by first tier and kind", "TIER\tKIND\tCOUNT\tP50\tP90\tP99\tP99.9\tMAX", r.latenessRows())
	writeTable(&b, fmt.Sprintf("Latest %d late (over %s) or failed attempts, newest first", r.Limit, ms(r.LateThresholdMs)),
		"CLOSED (UTC)\tTASK\tKIND\tOUTCOME\tLATENESS\tATTEMPT\tPATH\tERROR OR DETAIL", r.lateRows())
	writeTable(&b, fmt.Sprintf("Lateness over time (%s buckets)", ms(r.BucketMs)), "START (UTC)\tFINAL\tP50\tP99\tMAX\tFAILED\tRETRIED", r.timelineRows())
	if f := r.Forecast; f != nil {
		f.writeText(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSummary writes the report's heading: window, totals and overall
// lateness.
func (r *Report) writeSummary(b *strings.Builder) {
	s := r.Summary
	fmt.Fprintf(b, "Hourglass report: %s to %s UTC (%s), database %s\n\n", r.From.Format(timeLayout), r.To.Format(timeLayout), r.To.Sub(r.From).Round(time.Second), term.Quote(r.Database))
	fmt.Fprintf(b, "Attempts %s (tasks %s): final %s, retried %s, failed %s; late (over %s) %s; duplicate rows ignored %s\n",
		thousands(s.Attempts), thousands(s.Tasks), thousands(s.Final), thousands(s.Retried), thousands(s.Failed), ms(r.LateThresholdMs),
		thousands(s.Late), thousands(s.DuplicateRows))
	if s.Lateness.Count > 0 {
		l := s.Lateness
		fmt.Fprintf(b, "Lateness of final attempts: p50 %s, p90 %s, p99 %s, p99.9 %s, max %s\n", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max))
	} else {
		b.WriteString("No final attempts in this window.\n")
	}
}

// writeTable writes a titled table of tab-separated columns, aligned, or
// "none" when it has no rows.
func writeTable(b *strings.Builder, title string, header string, rows [][]string) {
	fmt.Fprintf(b, "\n%s\n", title)
	if len(rows) == 0 {
		b.WriteString("  none\n")
		return
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  "+header)
	for _, row := range rows {
		fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
	}
	tw.Flush()
}

// outcomeRows are the rows of the Outcomes table.
func (r *Report) outcomeRows() [][]string {
	var rows [][]string
	for _, o := range r.Outcomes {
		rows = append(rows, []string{term.Quote(string(o.Outcome)), thousands(o.Attempts)})
	}
	return rows
}

// countRows are the rows of the attempts by kind and outcome table.
func (r *Report) countRows() [][]string {
	var rows [][]string
	for _, c := range r.Counts {
		rows = append(rows, []string{term.Quote(c.Kind), term.Quote(string(c.Outcome)), thousands(c.Attempts), thousands(c.DuplicateRows)})
	}
	return rows
}

// latenessRows are the rows of the lateness by tier and kind table.
func (r *Report) latenessRows() [][]string {
	var rows [][]string
	for _, l := range r.Lateness {
		rows = append(rows, []string{term.Quote(tierName(l.Tier)), term.Quote(l.Kind), thousands(l.Count), ms(l.P50), ms(l.P90), ms(l.P99), ms(l.P999), ms(l.Max)})
	}
	return rows
}

// lateRows are the rows of the late or failed attempts table; the last
// column is the error, else the detail, else noneLabel.
func (r *Report) lateRows() [][]string {
	var rows [][]string
	for _, a := range r.Late {
		why := a.Error
		if why == "" {
			why = a.Detail
		}
		if why == "" {
			why = noneLabel
		}
		rows = append(rows, []string{a.Closed.Format(attemptTime), term.Quote(a.TaskID), term.Quote(a.Kind), term.Quote(string(a.Outcome)),
			ms(a.LatenessMs), fmt.Sprint(a.Attempt), term.Quote(orNone(a.Path)), term.Quote(oneLine(why))})
	}
	return rows
}

// writeText writes the forecast: its totals, then the deadlines due by
// kind, by target and per minute.
func (f *Forecast) writeText(b *strings.Builder) {
	fmt.Fprintf(b, "\nOpen deadlines due from %s to %s UTC\n", f.From.Format(timeLayout), f.To.Format(timeLayout))
	if f.Total == 0 {
		b.WriteString("  none\n")
		return
	}
	fmt.Fprintf(b, "  total %s, overdue %s; peak %s due in the minute of %s\n",
		thousands(f.Total), thousands(f.Overdue), thousands(f.Peak.Count), f.Peak.Start.Format(minuteLayout))
	writeTable(b, "Open deadlines due by kind", "KIND\tDUE", countRows(f.ByKind))
	writeTable(b, "Open deadlines due by target", "TARGET\tDUE", countRows(f.ByTarget))
	var rows [][]string
	for _, d := range f.Due {
		rows = append(rows, []string{d.Minute.Format(minuteLayout), term.Quote(orDefault(d.Kind)), term.Quote(orDefault(d.Target)), thousands(d.Count)})
	}
	writeTable(b, "Open deadlines due per minute", "MINUTE (UTC)\tKIND\tTARGET\tDUE", rows)
}

// countRows are the rows of a table of kinds or targets.
func countRows(counts []DueCount) [][]string {
	var rows [][]string
	for _, c := range counts {
		rows = append(rows, []string{term.Quote(orDefault(c.Name)), thousands(c.Count)})
	}
	return rows
}

// orDefault names the empty kind or target of a deadline: the router's
// default.
func orDefault(s string) string {
	if s == "" {
		return defaultLabel
	}
	return s
}

// timelineRows are the rows of the lateness over time table.
func (r *Report) timelineRows() [][]string {
	var rows [][]string
	for _, k := range r.Timeline {
		rows = append(rows, []string{k.Start.Format(timeLayout), thousands(k.Count), bucketMs(k.Count, k.P50), bucketMs(k.Count, k.P99), bucketMs(k.Count, k.Max), thousands(k.Failed), thousands(k.Retried)})
	}
	return rows
}

// bucketMs formats a bucket's lateness; "-" when it has no final attempt.
func bucketMs(count, v int64) string {
	if count == 0 {
		return noneLabel
	}
	return ms(v)
}

func orNone(s string) string {
	if s == "" {
		return noneLabel
	}
	return s
}

// oneLine keeps a table row on one line and bounds its length: runs of
// white space (newlines too) become one space. Print it through term.Quote:
// control characters that are not white space stay.
func oneLine(s string) string {
	s = spaced(s)
	if r := []rune(s); len(r) > 120 {
		s = string(r[:119]) + "…"
	}
	return s
}

// spaced returns s with each run of white space as one space.
func spaced(s string) string { return strings.Join(strings.Fields(s), " ") }
