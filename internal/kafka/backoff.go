package kafka

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// A partition whose fetch fails with an error franz-go does not retry
// itself (TOPIC_AUTHORIZATION_FAILED after an ACL change,
// UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_ID of a topic created again, a
// corrupt batch) is fetched again at once by the client, and its poll
// returns the error again at once: without a pause, a consumer loops on it
// at tens of thousands of fetches and log lines a second, on a whole core.
// FetchBackoff pauses such a partition for FetchBackoffMin, doubling up to
// FetchBackoffMax while the error lasts; the other partitions are fetched
// as before.
const (
	FetchBackoffMin = 250 * time.Millisecond //nolint:revive // Min is the minimum, not minutes
	FetchBackoffMax = 5 * time.Second
)

// FetchBackoff pauses the partitions of a client whose fetches fail, and
// composes those pauses with the service's own (Pause, Resume): a partition
// is fetched only when neither holds it. Its waits pace requests to the
// brokers, so they run on the wall clock, like the client's own retries,
// not on a service's injected clock. Its methods are safe for concurrent
// use.
type FetchBackoff struct {
	cl      *kgo.Client
	failing atomic.Int32 // len(parts), read without the lock by Succeeded

	mu     sync.Mutex
	parts  map[topicPartition]*failure
	held   map[topicPartition]bool // paused by the service
	closed bool
}

type topicPartition struct {
	topic     string
	partition int32
}

// failure is the state of a partition whose fetches fail.
type failure struct {
	fails  int       // failures in a row
	last   time.Time // the latest
	paused bool      // paused until timer fires
	timer  *time.Timer
}

// NewFetchBackoff returns a FetchBackoff pausing partitions of cl.
func NewFetchBackoff(cl *kgo.Client) *FetchBackoff {
	return &FetchBackoff{cl: cl, parts: make(map[topicPartition]*failure), held: make(map[topicPartition]bool)}
}

// Failed notes that a fetch of the partition failed, pauses it and returns
// how long it stays paused; a new failure after a quiet spell starts from
// FetchBackoffMin again. An error that names no partition (topic "") is
// not paced here and returns 0. A batch left to a later fetch (Deferred)
// is no failure: the next fetch reads it, and must not wait.
func (b *FetchBackoff) Failed(topic string, partition int32) time.Duration {
	if topic == "" {
		return 0
	}
	k := topicPartition{topic, partition}
	now := time.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0
	}
	f := b.parts[k]
	if f == nil {
		f = &failure{}
		b.parts[k] = f
		b.failing.Store(int32(len(b.parts)))
	}
	if f.paused {
		return 0 // an error fetched before the pause took effect
	}
	if now.Sub(f.last) > 4*FetchBackoffMax {
		f.fails = 0
	}
	f.fails++
	f.last = now
	wait := min(FetchBackoffMin<<min(f.fails-1, 16), FetchBackoffMax)
	f.paused = true
	b.cl.PauseFetchPartitions(map[string][]int32{topic: {partition}})
	f.timer = time.AfterFunc(wait, func() { b.unpause(k, f) })
	return wait
}

// unpause ends f's pause of k, unless the service holds k paused.
func (b *FetchBackoff) unpause(k topicPartition, f *failure) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.parts[k] != f || !f.paused {
		return
	}
	f.paused = false
	if !b.held[k] {
		b.cl.ResumeFetchPartitions(map[string][]int32{k.topic: {k.partition}})
	}
}

// Succeeded notes that the partition returned records: its failures in a
// row are over.
func (b *FetchBackoff) Succeeded(topic string, partition int32) {
	if b.failing.Load() == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	k := topicPartition{topic, partition}
	if f := b.parts[k]; f != nil && !f.paused {
		delete(b.parts, k)
		b.failing.Store(int32(len(b.parts)))
	}
}

// Pause pauses partitions for the service (its own limits), until Resume.
func (b *FetchBackoff) Pause(parts map[string][]int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			b.held[topicPartition{topic, p}] = true
		}
	}
	b.cl.PauseFetchPartitions(parts)
}

// Resume resumes partitions the service paused, but those a backoff holds
// paused stay paused until it ends.
func (b *FetchBackoff) Resume(parts map[string][]int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resume(parts, func(k topicPartition) bool {
		delete(b.held, k)
		f := b.parts[k]
		return f == nil || !f.paused
	})
}

// Forget drops the state of partitions revoked or lost and resumes them: a
// pause survives a revoke and a later assignment.
func (b *FetchBackoff) Forget(parts map[string][]int32) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.resume(parts, func(k topicPartition) bool {
		f, failing := b.parts[k]
		if failing {
			f.timer.Stop()
			delete(b.parts, k)
		}
		held := b.held[k]
		delete(b.held, k)
		return failing && f.paused || held
	})
	b.failing.Store(int32(len(b.parts)))
}

// resume calls drop for each of parts, with b.mu held, and resumes those
// for which it returns true.
func (b *FetchBackoff) resume(parts map[string][]int32, drop func(topicPartition) bool) {
	resume := make(map[string][]int32, len(parts))
	for topic, ps := range parts {
		for _, p := range ps {
			if drop(topicPartition{topic, p}) {
				resume[topic] = append(resume[topic], p)
			}
		}
	}
	if len(resume) > 0 {
		b.cl.ResumeFetchPartitions(resume)
	}
}

// Close stops the pending resumes; call it before closing the client.
func (b *FetchBackoff) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	for _, f := range b.parts {
		f.timer.Stop()
	}
}
