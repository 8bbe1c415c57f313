package cli

import (
	"fmt"
	"io"
	"strings"
)

// Usage writes the usage header, then every flag in registration order with
// its environment variable and default:
//
//	--brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
//	      usage text
func (f *FlagSet) Usage() {
	var b strings.Builder
	if f.header != "" {
		b.WriteString(f.header)
		if !strings.HasSuffix(f.header, "\n") {
			b.WriteByte('\n')
		}
	}
	for _, e := range f.entries {
		b.WriteString("  --")
		b.WriteString(e.name)
		if e.arg != "" {
			b.WriteByte(' ')
			b.WriteString(e.arg)
		}
		var notes []string
		if e.env != "" {
			notes = append(notes, "env "+e.env)
		}
		if e.def != "" {
			notes = append(notes, "default "+e.mask(e.def))
		}
		if len(notes) > 0 {
			b.WriteString("  (")
			b.WriteString(strings.Join(notes, ", "))
			b.WriteByte(')')
		}
		b.WriteByte('\n')
		if e.usage != "" {
			b.WriteString("        ")
			b.WriteString(strings.ReplaceAll(e.usage, "\n", "\n        "))
			b.WriteByte('\n')
		}
	}
	io.WriteString(f.out, b.String())
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
	io.WriteString(w, b.String())
}

// mask hides v if the flag holds a secret.
func (e *entry) mask(v string) string {
	n := strings.ToLower(e.name)
	if v != "" && v != `""` && (strings.Contains(n, "password") || strings.Contains(n, "secret")) {
		return "***"
	}
	return v
}
