package kafka

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/goleak"
)

// cluster is the kfake broker the package's tests share. Tests that need
// other broker options (TLS, SASL, control functions) start their own.
var cluster *kfake.Cluster

// testTimeout bounds every wait on a broker in these tests.
const testTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		fmt.Fprintln(os.Stderr, "start kfake:", err)
		os.Exit(1)
	}
	cluster = c
	code := m.Run()
	c.Close()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// newAdmin returns an admin client for c (the shared cluster if nil), closed
// when the test ends.
func newAdmin(t *testing.T, c *kfake.Cluster) *kadm.Client {
	t.Helper()
	if c == nil {
		c = cluster
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// testCtx returns a context bounded by testTimeout.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// topicSeq makes topic names unique across -count runs on the shared cluster.
var topicSeq atomic.Int64

// topicName returns a topic name unique to this call, since tests share a
// cluster.
func topicName(t *testing.T, suffix string) string {
	r := strings.NewReplacer("/", ".", " ", "-")
	return fmt.Sprintf("test.%s.%s.%d", r.Replace(t.Name()), suffix, topicSeq.Add(1))
}
