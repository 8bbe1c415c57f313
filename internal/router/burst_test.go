package router

import (
	"fmt"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// produceAll produces rs, per records a request (and so at most per records
// a batch).
func (b *bundle) produceAll(t *testing.T, rs []*kgo.Record, per int) {
	t.Helper()
	for i := 0; i < len(rs); i += per {
		if err := b.cl.ProduceSync(t.Context(), rs[i:min(i+per, len(rs))]...).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPollWithinHeldLimit: however many small records one fetch brings, a
// partition holds at most twice MaxHeldPerPartition of them: a poll takes
// no more than that, and the partition is paused after it.
func TestPollWithinHeldLimit(t *testing.T) {
	table, _ := tiers.Parse("30s")
	const limit = 100
	b := setup(t, Config{Tiers: table, MaxHeldPerPartition: limit, FetchPartitionBytes: 1 << 20})
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	var rs []*kgo.Record
	for i := range 5000 {
		rs = append(rs, delayRecord(topic, "k"+strconv.Itoa(i), t0, t0.Add(time.Minute)))
	}
	b.produceAll(t, rs, 1000)
	b.waitStats(t, func(s Stats) bool { return s.Paused == 1 })
	if s := b.router.Stats(); s.Held > 2*limit {
		t.Errorf("the paused partition holds %d records, want at most %d (twice --max-held-per-partition)", s.Held, 2*limit)
	}
}

// TestBurstWithinHeldBytes: records due at one instant, whose target does
// not acknowledge, all go into the client's produce buffer at the instant.
// What the partition holds until then, and so what the buffer holds, stays
// within its byte limit counting what the records take in memory, also for
// records of many small headers; once the target acknowledges, every
// record is forwarded.
func TestBurstWithinHeldBytes(t *testing.T) {
	table, _ := tiers.Parse("30s")
	const limit = 1 << 20
	b := setup(t, Config{Tiers: table, MaxHeldPerPartition: 100_000, MaxHeldBytesPerPartition: limit, FetchPartitionBytes: 1 << 10})
	fault := cluster.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: b.cfg.Target, Err: kerr.NotLeaderForPartition, Count: -1})
	defer fault.Remove()
	t0 := b.clock.Now()
	topic := tiers.Topic(b.cfg.Prefix, 30*time.Second)
	const n, extra, per = 3000, 16, 100
	var rs []*kgo.Record
	for i := range n {
		var hs []kgo.RecordHeader
		for j := range extra {
			hs = append(hs, header("x"+strconv.Itoa(j), "v"))
		}
		rs = append(rs, delayRecord(topic, "order-"+strconv.Itoa(i), t0, t0.Add(30*time.Second), hs...))
	}
	before := b.router.Stats()
	b.produceAll(t, rs, per)
	b.waitStats(t, func(s Stats) bool { return s.Paused == 1 })
	held := b.router.Stats().Held

	b.clock.Advance(30 * time.Second) // the instant: everything held fires
	buffered := func() int64 { return b.router.cl.BufferedProduceRecords() }
	poll.Until(t, 10*time.Second, "the held records in the produce buffer", func() bool { return buffered() >= held },
		func() string { return fmt.Sprintf("%d of %d buffered", buffered(), held) })
	// What each buffered record takes at least: its entry, the record it was
	// fetched as and the record onward, and a header slot in each (the
	// record onward has three more: scheduled, path, forwarded).
	const headerSlot = int64(unsafe.Sizeof(kgo.RecordHeader{}))
	least := int64(unsafe.Sizeof(entry{})) + 2*int64(unsafe.Sizeof(kgo.Record{})) + headerSlot*(2*(extra+1)+3)
	// One fetch, here one batch of per records, may come beyond the limit.
	if got, bound := buffered()*least, int64(limit)+per*(4<<10); got > bound {
		t.Errorf("%d records in the produce buffer take at least %d bytes, more than the partition's limit of %d and one batch (%d)", buffered(), got, limit, bound)
	}

	fault.Remove()
	b.waitStats(t, func(s Stats) bool { return s.Forwarded == before.Forwarded+n })
	if s := b.router.Stats(); s.DeadLettered != before.DeadLettered {
		t.Errorf("dead-lettered %d records", s.DeadLettered-before.DeadLettered)
	}
}
