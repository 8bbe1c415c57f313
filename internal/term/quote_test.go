package term_test

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/hourglass/hourglass/internal/term"
)

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"empty", "", ""},
		{"plain", "order-42", "order-42"},
		{"spaces and punctuation", "close_failed: attempt 3 of 10 (HTTP 503)", "close_failed: attempt 3 of 10 (HTTP 503)"},
		{"topic source", "hourglass.cancel[3]@1700", "hourglass.cancel[3]@1700"},
		{"graphic unicode", "Bestellung größer 5 € – 注文", "Bestellung größer 5 € – 注文"},
		{"quote inside", `say "hi"`, `say "hi"`},
		{"leading quote", `"42"`, `"\"42\""`},
		{"escape sequence", "\x1b[2Jgone", `"\x1b[2Jgone"`},
		{"carriage return", "ok\rFAKE", `"ok\rFAKE"`},
		{"newline", "a\nb", `"a\nb"`},
		{"tab", "a\tb", `"a\tb"`},
		{"bidi override", "abc\u202Edef", `"abc\u202edef"`},
		{"bidi isolate", "\u2067x\u2069", `"\u2067x\u2069"`},
		{"zero width space", "a\u200Bb", `"a\u200bb"`},
		{"C1 CSI", "a\u009B2Jb", `"a\u009b2Jb"`},
		{"line separator", "a\u2028b", `"a\u2028b"`},
		{"NUL", "a\x00b", `"a\x00b"`},
		{"DEL", "a\x7fb", `"a\x7fb"`},
		{"invalid UTF-8", "a\xffb", `"a\xffb"`},
		{"literal replacement char", "a\uFFFDb", "a\uFFFDb"},
	}
	for _, tt := range tests {
		if got := term.Quote(tt.in); got != tt.want {
			t.Errorf("%s: Quote(%q) = %s, want %s", tt.name, tt.in, got, tt.want)
		}
	}
}

// inert reports whether s is valid UTF-8 of graphic runes only.
func inert(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}

// FuzzQuote: whatever s holds, Quote(s) is inert, and it is s itself or a
// literal that unquotes to s.
func FuzzQuote(f *testing.F) {
	for _, s := range []string{"", "42", "\x1b]0;title\x07", "a\r\nb", "\u202e", "\xff\xfe", `"`, `"\x1b"`, "\U0001F600"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		q := term.Quote(s)
		if !inert(q) {
			t.Fatalf("Quote(%q) = %q is not inert", s, q)
		}
		if q == s {
			if strings.HasPrefix(s, `"`) {
				t.Fatalf("Quote(%q) left a leading quote unquoted", s)
			}
			return
		}
		back, err := strconv.Unquote(q)
		if err != nil || back != s {
			t.Fatalf("Quote(%q) = %s unquotes to %q, %v", s, q, back, err)
		}
	})
}

func TestEscapeJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"nothing to escape", `{"key":"42","kind":"größer €"}`, `{"key":"42","kind":"größer €"}`},
		{"bidi override", "{\"key\":\"a\u202Eb\"}", `{"key":"a\u202eb"}`},
		{"C1 control", "[\"\u009B2J\"]", `["\u009b2J"]`},
		{"DEL", "\"a\x7f\"", `"a\u007f"`},
		{"indentation stays", "{\n\t\"k\": 1\n}", "{\n\t\"k\": 1\n}"},
		{"private use", "\"\uE000\"", `"\ue000"`},
		{"outside the BMP", "\"\U000E0001\"", `"\udb40\udc01"`}, // LANGUAGE TAG, a format character
		{"emoji stays", "\"\U0001F600\"", "\"\U0001F600\""},
	}
	for _, tt := range tests {
		if got := string(term.EscapeJSON([]byte(tt.in))); got != tt.want {
			t.Errorf("%s: EscapeJSON(%q) = %s, want %s", tt.name, tt.in, got, tt.want)
		}
	}
}

// FuzzEscapeJSON: the escaped JSON of any string is inert (encoding/json
// escapes the ASCII controls) and decodes to what it did before.
func FuzzEscapeJSON(f *testing.F) {
	for _, s := range []string{"", "42", "\x1b[2J\r\n", "\u202e\u2066", "\u0085\u009b", "\U000E0001\U0001F600", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b, err := json.Marshal(map[string]string{"k": s})
		if err != nil {
			t.Fatal(err)
		}
		e := term.EscapeJSON(b)
		if !inert(string(e)) {
			t.Fatalf("EscapeJSON(%s) = %s is not inert", b, e)
		}
		var before, after map[string]string
		if err := json.Unmarshal(b, &before); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(e, &after); err != nil || after["k"] != before["k"] {
			t.Fatalf("EscapeJSON(%s) = %s decodes to %q (%v), want %q", b, e, after["k"], err, before["k"])
		}
	})
}
