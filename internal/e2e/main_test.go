// Package e2e holds the acceptance tests of the pipeline: a scheduler, the
// router and the canceller on one in-process kfake broker, checked against
// the invariants of DESIGN.md (never early, nothing lost, duplicates only
// from crashes and bounded, malformed records to the dead-letter topic).
package e2e

import (
	"fmt"
	"io"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"

	"github.com/hourglass/hourglass/internal/app"
)

// execEnv makes the test binary run the hourglass tool instead of the tests,
// so that TestRouterCrash can start a router as a process and SIGKILL it.
const execEnv = "HOURGLASS_E2E_EXEC"

// groupMinSession is the broker's group.min.session.timeout.ms: low enough
// for the 2s session timeout of the router process in TestRouterCrash.
const groupMinSession = time.Second

// cluster is the broker every test of the package shares; each test uses
// its own topic prefix and consumer groups (see newPipe).
var cluster *kfake.Cluster

func TestMain(m *testing.M) {
	if os.Getenv(execEnv) == "1" {
		// The test holds our stdin open while it runs; if it dies without
		// killing us (a test timeout, say), stdin closes and we go too.
		go func() {
			io.Copy(io.Discard, os.Stdin)
			os.Exit(3)
		}()
		app.Main("hourglass", app.Hourglass) // exits
		return
	}
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(groupMinSession))
	if err != nil {
		fmt.Fprintln(os.Stderr, "e2e: start kfake:", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	c.Close()
	if code == 0 {
		// Every router, canceller and client a test started must be gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "e2e: goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}
