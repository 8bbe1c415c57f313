package closer

import (
	"errors"
	"go/build"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// TestKnowsNoService: the closer packages import no service and no command,
// directly or through another package of the module: the canceller calls
// the closers, and its command builds its routes from what closerfile
// opens, never the other way.
func TestKnowsNoService(t *testing.T) {
	const module = "github.com/hourglass/hourglass/"
	forbidden := []string{"internal/canceller", "internal/router", "internal/recorder", "internal/service", "internal/cmd"}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// from holds each package of the module reached, by the package that
	// imports it ("" for the closer packages themselves).
	from := map[string]string{}
	var queue []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			rel := filepath.ToSlash(filepath.Join("internal", "closer", path))
			from[rel] = ""
			queue = append(queue, rel)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		p, err := build.ImportDir(filepath.Join(root, pkg), 0)
		if err != nil {
			var none *build.NoGoError
			if !errors.As(err, &none) {
				t.Fatalf("%s: %v", pkg, err)
			}
			continue
		}
		for _, imp := range p.Imports {
			rel, ok := strings.CutPrefix(imp, module)
			if !ok {
				continue
			}
			if _, seen := from[rel]; seen {
				continue
			}
			from[rel] = pkg
			queue = append(queue, rel)
			for _, f := range forbidden {
				if rel == f || strings.HasPrefix(rel, f+"/") {
					t.Errorf("%s is imported: %s", rel, chain(from, rel))
				}
			}
		}
	}
	if len(from) < 10 {
		t.Fatalf("reached %d packages from internal/closer; the walk is not seeing the repository", len(from))
	}
}

// chain is how pkg is reached from a closer package: a <- b <- c.
func chain(from map[string]string, pkg string) string {
	links := []string{pkg}
	for p := from[pkg]; p != ""; p = from[p] {
		links = append(links, p)
	}
	return strings.Join(links, " <- ")
}
