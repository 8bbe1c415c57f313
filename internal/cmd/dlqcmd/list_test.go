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
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestDLQListLimit: dlq list prints 1000 dead letters by default and says
// it stopped there; --limit 0 lists every one.
func TestDLQListLimit(t *testing.T) {
	broker, cl := dlqCluster(t, "l.dlq")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const n = 1005
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "l.dlq", Key: fmt.Append(nil, i), Headers: []kgo.RecordHeader{header(tiers.HeaderReason, []byte("due_missing: no due"))}}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	base := []string{"--brokers", broker, "--topic-prefix", "l."}
	for _, tc := range []struct {
		args []string
		rows int
		last string // the last line of stdout (text) or stderr (json)
	}{
		{nil, 1000, "1000 dead letters (stopped at --limit 1000; --limit 0 lists every one)"},
		{[]string{"--limit", "0"}, n, fmt.Sprint(n, " dead letters")},
		{[]string{"--limit", "3"}, 3, "3 dead letters (stopped at --limit 3; --limit 0 lists every one)"},
		{[]string{"--format", "json"}, 1000, "dlq list: 1000 dead letters (stopped at --limit 1000; --limit 0 lists every one)"},
		{[]string{"--format", "json", "--limit", "0"}, n, ""},
	} {
		stdout, stderr, err := cmdtest.Run(t, dlqcmd.Run, append(append([]string{"list"}, base...), tc.args...)...)
		if err != nil {
			t.Fatalf("list %v: %v\n%s", tc.args, err, stderr)
		}
		lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
		rows, last := len(lines), strings.TrimSuffix(stderr, "\n")
		if !strings.Contains(strings.Join(tc.args, " "), "json") {
			rows, last = len(lines)-2, lines[len(lines)-1] // the heading and the count
		}
		if rows != tc.rows || last != tc.last {
			t.Errorf("list %v: %d dead letters ending %q, want %d ending %q", tc.args, rows, last, tc.rows, tc.last)
		}
	}
}

// heapWriter discards what is written and, at every tenth write and at the
// end, measures the live heap (after a collection): the most it saw is what
// the command held while it printed.
type heapWriter struct {
	writes int
	most   uint64
}

func (w *heapWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes%10 == 1 {
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
