package kafka

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestRecreatedPurged: a record buffered when its topic is purged from the
// client fails with franz-go's unexported "purged" error, which Recreated
// must know by its text; a franz-go release that rewords it fails here.
func TestRecreatedPurged(t *testing.T) {
	// Nothing answers at this address: the record stays buffered.
	cl, err := kgo.NewClient(kgo.SeedBrokers("127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	failed := make(chan error, 1)
	cl.Produce(context.Background(), &kgo.Record{Topic: "purged", Value: []byte("v")}, func(_ *kgo.Record, err error) { failed <- err })
	cl.PurgeTopicsFromProducing("purged")
	select {
	case err := <-failed:
		if !Recreated(err) {
			t.Errorf("Recreated(%v) = false for a record failed by a purge", err)
		}
	case <-time.After(testTimeout):
		t.Fatal("the buffered record was not failed by the purge")
	}
	for _, err := range []error{fmt.Errorf("produce: %w", kerr.UnknownTopicID)} {
		if !Recreated(err) {
			t.Errorf("Recreated(%v) = false", err)
		}
	}
	for _, err := range []error{nil, kerr.UnknownTopicOrPartition, errors.New("topic purged")} {
		if Recreated(err) {
			t.Errorf("Recreated(%v) = true", err)
		}
	}
}
