package topics

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/testutil/hung"
	"github.com/hourglass/hourglass/internal/testutil/syncbuf"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestCheckDelay: the delay topics of the tiers exist, or CheckDelay fails
// naming --tiers, HOURGLASS_TIERS and the missing topics.
func TestCheckDelay(t *testing.T) {
	old := delayWait
	delayWait = 200 * time.Millisecond
	t.Cleanup(func() { delayWait = old })
	ctx := testCtx(t)
	opts := []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	prefix := topicName(t, "") + "."
	have, _ := tiers.Parse("1m,5m")
	if _, err := Provision(ctx, opts, Specs(Set{Prefix: prefix, Tiers: have}, 1, -1), true); err != nil {
		t.Fatal(err)
	}
	if err := CheckDelay(ctx, opts, prefix, have, log); err != nil {
		t.Errorf("CheckDelay(%s) = %v, want nil: every delay topic exists", have, err)
	}
	more, _ := tiers.Parse("1m,5m,2h")
	err := CheckDelay(ctx, opts, prefix, more, log)
	if err == nil {
		t.Fatalf("CheckDelay(%s) = nil, want an error: %sdelay.2h is missing", more, prefix)
	}
	for _, want := range []string{"--tiers", "HOURGLASS_TIERS", prefix + "delay.2h"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if strings.Contains(err.Error(), prefix+"delay.1m") {
		t.Errorf("error %q names %sdelay.1m, which exists", err, prefix)
	}
}

// TestEnsureLoggedSaysWhyItWaits: brokers that accept connections and
// never answer hold a service's start for up to provisionTimeout; it says
// so in the log after a few seconds, naming the brokers, instead of
// starting silently.
func TestEnsureLoggedSaysWhyItWaits(t *testing.T) {
	old := slowStart
	slowStart = 200 * time.Millisecond
	t.Cleanup(func() { slowStart = old })
	addr := hung.Listen(t)
	var logged syncbuf.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	ctx, cancel := context.WithTimeout(testCtx(t), 2*time.Second)
	defer cancel()
	// The client's own timeouts, not ctx, end its tries: shortened here.
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.DialTimeout(time.Second), kgo.RequestTimeoutOverhead(time.Second)}
	if err := EnsureLogged(ctx, opts, Specs(Set{Prefix: "x.", Tiers: tiers.DefaultTable()}, 1, -1), true, log); err == nil {
		t.Fatal("EnsureLogged = nil against brokers that never answer")
	}
	if out := logged.String(); !strings.Contains(out, "no answer from the brokers") || !strings.Contains(out, addr) {
		t.Errorf("log does not say it waits for the brokers, naming them:\n%s", out)
	}
}
