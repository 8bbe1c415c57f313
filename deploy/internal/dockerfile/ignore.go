package dockerfile

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Ignore is the rules of a .dockerignore, in order. The zero value ignores
// nothing.
type Ignore struct {
	rules []ignoreRule
}

type ignoreRule struct {
	pattern *regexp.Regexp
	exclude bool
}

// ParseIgnore compiles .dockerignore patterns, one a line: ** matches any
// number of directories, * and ? do not cross a /, a leading ! re-includes.
// Blank lines and # comments are skipped; patterns are cleaned and leading
// and trailing slashes dropped. A pattern that is not UTF-8 is an error.
func ParseIgnore(b []byte) (Ignore, error) {
	var ig Ignore
	for n, line := range numbered(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		exclude := true
		if p, ok := strings.CutPrefix(line, "!"); ok {
			line, exclude = p, false
		}
		line = strings.Trim(filepath.ToSlash(filepath.Clean(line)), "/")
		re, err := regexp.Compile(patternRegexp(line))
		if err != nil {
			return Ignore{}, fmt.Errorf("line %d: pattern %q: %w", n, line, err)
		}
		ig.rules = append(ig.rules, ignoreRule{re, exclude})
	}
	return ig, nil
}

// numbered yields the lines of s with their numbers, from 1.
func numbered(s string) func(func(int, string) bool) {
	return func(yield func(int, string) bool) {
		n := 0
		for line := range strings.SplitSeq(s, "\n") {
			n++
			if !yield(n, line) {
				return
			}
		}
	}
}

// patternRegexp translates a cleaned pattern into an anchored regular
// expression; everything but the wildcards is quoted.
func patternRegexp(pattern string) string {
	var re strings.Builder
	re.WriteString("^")
	for i := 0; i < len(pattern); i++ {
		switch {
		case strings.HasPrefix(pattern[i:], "**/"):
			re.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(pattern[i:], "**"):
			re.WriteString(".*")
			i++
		case pattern[i] == '*':
			re.WriteString("[^/]*")
		case pattern[i] == '?':
			re.WriteString("[^/]")
		default:
			_, size := utf8.DecodeRuneInString(pattern[i:])
			re.WriteString(regexp.QuoteMeta(pattern[i : i+size]))
			i += size - 1
		}
	}
	re.WriteString("$")
	return re.String()
}

// Ignored reports whether the build context leaves out path (slash
// separated, relative to the context): the last rule that matches the path
// or one of its parent directories decides.
func (ig Ignore) Ignored(path string) bool {
	out := false
	for _, r := range ig.rules {
		p := path
		for {
			if r.pattern.MatchString(p) {
				out = r.exclude
				break
			}
			i := strings.LastIndex(p, "/")
			if i < 0 {
				break
			}
			p = p[:i]
		}
	}
	return out
}
