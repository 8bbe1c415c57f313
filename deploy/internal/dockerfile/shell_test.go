package dockerfile

import (
	"slices"
	"strings"
	"testing"
)

func TestShellWords(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		want    []string
		wantErr string // a part of the error; "" for none
	}{
		{name: "empty", in: "", want: nil},
		{name: "blanks only", in: " \t ", want: nil},
		{name: "spaces and tabs", in: " go\tbuild  ./cmd/... ", want: []string{"go", "build", "./cmd/..."}},
		{name: "operator between spaces", in: "a && b", want: []string{"a", "&&", "b"}},
		{name: "operator without spaces", in: "a&&b", want: []string{"a&&b"}},
		{name: "single quotes", in: `-ldflags '-s -w'`, want: []string{"-ldflags", "-s -w"}},
		{name: "double quotes", in: `-ldflags "-s -w -X main.v=1"`, want: []string{"-ldflags", "-s -w -X main.v=1"}},
		{name: "quotes inside a word", in: `A="x y"z`, want: []string{"A=x yz"}},
		{name: "no escapes in quotes", in: `'a\ b' "c\"`, want: []string{`a\ b`, `c\`}},
		{name: "other quote inside", in: `"it's" 'say "hi"'`, want: []string{"it's", `say "hi"`}},
		{name: "empty quotes are a word", in: `'' ""`, want: []string{"", ""}},
		{name: "backslash space", in: `a\ b c`, want: []string{"a b", "c"}},
		{name: "backslash quote", in: `\'a`, want: []string{"'a"}},
		{name: "trailing backslash kept", in: `a\`, want: []string{`a\`}},
		{name: "unterminated single", in: "echo 'x", wantErr: "unterminated '"},
		{name: "unterminated double", in: `echo "x`, wantErr: `unterminated "`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ShellWords(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("ShellWords(%q) = %q, %v; want an error containing %q", tc.in, got, err, tc.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("ShellWords(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

// quoteWords joins words so that ShellWords gives them back: every byte
// after a backslash, an empty word as ”.
func quoteWords(words []string) string {
	var b strings.Builder
	for i, w := range words {
		if i > 0 {
			b.WriteByte(' ')
		}
		if w == "" {
			b.WriteString("''")
		}
		for j := 0; j < len(w); j++ {
			b.WriteByte('\\')
			b.WriteByte(w[j])
		}
	}
	return b.String()
}

// FuzzShellWords splits arbitrary text: it must not panic; words quoted
// back split into the same words; and text without quotes or backslashes
// splits as at blanks.
func FuzzShellWords(f *testing.F) {
	for _, s := range []string{
		"", "a b", `CGO_ENABLED=0 go build -ldflags "-s -w" -o /out/ ./cmd/...`,
		`'x`, `"x`, `a\`, `a\ b`, `'' ""`, "a\t&&\tb", `"it's"`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		words, err := ShellWords(s)
		if err != nil {
			if !strings.ContainsAny(s, `'"`) {
				t.Fatalf("ShellWords(%q): %v, without a quote", s, err)
			}
			return
		}
		again, err := ShellWords(quoteWords(words))
		if err != nil || !slices.Equal(again, words) {
			t.Fatalf("ShellWords(%q) = %q; quoted back: %q, %v", s, words, again, err)
		}
		if !strings.ContainsAny(s, `'"\`) {
			want := strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == '\t' })
			if !slices.Equal(words, want) {
				t.Fatalf("ShellWords(%q) = %q, want %q", s, words, want)
			}
		}
	})
}
