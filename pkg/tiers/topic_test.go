package tiers

import (
	"math/rand/v2"
	"regexp"
	"testing"
	"time"
)

func TestTierOf(t *testing.T) {
	t.Parallel()

	for _, d := range append(DefaultTable().Durations(), time.Millisecond, 1500*time.Millisecond, 90*time.Minute, 999999*time.Hour+59*time.Minute+59*time.Second+999*time.Millisecond) {
		topic := Topic("shop.", d)
		if got, ok := TierOf("shop.", topic); !ok || got != d {
			t.Errorf("TierOf(%q) = %v, %v; want %v, true", topic, got, ok, d)
		}
	}
	for _, topic := range []string{
		"shop.delay.", "shop.delay.60s", "shop.delay.90m", "shop.delay.0h", "shop.delay.1h0m",
		"shop.delay.01m", "shop.delay.1.5h", "shop.delay.1us", "shop.delay.1000ms", "shop.delay.1m60s",
		"shop.delay.1000000h", "shop.delay.1m ", "shop.cancel", "hourglass.delay.1m", "shop.delay.1m.x",
	} {
		if d, ok := TierOf("shop.", topic); ok {
			t.Errorf("TierOf(%q) = %v, true; want false", topic, d)
		}
	}
}

// TestTopicPattern checks that the pattern matches exactly the topics
// TierOf understands: the tier names of random durations, and random
// strings of the characters tier names are made of.
func TestTopicPattern(t *testing.T) {
	t.Parallel()

	re := regexp.MustCompile(TopicPattern("a.b."))
	rng := rand.New(rand.NewPCG(7, 7))
	for range 20000 {
		d := time.Duration(rng.Int64N(int64(1_000_000*time.Hour)/1e6)+1) * time.Millisecond
		if topic := Topic("a.b.", d); !re.MatchString(topic) {
			t.Fatalf("pattern does not match %q", topic)
		}
	}
	const chars = "0123456789hms."
	for range 200000 {
		b := make([]byte, 1+rng.IntN(8))
		for i := range b {
			b[i] = chars[rng.IntN(len(chars))]
		}
		topic := "a.b.delay." + string(b)
		_, ok := TierOf("a.b.", topic)
		if re.MatchString(topic) != ok {
			t.Fatalf("%q: pattern matches %v, TierOf %v", topic, re.MatchString(topic), ok)
		}
	}
	if re.MatchString("aXb.delay.1m") || re.MatchString("a.b.delay.1m.") {
		t.Error("pattern matches a topic of another prefix or a longer name")
	}
}
