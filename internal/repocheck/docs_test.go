package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

var (
	// mdLink matches an inline Markdown link or image, [text](target) or
	// [text](target "title"), and captures the target.
	mdLink = regexp.MustCompile(`\]\(([^()\s]+)(?:\s+"[^"]*")?\)`)
	// codeSpan matches an inline code span, whose text is not Markdown.
	codeSpan = regexp.MustCompile("`[^`]*`")
	// scheme matches a target that is a URL rather than a path.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// heading matches an ATX heading and captures its text.
	heading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
)

// TestDocLinks checks every relative link of README.md and docs/*.md: the
// file or directory it names exists, and an #anchor into a Markdown file
// (or into the page itself) names one of its headings.
func TestDocLinks(t *testing.T) {
	root, pages := docPages(t)
	pages = append(pages, filepath.Join(root, "README.md"))
	anchors := map[string]map[string]bool{} // Markdown file -> its heading anchors
	n := 0
	for _, page := range pages {
		rel, _ := filepath.Rel(root, page)
		for _, l := range pageLinks(t, page) {
			n++
			path, anchor, _ := strings.Cut(l.target, "#")
			file := page
			if path != "" {
				file = filepath.Join(filepath.Dir(page), filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); err != nil {
				t.Errorf("%s:%d: link %s: %s does not exist", rel, l.line, l.target, path)
				continue
			}
			if anchor == "" || !strings.HasSuffix(file, ".md") {
				continue
			}
			if anchors[file] == nil {
				anchors[file] = headingAnchors(t, file)
			}
			if !anchors[file][anchor] {
				t.Errorf("%s:%d: link %s: no heading with the anchor #%s in %s", rel, l.line, l.target, anchor, filepath.Base(file))
			}
		}
	}
	if n < 20 {
		t.Fatalf("found only %d relative links; has the link syntax changed?", n)
	}
}

// link is a relative link and the line it is on.
type link struct {
	target string
	line   int
}

// pageLinks returns the relative links of a Markdown file, outside code
// blocks and code spans.
func pageLinks(t *testing.T, path string) []link {
	t.Helper()
	var links []link
	for i, line := range proseLines(t, path) {
		if line == "" {
			continue
		}
		for _, m := range mdLink.FindAllStringSubmatch(codeSpan.ReplaceAllString(line, "code"), -1) {
			if target := m[1]; !scheme.MatchString(target) {
				links = append(links, link{target: target, line: i + 1})
			}
		}
	}
	return links
}

// headingAnchors returns the anchors GitHub gives the headings of a Markdown
// file, with -1, -2, ... on repeated ones.
func headingAnchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	anchors := map[string]bool{}
	seen := map[string]int{}
	for _, line := range proseLines(t, path) {
		m := heading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		a := anchor(m[1])
		if k := seen[a]; k > 0 {
			anchors[a+"-"+strconv.Itoa(k)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// anchor is GitHub's anchor for a heading's text: lower case, spaces to
// '-', and every other character but letters, digits, '-' and '_' dropped.
func anchor(text string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(text) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// proseLines returns the lines of a Markdown file, with the lines of fenced
// code blocks (and their fences) blanked, so line numbers stay right.
func proseLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	fence := ""
	for i, line := range lines {
		trimmed := strings.TrimSpace(line)
		switch {
		case fence != "":
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			lines[i] = ""
		case strings.HasPrefix(trimmed, "```"), strings.HasPrefix(trimmed, "~~~"):
			fence = trimmed[:3]
			lines[i] = ""
		}
	}
	return lines
}

// TestAnchor pins the heading anchor rule on headings of this repository's
// pages.
func TestAnchor(t *testing.T) {
	for _, tc := range []struct {
		heading, want string
	}{
		{heading: "Schedule from your service", want: "schedule-from-your-service"},
		{heading: "From the shell (kcat)", want: "from-the-shell-kcat"},
		{heading: "Dead letters: `hourglass dlq`", want: "dead-letters-hourglass-dlq"},
		{heading: "`sql`: Postgres, MySQL and MariaDB", want: "sql-postgres-mysql-and-mariadb"},
		{heading: "Load testing (k6)", want: "load-testing-k6"},
		{heading: "HourglassEarlyFire", want: "hourglassearlyfire"},
		{heading: "snake_case and kebab-case", want: "snake_case-and-kebab-case"},
		{heading: "Ünïcode letters", want: "ünïcode-letters"},
	} {
		if got := anchor(tc.heading); got != tc.want {
			t.Errorf("anchor(%q) = %q, want %q", tc.heading, got, tc.want)
		}
	}
}

// TestDocsReachable checks that README.md links every page of docs/, so
// that no page (a guide such as migrating.md) is found only by listing the
// directory.
func TestDocsReachable(t *testing.T) {
	root, pages := docPages(t)
	linked := map[string]bool{}
	for _, l := range pageLinks(t, filepath.Join(root, "README.md")) {
		path, _, _ := strings.Cut(l.target, "#")
		linked[filepath.Clean(filepath.Join(root, filepath.FromSlash(path)))] = true
	}
	for _, p := range pages {
		if !linked[p] {
			rel, _ := filepath.Rel(root, p)
			t.Errorf("README.md does not link %s", rel)
		}
	}
}

// scriptRef matches a script of the repository named in a page:
// scripts/name.sh.
var scriptRef = regexp.MustCompile(`\bscripts/[a-z0-9_-]+\.sh\b`)

// TestDocScripts checks that every scripts/*.sh that README.md and
// docs/*.md tell the reader to run exists (docs/outcomes.md's
// scripts/clickhouse.sh, say).
func TestDocScripts(t *testing.T) {
	root, pages := docPages(t)
	pages = append(pages, filepath.Join(root, "README.md"))
	seen := 0
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range scriptRef.FindAllString(string(b), -1) {
			seen++
			if _, err := os.Stat(filepath.Join(root, s)); err != nil {
				rel, _ := filepath.Rel(root, page)
				t.Errorf("%s names %s, which does not exist", rel, s)
			}
		}
	}
	if seen == 0 {
		t.Fatal("no page names a script; the test is not seeing the repository")
	}
}

// docPages returns the repository's root and its docs/*.md pages; it
// fails the test when it finds fewer than three (it is not seeing the
// repository).
func docPages(t *testing.T) (root string, pages []string) {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	pages, err = filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil || len(pages) < 3 {
		t.Fatalf("docs pages under %s: %v, %v; the test is not seeing the repository", root, pages, err)
	}
	return root, pages
}
