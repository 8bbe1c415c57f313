package repocheck

import (
	"context"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// libraries are the packages that must not know the command line: they
// expose Configs whose Validate names fields, and leave flags, environment
// variables and their messages to the commands.
var libraries = []string{
	"./internal/router", "./internal/canceller", "./internal/recorder", "./internal/consumer",
	"./internal/record", "./internal/kafka", "./internal/topics", "./internal/chstore",
	"./internal/report", "./internal/cancels", "./internal/closer/...", "./internal/outcome",
	"./internal/deadletter", "./internal/console", "./internal/taskstatus",
	"./pkg/tiers",
}

// commandLine are the packages only the commands may import.
var commandLine = []string{
	"github.com/hourglass/hourglass/internal/cli",
	"github.com/hourglass/hourglass/internal/service",
}

// TestLibrariesKnowNoCommandLine runs go list over the libraries and
// reports each that depends on internal/cli, internal/service or a command.
func TestLibrariesKnowNoCommandLine(t *testing.T) {
	n := 0
	for line := range strings.Lines(goList(t, libraries...)) {
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		n++
		var bad []string
		for _, d := range strings.Fields(deps) {
			if slices.Contains(commandLine, d) || strings.HasPrefix(d, "github.com/hourglass/hourglass/internal/cmd/") {
				bad = append(bad, d)
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s depends on %s: a library does not know the command line", pkg, strings.Join(bad, ", "))
		}
	}
	if n < len(libraries) {
		t.Fatalf("go list listed %d packages, want at least %d", n, len(libraries))
	}
}

// TestBinariesLinkNoMore: the production binaries carry neither the
// embedded broker nor ClickHouse, and the router no SQL driver
// (docs/architecture.md).
func TestBinariesLinkNoMore(t *testing.T) {
	for line := range strings.Lines(goList(t, "./cmd/router", "./cmd/canceller")) {
		pkg, deps, _ := strings.Cut(strings.TrimSpace(line), " ")
		banned := []string{"github.com/twmb/franz-go/pkg/kfake", "github.com/ClickHouse/"}
		if strings.HasSuffix(pkg, "/cmd/router") {
			banned = append(banned, "github.com/jackc/pgx", "github.com/go-sql-driver/mysql")
		}
		for _, d := range strings.Fields(deps) {
			for _, b := range banned {
				if strings.HasPrefix(d, b) {
					t.Errorf("%s links %s", pkg, d)
					break
				}
			}
		}
	}
}

// goList returns, for each of pkgs, a line of its import path and its
// dependencies, from go list in the repository's root.
func goList(t *testing.T, pkgs ...string) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append([]string{"list", "-f", `{{.ImportPath}} {{join .Deps " "}}`}, pkgs...)...)
	cmd.Dir = root
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return string(out)
}
