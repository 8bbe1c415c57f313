package kfaketest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
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

// Admin returns an admin client of c, closed when the test ends.
func Admin(t testing.TB, c *kfake.Cluster) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// topicSeq makes topic names unique across -count runs on a shared cluster.
var topicSeq atomic.Int64

// TopicName returns a topic name unique to this call, made of the test's
// name and suffix, since the tests of a package share a cluster.
func TopicName(t testing.TB, suffix string) string {
	r := strings.NewReplacer("/", ".", " ", "-")
	return fmt.Sprintf("test.%s.%s.%d", r.Replace(t.Name()), suffix, topicSeq.Add(1))
}
