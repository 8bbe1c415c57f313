package topics

import (
	"fmt"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// DefaultPartitions is the partition count of the topics a command creates
// unless told otherwise.
const DefaultPartitions = 6

// Topic retentions of Specs. A delay topic keeps a record at least
// delayRetentionFactor times its tier, and never less than
// defaultRetention: a record waits up to its tier there, and the rest is
// margin for a router that is stopped or behind.
const (
	defaultRetention     = 7 * 24 * time.Hour
	deadLetterRetention  = 30 * 24 * time.Hour
	delayRetentionFactor = 2
)

// DelayRetention returns the retention a delay topic of tier d is created
// with, and the least a check accepts: 7 days or twice the tier,
// whichever is longer.
func DelayRetention(d time.Duration) time.Duration {
	return max(defaultRetention, delayRetentionFactor*d)
}

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

// PartitionsOnCreate sets Spec.PartitionsOnCreate on every spec: for a
// command whose partition count was not asked for, which creates topics
// with it but does not hold existing topics to it.
func PartitionsOnCreate(specs []Spec) []Spec {
	for i := range specs {
		specs[i].PartitionsOnCreate = true
	}
	return specs
}

// Specs returns every topic of the set with the recommended settings:
// delay topics keep records 7 days or twice the tier, whichever is longer
// (DelayRetention; a longer retention passes a check, a shorter one is a
// mismatch); target and outcome topics 7 days; the dead-letter topic 30
// days.
// The cancellations topic is compacted: it keeps the latest cancellation of
// every task id, whatever its age.
func Specs(set Set, partitions int32, replicas int16) []Spec {
	var specs []Spec
	seen := map[string]bool{}
	spec := func(s Spec) {
		if s.Name == "" || seen[s.Name] {
			return
		}
		seen[s.Name] = true
		s.Partitions, s.Replicas = partitions, replicas
		specs = append(specs, s)
	}
	retained := func(name string, retention time.Duration) Spec {
		return Spec{Name: name, Configs: map[string]string{"retention.ms": fmt.Sprint(retention.Milliseconds()), "cleanup.policy": "delete"}}
	}
	add := func(name string, retention time.Duration) { spec(retained(name, retention)) }
	for _, d := range set.Tiers.Durations() {
		s := retained(tiers.Topic(set.Prefix, d), DelayRetention(d))
		s.AtLeast = []string{"retention.ms"}
		spec(s)
	}
	add(set.DeadLetter, deadLetterRetention)
	for _, t := range set.Targets {
		add(t, defaultRetention)
	}
	add(set.Outcomes, defaultRetention)
	spec(Spec{Name: set.Cancellations, Configs: map[string]string{"cleanup.policy": "compact"}})
	return specs
}
