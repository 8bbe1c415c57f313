package record

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestTierOf(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name   string
		prefix string
		topic  string
		want   time.Duration
		wantOK bool
	}{
		{name: "1m", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1m", want: time.Minute, wantOK: true},
		{name: "compound", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1h30m", want: 90 * time.Minute, wantOK: true},
		{name: "milliseconds", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1s500ms", want: 1500 * time.Millisecond, wantOK: true},
		{name: "empty prefix", prefix: "", topic: "delay.5m", want: 5 * time.Minute, wantOK: true},

		// Only the canonical name of a tier is its topic.
		{name: "60s is spelled 1m", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.60s"},
		{name: "90m is spelled 1h30m", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.90m"},
		{name: "zero unit", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1h0m"},
		{name: "fraction", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1.5s"},
		{name: "plus sign", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.+1m"},
		{name: "leading zero", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.01m"},
		{name: "zero", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.0s"},
		{name: "negative", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.-1m"},
		{name: "uppercase unit", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1M"},

		{name: "wrong prefix", prefix: tiers.DefaultPrefix, topic: "other.delay.1m"},
		{name: "prefix of another service", prefix: "shop.", topic: "hourglass.delay.1m"},
		{name: "missing delay", prefix: tiers.DefaultPrefix, topic: "hourglass.1m"},
		{name: "cancel topic", prefix: tiers.DefaultPrefix, topic: "hourglass.cancel"},
		{name: "no tier", prefix: tiers.DefaultPrefix, topic: "hourglass.delay."},
		{name: "garbage tier", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.soon"},
		{name: "trailing garbage", prefix: tiers.DefaultPrefix, topic: "hourglass.delay.1m.old"},
		{name: "empty", prefix: tiers.DefaultPrefix, topic: ""},
	}
	for _, tt := range tests {
		got, ok := TierOf(tt.prefix, tt.topic)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("%s: TierOf(%q, %q) = %v, %v; want %v, %v", tt.name, tt.prefix, tt.topic, got, ok, tt.want, tt.wantOK)
		}
	}
}

// TestTierOfTopic: TierOf reads back the tier of every tiers.Topic, whose
// name starts with DelayTopicPrefix.
func TestTierOfTopic(t *testing.T) {
	t.Parallel()

	for _, prefix := range []string{tiers.DefaultPrefix, "", "shop-"} {
		for _, d := range []time.Duration{time.Minute, 30 * time.Minute, 90 * time.Minute, 500 * time.Millisecond, 60 * time.Second, time.Hour} {
			topic := tiers.Topic(prefix, d)
			if !strings.HasPrefix(topic, DelayTopicPrefix(prefix)) {
				t.Errorf("tiers.Topic(%q, %v) = %q, which does not start with DelayTopicPrefix %q", prefix, d, topic, DelayTopicPrefix(prefix))
			}
			if got, ok := TierOf(prefix, topic); !ok || got != d {
				t.Errorf("TierOf(%q, %q) = %v, %v; want %v, true", prefix, topic, got, ok, d)
			}
		}
	}
}
