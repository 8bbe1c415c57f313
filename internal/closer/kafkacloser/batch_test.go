package kafkacloser

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/outcome"
)

// produceCounter counts the produce requests a client writes and the
// records it has put into a partition's buffer.
type produceCounter struct {
	requests    atomic.Int64
	partitioned atomic.Int64
	onBuffer    func(n int64) // called with the records partitioned so far
}

var (
	_ kgo.HookBrokerWrite              = (*produceCounter)(nil)
	_ kgo.HookProduceRecordPartitioned = (*produceCounter)(nil)
)

func (p *produceCounter) OnBrokerWrite(_ kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if key == int16(kmsg.Produce) && err == nil {
		p.requests.Add(1)
	}
}

func (p *produceCounter) OnProduceRecordPartitioned(*kgo.Record, int32) {
	n := p.partitioned.Add(1)
	if p.onBuffer != nil {
		p.onBuffer(n)
	}
}

// maxProduceInflight is how many produce requests an idempotent kgo client
// keeps in flight to one broker.
const maxProduceInflight = 5

// TestConcurrentCloses: closes that are ready while a produce request is in
// flight go out together in the next request, not one request each. The
// broker holds the first produce request after a warm-up close until all
// n closes are buffered, so that the count does not depend on timing: at
// most maxProduceInflight requests were in flight while it was held, and
// whatever was buffered meanwhile goes in the next one.
func TestConcurrentCloses(t *testing.T) {
	const n = 200
	topic := "test.kafkacloser.batched"
	// A cluster of its own: its control holds produce requests, which on
	// the package's cluster would hold the other tests' too.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)

	counter := &produceCounter{}
	c, err := New(Config{Topic: topic}, []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.WithHooks(counter)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop() })
	// Warm up until each partition has had a produce answered: kgo keeps
	// one request in flight per partition until then, and up to
	// maxProduceInflight per broker after.
	warm := map[int32]bool{}
	for i := 0; len(warm) < 3 && i < 100; i++ {
		res, err := c.Close(testCtx(t), task(fmt.Sprint("warm-up-", i), "{}", 1))
		if err != nil {
			t.Fatalf("warm-up Close: %v", err)
		}
		var p int32
		var off int64
		if _, err := fmt.Sscanf(strings.TrimPrefix(res.Detail, topic), "[%d]@%d", &p, &off); err != nil {
			t.Fatalf("warm-up detail %q: %v", res.Detail, err)
		}
		warm[p] = true
	}
	if len(warm) < 3 {
		t.Fatalf("100 warm-up closes reached partitions %v only", warm)
	}
	before, warmed := counter.requests.Load(), counter.partitioned.Load()

	allBuffered := make(chan struct{})
	counter.onBuffer = func(got int64) {
		if got == warmed+n {
			close(allBuffered)
		}
	}
	var held atomic.Bool
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		if held.CompareAndSwap(false, true) {
			cluster.SleepControl(func() {
				select {
				case <-allBuffered:
				case <-time.After(testTimeout):
				}
			})
			return nil, nil, false // the cluster answers it as usual
		}
		cluster.DropControl()
		return nil, nil, false
	})

	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			res, err := c.Close(testCtx(t), task(fmt.Sprint("o-", i), "{}", 1))
			if err != nil || res.Outcome != outcome.Closed {
				t.Errorf("Close o-%d = %+v, %v", i, res, err)
			}
		})
	}
	wg.Wait()
	requests := counter.requests.Load() - before
	t.Logf("%d concurrent closes went out in %d produce requests", n, requests)
	if requests > maxProduceInflight+1 {
		t.Errorf("%d closes took %d produce requests; want at most %d: those ready together share one", n, requests, maxProduceInflight+1)
	}
}

// BenchmarkClose closes b.N tasks with 1 to 1000 closes at once, as the
// canceller does with --max-in-flight, and reports closes/s, the mean
// time of one close, and the records per produce request.
func BenchmarkClose(b *testing.B) {
	for _, workers := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("inflight_%d", workers), func(b *testing.B) {
			topic := newTopic(b)
			counter := &produceCounter{}
			c, err := New(Config{Topic: topic}, []kgo.Opt{kgo.SeedBrokers(seeds...), kgo.WithHooks(counter)})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = c.Stop() }()
			ctx := context.Background()
			if _, err := c.Close(ctx, task("warm-up", "{}", 1)); err != nil {
				b.Fatal(err)
			}
			before := counter.requests.Load()
			var next, busy atomic.Int64
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range workers {
				wg.Go(func() {
					for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
						t0 := time.Now()
						if _, err := c.Close(ctx, task(fmt.Sprint("o-", i), `{"n":1}`, 1)); err != nil {
							b.Error(err)
							return
						}
						busy.Add(int64(time.Since(t0)))
					}
				})
			}
			wg.Wait()
			took := time.Since(start)
			b.StopTimer()
			requests := counter.requests.Load() - before
			b.ReportMetric(float64(b.N)/took.Seconds(), "closes/s")
			b.ReportMetric(float64(busy.Load())/float64(b.N)/1e3, "µs/close")
			b.ReportMetric(float64(b.N)/float64(max(requests, 1)), "records/request")
			b.ReportMetric(0, "ns/op")
		})
	}
}
