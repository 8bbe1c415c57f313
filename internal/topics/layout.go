package topics

import (
	"fmt"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// DefaultPartitions is the partition count of the topics a command creates
// unless told otherwise.
const DefaultPartitions = 6

// Topic retentions of Specs.
const (
	defaultRetention    = 7 * 24 * time.Hour
	deadLetterRetention = 30 * 24 * time.Hour
)

// Set names the topics a command needs; empty names are left out.
type Set struct {
	// Prefix is the prefix of the delay topics' names.
	Prefix string
	// Tiers are the delay tiers: one delay topic each. Empty: none.
	Tiers tiers.Table
	// Targets are the topics due records go to.
	Targets []string
	// Outcomes is the outcomes topic.
	Outcomes string
	// DeadLetter is the dead-letter topic.
	DeadLetter string
	// Cancellations is the compacted topic of cancellations.
	Cancellations string
}

// Default is every topic of a pipeline with the default names for prefix:
// the delay topics, cancel, outcomes, dlq and cancellations.
func Default(prefix string, table tiers.Table) Set {
	return Set{Prefix: prefix, Tiers: table, Targets: []string{tiers.CancelTopic(prefix)},
		Outcomes: tiers.OutcomesTopic(prefix), DeadLetter: tiers.DeadLetterTopic(prefix),
		Cancellations: tiers.CancellationsTopic(prefix)}
}

// Specs returns every topic of the set with the recommended settings:
// delay topics keep records 7 days or ten times the tier, whichever is
// longer; target and outcome topics 7 days; the dead-letter topic 30 days.
// The cancellations topic is compacted: it keeps the latest cancellation of
// every task id, whatever its age.
func Specs(set Set, partitions int32, replicas int16) []Spec {
	var specs []Spec
	seen := map[string]bool{}
	spec := func(name string, configs map[string]string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		specs = append(specs, Spec{Name: name, Partitions: partitions, Replicas: replicas, Configs: configs})
	}
	add := func(name string, retention time.Duration) {
		spec(name, map[string]string{"retention.ms": fmt.Sprint(retention.Milliseconds()), "cleanup.policy": "delete"})
	}
	for _, d := range set.Tiers.Durations() {
		add(tiers.Topic(set.Prefix, d), max(defaultRetention, 10*d))
	}
	add(set.DeadLetter, deadLetterRetention)
	for _, t := range set.Targets {
		add(t, defaultRetention)
	}
	add(set.Outcomes, defaultRetention)
	spec(set.Cancellations, map[string]string{"cleanup.policy": "compact"})
	return specs
}
