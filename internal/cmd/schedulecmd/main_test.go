package schedulecmd_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cluster is the kfake broker the package's tests share; each test has
// topics of its own prefix.
var cluster *kfake.Cluster

// partitions of every test topic.
const partitions = 4

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
}

// pipeline creates the topics of a pipeline with the default ladder under a
// prefix of the test's own, and returns the prefix and the flags that
// point a command at it.
func pipeline(t *testing.T) (prefix string, flags []string) {
	t.Helper()
	prefix = kfaketest.TopicName(t, "p") + "."
	names := append(tiers.DefaultTable().Topics(prefix), tiers.CancelTopic(prefix), tiers.CancellationsTopic(prefix))
	for _, n := range names {
		if err := cluster.CreateTopic(n, partitions, nil); err != nil {
			t.Fatal(err)
		}
	}
	return prefix, []string{"--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic-prefix", prefix}
}

// records returns every record of topic, read from its start up to its
// high watermark: committed ones only, or with uncommitted also those of
// aborted transactions.
func records(t *testing.T, topic string, uncommitted bool) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	isolation := kgo.ReadCommitted()
	if uncommitted {
		isolation = kgo.ReadUncommitted()
	}
	left := map[int32]int64{} // partition -> high watermark
	for p := range int32(partitions) {
		if pi := cluster.PartitionInfo(topic, p); pi != nil && pi.HighWatermark > 0 {
			left[p] = pi.HighWatermark
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ConsumeTopics(topic), kgo.KeepControlRecords(),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchIsolationLevel(isolation))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for len(left) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		for it := fs.RecordIter(); !it.Done(); {
			r := it.Next()
			if r.Offset >= left[r.Partition]-1 {
				delete(left, r.Partition)
			}
			if !r.Attrs.IsControl() {
				out = append(out, r)
			}
		}
	}
	if len(left) > 0 {
		t.Fatalf("%s: partitions %v not read to their end", topic, left)
	}
	return out
}
