package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// FlagsHeading ends the usage header of a command, where the flags used to
// follow it. [FlagSet.Usage] drops it from the header and says the same in
// the note after the flags, [FlagsNote].
const FlagsHeading = `Flags (a flag wins over its environment variable; "no env" marks a flag without one):`

// FlagsNote follows the flags in Usage.
const FlagsNote = `A flag wins over its environment variable; "no env" marks a flag without one.`

// durationsNote follows FlagsNote when a flag takes a duration.
const durationsNote = `Durations take the units ms, s, m, h and d (24h): 250ms, 1m30s, 7d, 1d12h.`

// Indents of Usage: a flag's line, the rest of that line when it does not
// fit, and its description.
const (
	flagIndent  = 2
	moreIndent  = 10
	usageIndent = 8
)

// DefaultWidth is the width of Usage when COLUMNS does not say one.
const DefaultWidth = 80

// minWidth is the narrowest Usage wraps to, whatever COLUMNS says.
const minWidth = 40

// Usage writes the command's help, what matters first:
//
//   - the usage paragraph of the header (the one that begins "Usage:"),
//     then the header's first paragraph, which says what the command does,
//     then the paragraphs after the usage (examples);
//   - the flags by section (Essential first; see [FlagSet.Section]), each
//     with its environment variable, or "no env", and its default, its
//     description indented under it;
//   - [FlagsNote], and the rest of the header: the paragraphs between the
//     first and the usage, which say how the command works.
//
// A header without a usage paragraph is written first as it is. Text is
// wrapped to the width in the COLUMNS environment variable, or
// [DefaultWidth]: descriptions, and header paragraphs that have a line
// longer than that and no indented line. A flag line keeps its name and
// environment variable together and wraps the rest:
//
//	--brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
//	      usage text
//	--check  (no env)
//	      usage text
func (f *FlagSet) Usage() {
	width := f.width()
	top, details := splitHeader(f.header)
	var b strings.Builder
	for i, p := range top {
		if i > 0 {
			b.WriteByte('\n')
		}
		writeParagraph(&b, p, width)
	}
	for _, g := range f.groups() {
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(g.title + ":\n")
		for _, e := range g.entries {
			e.writeUsage(&b, width)
		}
	}
	b.WriteByte('\n')
	writeParagraph(&b, FlagsNote, width)
	if f.hasDurations() {
		writeParagraph(&b, durationsNote, width)
	}
	for _, p := range details {
		b.WriteByte('\n')
		writeParagraph(&b, p, width)
	}
	_, _ = io.WriteString(f.out, b.String()) // as flag.PrintDefaults: nothing to return it to
}

// width is the width Usage wraps to.
func (f *FlagSet) width() int {
	if v, ok := f.lookupEnv("COLUMNS"); ok {
		if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n > 0 {
			return max(n, minWidth)
		}
	}
	return DefaultWidth
}

func (f *FlagSet) hasDurations() bool {
	for _, e := range f.entries {
		if _, ok := e.val.(*durationValue); ok {
			return true
		}
	}
	return false
}

// splitHeader splits a usage header into its paragraphs: top are the
// usage paragraph, the first paragraph and those after the usage; details
// the paragraphs between the first and the usage. FlagsHeading is dropped.
// Without a usage paragraph, top is the whole header.
func splitHeader(h string) (top, details []string) {
	h = strings.TrimSpace(strings.Replace(h, FlagsHeading, "", 1))
	if h == "" {
		return nil, nil
	}
	paras := strings.Split(h, "\n\n")
	u := -1
	for i, p := range paras {
		if strings.HasPrefix(p, "Usage:") {
			u = i
			break
		}
	}
	if u <= 0 {
		return []string{h}, nil
	}
	top = append(top, paras[u], paras[0])
	top = append(top, paras[u+1:]...)
	return top, paras[1:u]
}

// writeParagraph writes p, wrapped to width when a line of it is longer
// and none is indented (a list or an example keeps its lines), and a
// newline.
func writeParagraph(b *strings.Builder, p string, width int) {
	p = strings.TrimRight(p, "\n")
	rewrap := false
	for line := range strings.Lines(p) {
		line = strings.TrimRight(line, "\n")
		if strings.HasPrefix(line, " ") || strings.HasPrefix(line, "Usage:") {
			rewrap = false
			break
		}
		if len(line) > width {
			rewrap = true
		}
	}
	if !rewrap {
		b.WriteString(p + "\n")
		return
	}
	for _, line := range wrap(strings.Fields(p), width, 0, 0, 0) {
		b.WriteString(line + "\n")
	}
}

// writeUsage writes the lines of e in Usage.
func (e *entry) writeUsage(b *strings.Builder, width int) {
	// The name and the variable stay on one line; the default may wrap.
	head := strings.Repeat(" ", flagIndent) + "--" + e.name
	if e.arg != "" {
		head += " " + e.arg
	}
	if e.env != "" {
		head += "  (env " + e.env
	} else {
		head += "  (no env"
	}
	words := []string{head}
	if e.def != "" {
		words[0] += ","
		words = append(words, "default "+e.mask(e.def))
	}
	words[len(words)-1] += ")"
	for _, line := range wrap(words, width, 0, moreIndent, 1) {
		b.WriteString(line + "\n")
	}
	if e.usage == "" {
		return
	}
	for para := range strings.SplitSeq(e.usage, "\n") {
		for _, line := range wrap(strings.Fields(para), width, usageIndent, usageIndent, 0) {
			b.WriteString(line + "\n")
		}
	}
}

// wrap fills lines of at most width with words, the first line indented by
// first spaces, the others by rest. A word from words[cutFrom] on that does
// not fit is cut after its commas if it has any (a list: 1m,2m,5m,...); any
// other word too long for a line has a line of its own.
func wrap(words []string, width, first, rest, cutFrom int) []string {
	var lines []string
	line, empty := strings.Repeat(" ", first), true
	put := func(s, sep string) {
		switch {
		case empty:
			line += s
		case len(line)+len(sep)+len(s) <= width:
			line += sep + s
		default:
			lines = append(lines, line)
			line = strings.Repeat(" ", rest) + s
		}
		empty = false
	}
	for i, w := range words {
		if i < cutFrom || len(line)+1+len(w) <= width || !strings.Contains(w, ",") {
			put(w, " ")
			continue
		}
		for j, item := range strings.SplitAfter(w, ",") {
			sep := ""
			if j == 0 {
				sep = " "
			}
			if item != "" {
				put(item, sep)
			}
		}
	}
	return append(lines, line)
}

// PrintConfig writes every flag's effective value and its source, one per
// line in registration order, as `--name=value (source)`. An empty value is
// written as "". The non-empty value of a flag whose name contains "password"
// or "secret" is written as ***.
func (f *FlagSet) PrintConfig(w io.Writer) {
	var b strings.Builder
	for _, e := range f.entries {
		v := e.val.String()
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(&b, "--%s=%s (%s)\n", e.name, e.mask(v), e.source)
	}
	_, _ = io.WriteString(w, b.String()) // as Usage
}

// mask hides v if the flag holds a secret.
func (e *entry) mask(v string) string {
	n := strings.ToLower(e.name)
	if v != "" && v != `""` && (strings.Contains(n, "password") || strings.Contains(n, "secret")) {
		return "***"
	}
	return v
}
