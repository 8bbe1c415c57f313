package e2e

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
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
			_, _ = io.Copy(io.Discard, os.Stdin) // returns when stdin closes, whatever the reason
			os.Exit(3)
		}()
		service.Main("hourglass", hourglasscmd.Run) // exits
		return
	}
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c }, kfake.GroupMinSessionTimeout(groupMinSession))
}
