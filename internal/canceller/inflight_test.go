package canceller

import (
	"context"
	"testing"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/internal/outcome"
)

// TestMaxInFlightByClosers: without --max-in-flight, the closes at once are
// DefaultMaxInFlightBatched when every closer batches, and
// DefaultMaxInFlight when one sends a request per close.
func TestMaxInFlightByClosers(t *testing.T) {
	single, err := httpcloser.New(httpcloser.Config{URL: "http://127.0.0.1:1/close/{id}"})
	if err != nil {
		t.Fatal(err)
	}
	batched, err := httpcloser.New(httpcloser.Config{BatchURL: "http://127.0.0.1:1/close"})
	if err != nil {
		t.Fatal(err)
	}
	perTask := closer.CloserFunc(func(context.Context, closer.Task) (closer.Result, error) {
		return closer.Result{Outcome: outcome.Closed}, nil
	})
	for _, tc := range []struct {
		name string
		o    Options
		want int
	}{
		{"the log closer (no closers)", Options{}, DefaultMaxInFlightBatched},
		{"http with batch_url", Options{Routes: map[string]Route{"a": {Closer: batched}, "b": {Closer: closer.Log{}}}}, DefaultMaxInFlightBatched},
		{"http without batch_url", Options{Routes: map[string]Route{"a": {Closer: batched}, "b": {Closer: single}}}, DefaultMaxInFlight},
		{"a closer that does not say", Options{Closer: perTask}, DefaultMaxInFlight},
	} {
		o, err := tc.o.withDefaults()
		if err != nil {
			t.Fatal(err)
		}
		if got := o.maxInFlight(); got != tc.want {
			t.Errorf("%s: %d at once, want %d", tc.name, got, tc.want)
		}
	}
	c, err := New(Config{MaxInFlight: 7}, Options{Kafka: nil})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxInFlight() != 7 {
		t.Errorf("--max-in-flight 7 became %d", c.MaxInFlight())
	}
	c.cl.Close()
}
