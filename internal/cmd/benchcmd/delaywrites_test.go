package benchcmd

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestDelayFiguresOf(t *testing.T) {
	for _, tc := range []struct {
		records, bytes int64
		n              int
		want           delayFigures
	}{
		{3000, 450_000, 1000, delayFigures{DelayRecords: 3000, DelayBytes: 450_000, ProducesPerDeadline: 3, BytesPerDeadline: 450}},
		{2437, 100_000, 1000, delayFigures{DelayRecords: 2437, DelayBytes: 100_000, ProducesPerDeadline: 2.44, BytesPerDeadline: 100}},
		{10, 1001, 3, delayFigures{DelayRecords: 10, DelayBytes: 1001, ProducesPerDeadline: 3.33, BytesPerDeadline: 333.7}},
		{5, 500, 0, delayFigures{DelayRecords: 5, DelayBytes: 500}},
	} {
		if got := delayFiguresOf(tc.records, tc.bytes, tc.n); got != tc.want {
			t.Errorf("delayFiguresOf(%d, %d, %d) = %+v, want %+v", tc.records, tc.bytes, tc.n, got, tc.want)
		}
	}
}

func TestProducesBound(t *testing.T) {
	measured := &delayFigures{ProducesPerDeadline: 4.5}
	for _, tc := range []struct {
		max  float64
		f    *delayFigures
		want string // in the error; "" for none
	}{
		{0, nil, ""},
		{0, measured, ""},
		{5, measured, ""},
		{4.5, measured, ""},
		{4, measured, "4.50 produces per deadline into the delay topics, more than --max-produces-per-deadline 4"},
		{4, nil, "not measured"},
	} {
		c := benchConfig{maxProduces: tc.max}
		err := c.producesBound(tc.f)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("max %v, %+v: %v", tc.max, tc.f, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("max %v, %+v: error %v, want one with %q", tc.max, tc.f, err, tc.want)
		}
	}
	for _, args := range [][]string{
		{"--max-produces-per-deadline", "-1"},
		{"--max-produces-per-deadline", "3", "--pending-steps", "10,20"},
	} {
		if _, err := parseBench(args, io.Discard); err == nil || !strings.Contains(err.Error(), "--max-produces-per-deadline") {
			t.Errorf("%q: error %v, want one naming --max-produces-per-deadline", args, err)
		}
	}
}

// TestDelayWrites reads, from a broker, the records of the delay topics
// and not those of the other topics.
func TestDelayWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	broker, addr, err := embedded.StartBroker(0)
	if err != nil {
		t.Fatal(err)
	}
	defer broker.Close()
	table, err := tiers.Parse("1s,2s")
	if err != nil {
		t.Fatal(err)
	}
	seed := []kgo.Opt{kgo.SeedBrokers(addr)}
	set := topics.Default(tiers.DefaultPrefix, table)
	if _, err := topics.Provision(ctx, seed, topics.Specs(set, 3, -1), true); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(seed, kgo.ProducerBatchCompression(kgo.NoCompression()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func(topic string, n int) {
		t.Helper()
		for i := range n {
			r := &kgo.Record{Topic: topic, Key: []byte{byte(i)}, Value: make([]byte, 100)}
			if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce(tiers.Topic(tiers.DefaultPrefix, time.Second), 4)
	produce(tiers.Topic(tiers.DefaultPrefix, 2*time.Second), 3)
	records, bytes, err := delayWrites(ctx, seed, table)
	if err != nil {
		t.Fatal(err)
	}
	// Uncompressed, a batch of one record takes its value's 100 bytes and
	// a batch header of 61.
	if records != 7 || bytes < 7*161 {
		t.Fatalf("delayWrites = %d records, %d bytes; want 7 records, %d bytes or more", records, bytes, 7*161)
	}

	produce(set.Targets[0], 5)
	r2, b2, err := delayWrites(ctx, seed, table)
	if err != nil {
		t.Fatal(err)
	}
	if r2 != records || b2 != bytes {
		t.Fatalf("after produces to %s: delayWrites = %d records, %d bytes; want %d, %d as before", set.Targets[0], r2, b2, records, bytes)
	}
}
