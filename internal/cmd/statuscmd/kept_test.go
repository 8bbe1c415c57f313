package statuscmd_test

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestStatusKeepsLatest: of a task with more records than status keeps,
// the latest are shown, and the output says how many older ones were left
// out.
func TestStatusKeepsLatest(t *testing.T) {
	defer statuscmd.SetMaxEvents(5)()
	p := newPipeline(t, nil)
	now := time.Now()
	var last time.Time
	for i := range 8 {
		last = now.Add(time.Duration(i-10) * time.Minute)
		p.schedule("many", last, last.Add(time.Hour))
	}
	st, out := p.status("many")
	if len(st.Events) != 5 || st.EventsDropped != 3 {
		t.Fatalf("%d events, %d dropped; want 5 and 3:\n%s", len(st.Events), st.EventsDropped, out)
	}
	for i, e := range st.Events {
		if want := now.Add(time.Duration(i-7) * time.Minute).UnixMilli(); e.TimeMs != want {
			t.Errorf("event %d at %d, want %d: the latest five", i, e.TimeMs, want)
		}
	}
	text, stderr, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "many")...)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(text, "3 older records of the task not shown: status keeps the latest 5") {
		t.Errorf("the text does not say what it left out:\n%s", text)
	}
}

// TestStatusClipsText: text a record carries (here a dead letter's reason
// of 100 kB) is kept cut to an outcome event's limits.
func TestStatusClipsText(t *testing.T) {
	p := newPipeline(t, nil)
	now := time.Now()
	r := p.schedule("long", now.Add(-time.Hour), now.Add(-time.Minute))
	p.deadLetter(r, "close_failed: "+strings.Repeat("x", 100_000), now)
	st, out := p.status("long")
	var dl *taskstatus.Event
	for i := range st.Events {
		if st.Events[i].Type == taskstatus.TypeDeadLetter {
			dl = &st.Events[i]
		}
	}
	if dl == nil {
		t.Fatalf("no dead letter:\n%.2000s", out)
	}
	if len(dl.Detail) != outcome.MaxDetailBytes || !strings.HasSuffix(dl.Detail, "...") {
		t.Errorf("dead letter detail of %d bytes, want it cut to %d", len(dl.Detail), outcome.MaxDetailBytes)
	}
}

// heapWriter discards what is written and measures the live heap (after a
// collection) at every fifth write: the most it saw is what the command
// held then.
type heapWriter struct {
	writes int
	most   uint64
}

func (w *heapWriter) Write(p []byte) (int, error) {
	w.writes++
	if w.writes%5 == 1 {
		w.most = max(w.most, liveHeap())
	}
	return len(p), nil
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestStatusMemory: status of a task with 60 records of 900 kB (54 MB of
// values) holds a few megabytes while it reads them: it keeps what it
// prints of each, not the record (and the fetched batch the record points
// into). The progress it writes to stderr after every poll is where the
// heap is measured.
func TestStatusMemory(t *testing.T) {
	defer statuscmd.SetProgress(0, time.Millisecond)()
	p := newPipeline(t, nil)
	prod, err := kgo.NewClient(kgo.SeedBrokers(p.c.ListenAddrs()...), kgo.ProducerBatchCompression(kgo.NoCompression()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const n, size = 60, 900_000
	now := time.Now()
	for i := range n {
		at := now.Add(time.Duration(i-n) * time.Second)
		r, err := tiers.BuildRecord(p.prefix, tiers.DefaultTable(), at, tiers.Task{ID: "big", Due: at.Add(time.Hour), Payload: make([]byte, size)})
		if err != nil {
			t.Fatal(err)
		}
		if err := prod.ProduceSync(ctx, r).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	base := liveHeap()
	w := &heapWriter{}
	var stdout strings.Builder
	if err := statuscmd.Run(ctx, append(p.flags(), "big"), &stdout, w); err != nil {
		t.Fatalf("status: %v", err)
	}
	if !strings.Contains(stdout.String(), fmt.Sprintf("%d/%d records read, %d of the task", n, n, n)) {
		t.Fatalf("status did not read the %d records:\n%s", n, stdout.String())
	}
	grew := int64(w.most) - int64(base)
	t.Logf("status of a task with %d records of %d bytes: the live heap grew by %.1f MB at most over %d progress writes", n, size, float64(grew)/1e6, w.writes)
	if w.writes < 10 {
		t.Fatalf("%d progress writes: too few to see what the read holds", w.writes)
	}
	// A fetch or two, decoded, and the client's buffers; far below the 54
	// MB read.
	const bound = 24 << 20
	if grew > bound {
		t.Errorf("status held %.1f MB while it read %d records of %d bytes, want at most %d MB", float64(grew)/1e6, n, size, bound>>20)
	}
}
