package repocheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// exampleMarker matches the comment that names the file of examples/ the
// code block after it shows.
var exampleMarker = regexp.MustCompile(`^<!-- (examples/\S+) -->$`)

// shownExamples are the files of examples/ README.md must show, each in a
// code block after its marker.
var shownExamples = []string{
	"examples/go/main.go",
	"examples/java/Schedule.java",
	"examples/python/confluent.py",
	"examples/kcat/schedule.sh",
}

// TestREADMEExamples checks that each code block of README.md after a
// marker <!-- examples/PATH --> is that file, byte for byte, so that the
// snippets users copy are the producers examples/run.sh runs, and that
// every file of shownExamples is shown.
func TestREADMEExamples(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	shown := map[string]bool{}
	for i := 0; i < len(lines); i++ {
		m := exampleMarker.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		path := m[1]
		shown[path] = true
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Errorf("README.md:%d: marker of %s is not followed by a code block", i+1, path)
			continue
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Errorf("README.md:%d: the code block of %s does not end", i+2, path)
			continue
		}
		block := strings.Join(lines[i+2:end], "\n") + "\n"
		want, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
		if err != nil {
			t.Errorf("README.md:%d: %v", i+1, err)
			continue
		}
		if block != string(want) {
			t.Errorf("README.md:%d: the code block differs from %s; copy the file into it:\n%s", i+2, path, firstDiff(block, string(want)))
		}
		i = end
	}
	for _, path := range shownExamples {
		if !shown[path] {
			t.Errorf("README.md shows no code block marked <!-- %s -->", path)
		}
	}
}

// firstDiff describes the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < min(len(g), len(w)); i++ {
		if g[i] != w[i] {
			return "line " + strconv.Itoa(i+1) + ":\n  README: " + g[i] + "\n  file:   " + w[i]
		}
	}
	return "README has " + strconv.Itoa(len(g)) + " lines, the file " + strconv.Itoa(len(w))
}
