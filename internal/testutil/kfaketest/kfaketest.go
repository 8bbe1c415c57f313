package kfaketest

import (
	"fmt"
	"os"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/goleak"
)

// Main is a TestMain: it starts a one-broker cluster with opts, hands it to
// use, runs the tests, closes the cluster and checks for leaked goroutines.
// It does not return.
func Main(m *testing.M, use func(*kfake.Cluster), opts ...kfake.Opt) {
	c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
	if err != nil {
		fmt.Fprintln(os.Stderr, "kfaketest: start kfake:", err)
		os.Exit(1)
	}
	use(c)
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "kfaketest: goroutines leaked:", err)
			code = 1
		}
	}
	os.Exit(code)
}
