package router

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// produceZstd produces recs as one zstd batch to topic's partition 0.
func (b *bundle) produceZstd(t *testing.T, topic string, recs ...*kgo.Record) {
	t.Helper()
	plain := make([]kgo.Record, len(recs))
	for i, r := range recs {
		plain[i] = *r
	}
	batch, err := hostile.ZstdBatch(plain)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hostile.ProduceBatch(ctx, b.cl, topic, 0, batch); err != nil {
		t.Fatal(err)
	}
}

// TestBigBatchesHoldNothingBack: a router starting onto a partition of
// big zstd batches (each a few kB on the wire, 13.5 MB decoded, within the
// cap) meets them all in one fetch, which franz-go decoded whole: the
// router took all of them at once (90 records of 899 kB held, and the
// fetch's 80 MB decoded), before the deadline due in another partition
// behind them. Now the fetch decodes them a budget at a time: the deadline
// is forwarded while the router holds at most two of them, and the
// partition, paused at its byte limit, waits with the rest.
func TestBigBatchesHoldNothingBack(t *testing.T) {
	const batches, perBatch = 6, 15
	table, _ := tiers.Parse("30s,1m")
	b := setup(t, Config{Tiers: table})
	if err := b.stop(); err != nil {
		t.Fatal(err)
	}
	t0 := b.clock.Now()
	big, other := tiers.Topic(b.cfg.Prefix, 30*time.Second), tiers.Topic(b.cfg.Prefix, time.Minute)
	value := make([]byte, 899_000) // within the value limit: held for its tier
	for i := range batches {
		recs := make([]*kgo.Record, perBatch)
		for j := range recs {
			recs[j] = delayRecord(big, "big-"+strconv.Itoa(i)+"-"+strconv.Itoa(j), t0, t0.Add(time.Hour))
			recs[j].Value = value
		}
		b.produceZstd(t, big, recs...)
	}
	b.produceZstd(t, other, delayRecord(other, "due", t0, t0.Add(-time.Second)))

	b = restart(t, b, b.cfg)
	b.read(t, b.cfg.Target, "due", 1)
	if s := b.router.Stats(); s.Held > kafka.DecodeBudgetBatches*perBatch || s.DeadLettered > 0 {
		t.Errorf("when the deadline behind them was forwarded: %+v; want at most %d records held (two batches), none dead-lettered",
			s, kafka.DecodeBudgetBatches*perBatch)
	}
}
