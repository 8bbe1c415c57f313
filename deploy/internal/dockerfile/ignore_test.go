package dockerfile

import (
	"strings"
	"testing"
)

func TestIgnored(t *testing.T) {
	const hourglass = `# only what go build reads
*
!go.mod
!cmd/
!internal/
**/*_test.go
**/testdata/
`
	for _, tc := range []struct {
		name  string
		rules string
		path  string
		want  bool
	}{
		{name: "no rules", rules: "", path: "a/b.go", want: false},
		{name: "everything", rules: hourglass, path: "README.md", want: true},
		{name: "a hidden directory", rules: hourglass, path: ".git/config", want: true},
		{name: "re-included file", rules: hourglass, path: "go.mod", want: false},
		{name: "under a re-included directory", rules: hourglass, path: "internal/app/run.go", want: false},
		{name: "test file at any depth", rules: hourglass, path: "internal/app/run_test.go", want: true},
		{name: "testdata at any depth", rules: hourglass, path: "cmd/x/testdata/in.txt", want: true},
		{name: "the last rule decides", rules: "a/\n!a/b\na/b/c", path: "a/b/c", want: true},
		{name: "re-included by the last rule", rules: "a/\n!a/b", path: "a/b/c", want: false},
		{name: "star stays in a directory", rules: "a/*.go", path: "a/b/c.go", want: false},
		{name: "star in its directory", rules: "a/*.go", path: "a/c.go", want: true},
		{name: "question mark is one byte", rules: "a?c", path: "abc", want: true},
		{name: "question mark not a slash", rules: "a?c", path: "a/c", want: false},
		{name: "double star inside", rules: "a/**/z", path: "a/b/c/z", want: true},
		{name: "double star no directory", rules: "a/**/z", path: "a/z", want: true},
		{name: "trailing double star", rules: "a/**", path: "a/b/c", want: true},
		{name: "cleaned pattern", rules: "./a//b/", path: "a/b", want: true},
		{name: "leading slash", rules: "/bin", path: "bin/hourglass", want: true},
		{name: "dots are literal", rules: "a.go", path: "abgo", want: false},
		{name: "UTF-8 literal", rules: "ä.txt", path: "ä.txt", want: true},
		{name: "blank lines and comments", rules: "\n  \n# a\n  b  \n", path: "b", want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ig, err := ParseIgnore([]byte(tc.rules))
			if err != nil {
				t.Fatal(err)
			}
			if got := ig.Ignored(tc.path); got != tc.want {
				t.Errorf("rules %q: Ignored(%q) = %v, want %v", tc.rules, tc.path, got, tc.want)
			}
		})
	}
}

func TestParseIgnoreNotUTF8(t *testing.T) {
	_, err := ParseIgnore([]byte("ok\na\xffb\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("ParseIgnore of a pattern that is not UTF-8: %v, want an error naming line 2", err)
	}
}
