package tiers

import (
	"fmt"
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
