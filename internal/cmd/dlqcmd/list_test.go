package dlqcmd_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/dlqcmd"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// heapWriter discards what is written and, at every tenth write and at the
// end, measures the live heap (after a collection): the most it saw is what
// the command held while it printed.
type heapWriter struct {
	writes int
	most   uint64
}

func (w *heapWriter) Write(p []byte) (int, error) {
	if w.writes++; w.writes%10 == 1 {
		w.measure()
	}
	return len(p), nil
}

func (w *heapWriter) measure() {
	w.most = max(w.most, liveHeap())
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestDLQListMemory: dlq list of 100 dead letters of 900 kB each (90 MB of
// values) holds a few megabytes at a time, in both formats: it keeps
// only what it prints, and prints each as it reads it. It held every record
// it listed, values and all, until it had read them all.
func TestDLQListMemory(t *testing.T) {
	broker, _ := dlqCluster(t, "m.dlq")
	prod, err := kgo.NewClient(kgo.SeedBrokers(broker), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, size = 100, 900_000
	for i := range n {
		r := &kgo.Record{Topic: "m.dlq", Key: fmt.Append(nil, i), Value: make([]byte, size),
			Headers: []kgo.RecordHeader{header(tiers.HeaderReason, []byte("close_failed: HTTP 500"))}}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	// What a scan may hold at once: a fetch or two of 4 MiB, decoded, and
	// the client's buffers; far below the 90 MB listed.
	const bound = 24 << 20
	for _, format := range []string{"text", "json"} {
		base := liveHeap()
		w := &heapWriter{}
		var stderr strings.Builder
		if err := dlqcmd.Run(ctx, []string{"list", "--brokers", broker, "--topic-prefix", "m.", "--format", format}, w, &stderr); err != nil {
			t.Fatalf("list --format %s: %v\n%s", format, err, stderr.String())
		}
		w.measure()
		grew := int64(w.most) - int64(base)
		t.Logf("list --format %s of %d dead letters of %d bytes: the live heap grew by %.1f MB at most", format, n, size, float64(grew)/1e6)
		if grew > bound {
			t.Errorf("list --format %s held %.1f MB while it printed %d dead letters of %d bytes, want at most %d MB", format, float64(grew)/1e6, n, size, bound>>20)
		}
	}
}
