package tiers

import (
	"fmt"
	"regexp"
	"strings"
	"time"
)

// DefaultPrefix is the topic prefix used when none is configured.
const DefaultPrefix = "hourglass."

// Topic returns the delay topic of tier d: prefix + "delay." + Name(d), for
// example "hourglass.delay.30m".
func Topic(prefix string, d time.Duration) string {
	return prefix + "delay." + Name(d)
}

// Topics returns the delay topic of every tier in t, smallest first.
func (t Table) Topics(prefix string) []string {
	out := make([]string, len(t.ds))
	for i, d := range t.ds {
		out[i] = Topic(prefix, d)
	}
	return out
}

// CancelTopic returns the default target topic for a prefix:
// hourglass.cancel with DefaultPrefix.
func CancelTopic(prefix string) string { return prefix + "cancel" }

// DeadLetterTopic returns the dead-letter topic for a prefix: hourglass.dlq
// with DefaultPrefix.
func DeadLetterTopic(prefix string) string { return prefix + "dlq" }

// OutcomesTopic returns the topic of outcome events for a prefix:
// hourglass.outcomes with DefaultPrefix.
func OutcomesTopic(prefix string) string { return prefix + "outcomes" }

// maxTopicLen is Kafka's limit on topic name length.
const maxTopicLen = 249

// ValidTopic reports why name is not a legal Kafka topic name, or nil.
func ValidTopic(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("empty topic name")
	case len(name) > maxTopicLen:
		return fmt.Errorf("topic name is %d characters, more than %d", len(name), maxTopicLen)
	case name == "." || name == "..":
		return fmt.Errorf("topic name %q is reserved", name)
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return fmt.Errorf("topic name %q has %q: only ASCII letters, digits, '.', '_' and '-' are allowed", name, c)
		}
	}
	return nil
}

// TierOf returns the tier whose delay topic under prefix is topic: the
// inverse of Topic. It reports false for any other name, including a tier
// spelled otherwise than Name spells it ("60s" for 1m).
func TierOf(prefix, topic string) (time.Duration, bool) {
	name, ok := strings.CutPrefix(topic, prefix+"delay.")
	if !ok || !delayName.MatchString(name) {
		return 0, false
	}
	d, err := time.ParseDuration(name)
	if err != nil || Name(d) != name {
		return 0, false
	}
	return d, true
}

// delayName matches the names Name gives a whole number of milliseconds up
// to a million hours: hours, minutes and seconds below 60, milliseconds
// below 1000, each present only when not zero.
var delayName = regexp.MustCompile(`^(?:` + hours + `(?:` + minutes + `)?(?:` + seconds + `)?(?:` + millis + `)?` +
	`|` + minutes + `(?:` + seconds + `)?(?:` + millis + `)?` +
	`|` + seconds + `(?:` + millis + `)?` +
	`|` + millis + `)$`)

const (
	hours   = `[1-9][0-9]{0,5}h`
	minutes = `(?:[1-9]|[1-5][0-9])m`
	seconds = `(?:[1-9]|[1-5][0-9])s`
	millis  = `[1-9][0-9]{0,2}ms`
)

// TopicPattern returns a regular expression that matches the delay topics
// under prefix of every tier below a million hours, and no other topic: what
// a consumer of every delay topic, configured or not, subscribes to.
func TopicPattern(prefix string) string {
	return `^` + regexp.QuoteMeta(prefix+"delay.") + strings.TrimPrefix(delayName.String(), `^`)
}
