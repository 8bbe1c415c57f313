package topics

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
)

// cluster is the kfake broker the package's tests share. Tests that need
// other broker options start their own.
var cluster *kfake.Cluster

// testTimeout bounds every wait on a broker in these tests.
const testTimeout = 20 * time.Second

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
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
