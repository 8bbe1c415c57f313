package cli

import (
	"fmt"
	"io"
	"strings"
)

// FlagsHeading introduces the flag list at the end of a command's usage
// header. It is true of every FlagSet: Usage shows each flag with its
// environment variable, or "no env" for a flag without one.
const FlagsHeading = `Flags (a flag wins over its environment variable; "no env" marks a flag without one):`

// Usage writes the usage header, then every flag in registration order with
// its environment variable, or "no env", and its default:
//
//	--brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
//	      usage text
//	--check  (no env)
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
		b.WriteString("  (")
		if e.env != "" {
			b.WriteString("env " + e.env)
		} else {
			b.WriteString("no env")
		}
		if e.def != "" {
			b.WriteString(", default " + e.mask(e.def))
		}
		b.WriteByte(')')
		b.WriteByte('\n')
		if e.usage != "" {
			b.WriteString("        ")
			b.WriteString(strings.ReplaceAll(e.usage, "\n", "\n        "))
			b.WriteByte('\n')
		}
	}
	_, _ = io.WriteString(f.out, b.String()) // as flag.PrintDefaults: nothing to return it to
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
