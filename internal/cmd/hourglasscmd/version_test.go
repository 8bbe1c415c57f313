package hourglasscmd_test

import (
	"errors"
	"flag"
	"runtime"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

func TestVersion(t *testing.T) {
	stdout, stderr, err := cmdtest.Run(t, hourglasscmd.Run, "version")
	if err != nil || stderr != "" {
		t.Fatalf("hourglass version: %v\n%s", err, stderr)
	}
	if !strings.HasPrefix(stdout, "hourglass ") || !strings.Contains(stdout, runtime.Version()) || strings.Count(stdout, "\n") != 1 {
		t.Errorf("hourglass version printed %q: want one line, the name, a version and %s", stdout, runtime.Version())
	}

	_, stderr, err = cmdtest.Run(t, hourglasscmd.Run, "version", "--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "Usage: hourglass version") {
		t.Errorf("hourglass version --help: %v\n%s", err, stderr)
	}

	_, _, err = cmdtest.Run(t, hourglasscmd.Run, "version", "extra")
	var ue service.UsageError
	if !errors.As(err, &ue) {
		t.Errorf("hourglass version extra: %v, want a usage error", err)
	}

	_, stderr, _ = cmdtest.Run(t, hourglasscmd.Run, "--help")
	if !strings.Contains(stderr, "\n  version ") {
		t.Errorf("hourglass --help does not list version:\n%s", stderr)
	}
}
