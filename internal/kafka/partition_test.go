package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestKeyPartitionJava: the murmur2 vectors of Kafka's own tests (UtilsTest,
// testMurmur2) give the partitions the Java client picks.
func TestKeyPartitionJava(t *testing.T) {
	t.Parallel()
	tests := []struct {
		key  string
		hash int32 // org.apache.kafka.common.utils.Utils.murmur2
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	}
	for _, tt := range tests {
		for _, n := range []int{1, 6, 12, 1000} {
			want := int32(int(uint32(tt.hash)&0x7fffffff) % n)
			if got := KeyPartition("any", []byte(tt.key), n); got != want {
				t.Errorf("KeyPartition(%q, %d) = %d, want %d", tt.key, n, got, want)
			}
		}
	}
}

// TestKeyPartitionProduced: records produced by a default kgo client land
// where KeyPartition says.
func TestKeyPartitionProduced(t *testing.T) {
	t.Parallel()
	const partitions = 7
	topic := fmt.Sprintf("keypartition.%s", t.Name())
	if err := cluster.CreateTopic(topic, partitions, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(fmt.Sprintf("order-%d", i))})
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if want := KeyPartition(topic, r.Key, partitions); r.Partition != want {
			t.Errorf("key %s went to partition %d, KeyPartition says %d", r.Key, r.Partition, want)
		}
	}
}
