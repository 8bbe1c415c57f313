package console_test

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// cluster is the package's broker.
var cluster *kfake.Cluster

func TestMain(m *testing.M) {
	chtest.Main(m, "console", func() func() {
		c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
		if err != nil {
			fmt.Fprintln(os.Stderr, "console: start kfake:", err)
			os.Exit(1)
		}
		cluster = c
		return c.Close
	})
}
