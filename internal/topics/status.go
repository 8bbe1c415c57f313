package topics

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// Status is what Ensure found or did for one topic.
type Status struct {
	// Spec is the spec this status answers.
	Spec Spec
	// Created is true if this call created the topic.
	Created bool
	// Existed is true if the topic was already there, including when
	// another process created it while this call was creating it too.
	Existed bool
	// Partitions is the partition count the topic has (existing) or was
	// created with; 0 for a missing topic.
	Partitions int32
	// Mismatches are the differences between Spec and an existing topic,
	// human readable: `partitions: have 3, want 6`,
	// `retention.ms: have "604800000", want "1209600000"`. Empty for a created
	// or missing topic.
	Mismatches []string
	// Unverified are the Spec.Configs keys the broker did not report for an
	// existing topic, so they could be neither confirmed nor reported as a
	// mismatch. Sorted.
	Unverified []string
	// ConfigsDenied is true when the broker refused to describe the
	// topic's configs to this principal (it lacks DescribeConfigs on the
	// topic): every config of Spec is in Unverified.
	ConfigsDenied bool
}

// State returns "created", "exists" or "missing".
func (s Status) State() string {
	switch {
	case s.Created:
		return "created"
	case s.Existed:
		return "exists"
	default:
		return "missing"
	}
}

// OK reports whether the topic is there (created or existed), its configs
// could be described, and it matches its spec in everything the broker
// reported.
func (s Status) OK() bool {
	return (s.Created || s.Existed) && len(s.Mismatches) == 0 && !s.ConfigsDenied
}

// FormatStatus writes a readable table of the statuses, one line per topic:
// name, state (created, exists or missing), partitions and problems.
//
// The partitions column shows what the topic has, or "-" for a missing
// topic; the last column lists the mismatches, then the configs the broker
// did not report or refused to describe, or "-" when there is nothing to say.
func FormatStatus(w io.Writer, st []Status) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TOPIC\tSTATE\tPARTITIONS\tPROBLEMS")
	for _, s := range st {
		parts := "-"
		if s.Created || s.Existed {
			parts = strconv.Itoa(int(s.Partitions))
		}
		problems := slices.Clone(s.Mismatches)
		switch {
		case s.ConfigsDenied:
			problems = append(problems, "configs not checked, DescribeConfigs denied: "+strings.Join(s.Unverified, ", "))
		case len(s.Unverified) > 0:
			problems = append(problems, "not reported by broker: "+strings.Join(s.Unverified, ", "))
		}
		if len(problems) == 0 {
			problems = []string{"-"}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Spec.Name, s.State(), parts, strings.Join(problems, "; "))
	}
	tw.Flush()
}
