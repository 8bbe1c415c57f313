package record

import (
	"strings"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// DelayTopicPrefix is what the name of every delay topic of prefix starts
// with: prefix + "delay.".
func DelayTopicPrefix(prefix string) string { return prefix + "delay." }

// TierOf parses a delay topic name back into its tier. It reports false when
// topic is not prefix + "delay." + a duration.
func TierOf(prefix, topic string) (time.Duration, bool) {
	rest, ok := strings.CutPrefix(topic, prefix+"delay.")
	if !ok {
		return 0, false
	}
	d, err := time.ParseDuration(rest)
	if err != nil || d <= 0 || tiers.Name(d) != rest {
		return 0, false
	}
	return d, true
}
