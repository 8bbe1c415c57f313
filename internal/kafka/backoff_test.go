package kafka

import (
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// paused reports whether the client has topic's partition p paused.
func paused(cl *kgo.Client, topic string, p int32) bool {
	return slices.Contains(cl.PauseFetchPartitions(nil)[topic], p)
}

// TestFetchBackoff: a failing partition is paused for a backoff that
// doubles while the failures go on, and composes with the service's own
// pauses: a partition is fetched again only when neither holds it, and a
// revoke (Forget) lets go of both.
func TestFetchBackoff(t *testing.T) {
	// No broker is contacted: pauses are the client's own state.
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	b := NewFetchBackoff(cl)
	defer b.Close()
	const topic = "t"

	if got := b.Failed(topic, 0); got != FetchBackoffMin {
		t.Fatalf("first failure: paused for %v, want %v", got, FetchBackoffMin)
	}
	if !paused(cl, topic, 0) || paused(cl, topic, 1) {
		t.Fatalf("paused %v; want partition 0 alone", cl.PauseFetchPartitions(nil))
	}
	if got := b.Failed(topic, 0); got != 0 {
		t.Errorf("a failure fetched before the pause took effect: paused again for %v", got)
	}
	poll.Until(t, 10*time.Second, "the backoff's end", func() bool { return !paused(cl, topic, 0) }, nil)

	// The next failure doubles the wait; the service pauses the partition
	// meanwhile and keeps it paused past the backoff's end.
	if got := b.Failed(topic, 0); got != 2*FetchBackoffMin {
		t.Errorf("second failure in a row: paused for %v, want %v", got, 2*FetchBackoffMin)
	}
	b.Pause(map[string][]int32{topic: {0}})
	b.Resume(map[string][]int32{topic: {0}}) // the backoff still holds it
	if !paused(cl, topic, 0) {
		t.Error("the service's resume undid the backoff's pause")
	}
	b.Pause(map[string][]int32{topic: {0}})
	// Succeeded only counts once the pause is over: wait for the backoff
	// to let go, which it must not do while the service holds it.
	poll.Until(t, 10*time.Second, "the backoff's end", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return !b.parts[topicPartition{topic, 0}].paused
	}, nil)
	if !paused(cl, topic, 0) {
		t.Error("the backoff's end undid the service's pause")
	}
	b.Resume(map[string][]int32{topic: {0}})
	if paused(cl, topic, 0) {
		t.Error("paused after both let go")
	}

	// Records read end the streak: the next failure starts over.
	b.Succeeded(topic, 0)
	if got := b.Failed(topic, 0); got != FetchBackoffMin {
		t.Errorf("failure after records: paused for %v, want %v", got, FetchBackoffMin)
	}
	// A revoke lets go of both pauses at once.
	b.Pause(map[string][]int32{topic: {0}})
	b.Forget(map[string][]int32{topic: {0}})
	if paused(cl, topic, 0) {
		t.Error("paused after Forget")
	}
	if got := b.Failed(topic, 0); got != FetchBackoffMin {
		t.Errorf("failure after Forget: paused for %v, want %v", got, FetchBackoffMin)
	}
}
