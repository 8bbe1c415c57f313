package topics

import (
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

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
