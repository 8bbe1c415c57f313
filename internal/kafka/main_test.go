package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
)

// cluster is the kfake broker the package's tests share. Tests that need
// other broker options (TLS, SASL, control functions) start their own.
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
	return kfaketest.Admin(t, c)
}

// testCtx returns a context bounded by testTimeout.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// topicName returns a topic name unique to this call.
func topicName(t *testing.T, suffix string) string { return kfaketest.TopicName(t, suffix) }
