package topics

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Spec is a topic Hourglass needs.
type Spec struct {
	// Name is the topic name; required.
	Name string
	// Partitions is the partition count to create the topic with; -1 uses
	// the broker default and is then not compared. Zero is invalid.
	Partitions int32
	// PartitionsOnCreate makes Partitions only the count a created topic
	// gets: an existing topic's count, chosen by whoever created it, is
	// reported in Status.Partitions and never a mismatch. False: a
	// different count is a mismatch.
	PartitionsOnCreate bool
	// Replicas is the replication factor; -1 = broker default, and is then
	// not compared. Zero is invalid.
	Replicas int16
	// Configs are topic configs to create the topic with and to compare on
	// an existing topic, e.g. retention.ms, cleanup.policy. Nil sets none.
	Configs map[string]string
	// AtLeast are the keys of Configs whose value is a lower bound, a whole
	// number such as retention.ms: an existing topic with a larger value,
	// or -1 (no limit), matches. Nil: every config must be equal.
	AtLeast []string
}

// describeRetries bounds how often Ensure asks again about a topic that
// another process has just created but that the broker we ask does not know
// yet (metadata propagates between Kafka brokers asynchronously).
const (
	describeRetries      = 8
	describeFirstBackoff = 100 * time.Millisecond
	describeMaxBackoff   = 2 * time.Second
)

// Ensure creates the missing topics and describes the existing ones,
// comparing partitions and the listed configs (those of Spec.AtLeast as
// lower bounds). It never alters an existing
// topic. When create is false it only checks (missing topics are reported,
// not created). A topic-already-exists answer to a create (two processes
// creating at once) is treated as existed, not as an error: the topic is
// described and compared like any other existing topic.
//
// The replication factor is compared too when the spec gives one. The
// returned statuses are in the order of specs. Specs are checked first: an
// empty or duplicate name, or a zero or below -1 partition or replica count,
// is an error before any request. Errors name the topic and the operation.
//
// Configs are compared only as the broker reports them: a spec config that
// the broker's DescribeConfigs answer does not contain (kfake reports only
// a fixed set of defaults plus the configs set on the topic; a real Kafka
// reports every topic config) is unknown, listed in Unverified, and never a
// mismatch. A sensitive config, reported without a value, is treated the
// same way, and so is every config of a topic whose configs the principal
// may not describe (no DescribeConfigs ACL): the status says ConfigsDenied.
// Values are compared after trimming spaces, and comma-separated lists
// (cleanup.policy=compact,delete) as sets.
func Ensure(ctx context.Context, adm *kadm.Client, specs []Spec, create bool) ([]Status, error) {
	if err := checkSpecs(specs); err != nil {
		return nil, err
	}
	st := make([]Status, len(specs))
	names := make([]string, len(specs))
	for i, s := range specs {
		st[i].Spec = s
		names[i] = s.Name
	}
	if len(specs) == 0 {
		return st, nil
	}

	details, err := listTopics(ctx, adm, names)
	if err != nil {
		return nil, err
	}
	var existing []int // indexes into specs
	for i, s := range specs {
		d, ok := details[s.Name]
		switch {
		case ok && d.Err == nil:
			existing = append(existing, i)
		case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
			// Missing; created below, or reported as missing.
		default:
			return nil, fmt.Errorf("describe topic %s: %w", s.Name, d.Err)
		}
	}

	var raced []int // created by someone else between our list and create
	if create {
		if raced, err = createMissing(ctx, adm, specs, existing, st); err != nil {
			return nil, err
		}
	}

	// The raced topics have fresh metadata to fetch; the others were listed
	// just now and only need their configs.
	if len(raced) > 0 {
		if err := describeRaced(ctx, adm, specs, raced, details); err != nil {
			return nil, err
		}
		existing = append(existing, raced...)
		slices.Sort(existing)
	}
	if len(existing) == 0 {
		return st, nil
	}
	configs, denied, err := describeConfigs(ctx, adm, specs, existing)
	if err != nil {
		return nil, err
	}
	for _, i := range existing {
		st[i].Existed, st[i].ConfigsDenied = true, denied[specs[i].Name]
		compare(&st[i], details[specs[i].Name], configs[specs[i].Name])
	}
	return st, nil
}

func checkSpecs(specs []Spec) error {
	seen := make(map[string]bool, len(specs))
	var errs []error
	for _, s := range specs {
		switch {
		case s.Name == "":
			errs = append(errs, errors.New("topic spec with an empty name"))
			continue
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("topic %s: listed twice", s.Name))
		}
		seen[s.Name] = true
		if s.Partitions == 0 || s.Partitions < -1 {
			errs = append(errs, fmt.Errorf("topic %s: partitions %d: want at least 1, or -1 for the broker default", s.Name, s.Partitions))
		}
		if s.Replicas == 0 || s.Replicas < -1 {
			errs = append(errs, fmt.Errorf("topic %s: replicas %d: want at least 1, or -1 for the broker default", s.Name, s.Replicas))
		}
	}
	return errors.Join(errs...)
}

// listTopics asks the broker for the topics' metadata, bypassing the client's
// metadata cache.
//
// kadm's ListTopics normally answers from kgo's metadata cache, which keeps
// each topic's answer, "unknown topic" included, for MetadataMinAge (5s by
// default) and is not invalidated by CreateTopics. A second Ensure on
// the same client, or the re-describe after a create race, would then see a
// topic that exists as missing. A context from kadm.WithAuthorizedOps makes
// kadm send the metadata request instead
// (TestEnsureTopicsSecondRunSameClient checks it); the authorized operations
// come along and are ignored.
func listTopics(ctx context.Context, adm *kadm.Client, names []string) (kadm.TopicDetails, error) {
	details, err := adm.ListTopics(kadm.WithAuthorizedOps(ctx), names...)
	if err != nil {
		return nil, fmt.Errorf("describe topics %s: %w", strings.Join(names, ","), err)
	}
	return details, nil
}

// describeRaced fetches the metadata of topics that another process created
// while we were creating them, into details. A broker may not know such a
// topic for a moment, so an unknown topic is asked about again, with
// backoff, a bounded number of times.
func describeRaced(ctx context.Context, adm *kadm.Client, specs []Spec, raced []int, details kadm.TopicDetails) error {
	names := make([]string, len(raced))
	for j, i := range raced {
		names[j] = specs[i].Name
	}
	return retryUnknown(ctx, func() (unknown []string, err error) {
		fresh, err := listTopics(ctx, adm, names)
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			d, ok := fresh[n]
			switch {
			case ok && d.Err == nil:
				details[n] = d
			case !ok || errors.Is(d.Err, kerr.UnknownTopicOrPartition):
				unknown = append(unknown, n)
			default:
				return nil, fmt.Errorf("describe topic %s: %w", n, d.Err)
			}
		}
		return unknown, nil
	})
}

// describeConfigs returns the configs the broker reports for the topics at
// idxs, by topic name, and the topics whose configs it refused to describe
// for want of a DescribeConfigs ACL: a check that only warns is no reason
// for a service to need that permission.
func describeConfigs(ctx context.Context, adm *kadm.Client, specs []Spec, idxs []int) (map[string][]kadm.Config, map[string]bool, error) {
	out := make(map[string][]kadm.Config, len(idxs))
	denied := make(map[string]bool)
	names := make([]string, 0, len(idxs))
	for _, i := range idxs {
		names = append(names, specs[i].Name)
	}
	err := retryUnknown(ctx, func() (unknown []string, err error) {
		var ask []string
		for _, n := range names {
			if _, done := out[n]; !done {
				ask = append(ask, n)
			}
		}
		rcs, err := adm.DescribeTopicConfigs(ctx, ask...)
		if errors.Is(err, kerr.TopicAuthorizationFailed) {
			rcs, err = describeEach(ctx, adm, ask)
		}
		if err != nil {
			return nil, fmt.Errorf("describe configs of topics %s: %w", strings.Join(ask, ","), err)
		}
		for _, rc := range rcs {
			switch {
			case rc.Err == nil:
				out[rc.Name] = rc.Configs
			case errors.Is(rc.Err, kerr.TopicAuthorizationFailed):
				out[rc.Name], denied[rc.Name] = nil, true
			case errors.Is(rc.Err, kerr.UnknownTopicOrPartition):
				unknown = append(unknown, rc.Name)
			default:
				return nil, fmt.Errorf("describe configs of topic %s: %w%s", rc.Name, rc.Err, errMessage(rc.ErrMessage))
			}
		}
		for _, n := range ask {
			if _, ok := out[n]; !ok && !slices.Contains(unknown, n) {
				return nil, fmt.Errorf("describe configs of topic %s: not in the broker's answer", n)
			}
		}
		return unknown, nil
	})
	return out, denied, err
}

// describeEach describes the configs of each topic alone: kadm fails the
// answer about many topics for one refused to this principal, and each
// refusal is to be told apart. A refused topic has the error in its config.
func describeEach(ctx context.Context, adm *kadm.Client, names []string) (kadm.ResourceConfigs, error) {
	var out kadm.ResourceConfigs
	for _, n := range names {
		rcs, err := adm.DescribeTopicConfigs(ctx, n)
		switch {
		case errors.Is(err, kerr.TopicAuthorizationFailed):
			out = append(out, kadm.ResourceConfig{Name: n, Err: err})
		case err != nil:
			return nil, err
		default:
			out = append(out, rcs...)
		}
	}
	return out, nil
}

// retryUnknown runs fn until it reports no unknown topics, at most
// describeRetries times, backing off between tries. It stops early when ctx
// is done.
func retryUnknown(ctx context.Context, fn func() (unknown []string, err error)) error {
	backoff := describeFirstBackoff
	for attempt := 1; ; attempt++ {
		unknown, err := fn()
		if err != nil {
			return err
		}
		if len(unknown) == 0 {
			return nil
		}
		if attempt == describeRetries {
			return fmt.Errorf("describe topics %s: still unknown to the broker after %d tries, though they were listed or reported as existing: %w",
				strings.Join(unknown, ","), attempt, kerr.UnknownTopicOrPartition)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("describe topics %s: %w", strings.Join(unknown, ","), context.Cause(ctx))
		case <-t.C:
		}
		backoff = min(2*backoff, describeMaxBackoff)
	}
}

// compare fills the partition count, mismatches and unverified configs of an
// existing topic.
func compare(s *Status, d kadm.TopicDetail, configs []kadm.Config) {
	spec := s.Spec
	s.Partitions = int32(len(d.Partitions))
	if spec.Partitions > 0 && !spec.PartitionsOnCreate && s.Partitions != spec.Partitions {
		s.Mismatches = append(s.Mismatches, fmt.Sprintf("partitions: have %d, want %d", s.Partitions, spec.Partitions))
	}
	if spec.Replicas > 0 {
		replicas := 0
		for _, p := range d.Partitions {
			replicas = max(replicas, len(p.Replicas))
		}
		if replicas != int(spec.Replicas) {
			s.Mismatches = append(s.Mismatches, fmt.Sprintf("replicas: have %d, want %d", replicas, spec.Replicas))
		}
	}

	have := make(map[string]kadm.Config, len(configs))
	for _, c := range configs {
		have[c.Key] = c
	}
	for _, k := range slices.Sorted(maps.Keys(spec.Configs)) {
		want := spec.Configs[k]
		c, ok := have[k]
		if !ok || c.Value == nil {
			// The broker did not report this config (kfake omits
			// every topic config outside its small default set
			// that was not set on the topic), or reported it as
			// sensitive without a value. We cannot tell whether it
			// matches: it is unknown, not a mismatch.
			s.Unverified = append(s.Unverified, k)
			continue
		}
		switch {
		case slices.Contains(spec.AtLeast, k):
			if !atLeast(*c.Value, want) {
				s.Mismatches = append(s.Mismatches, fmt.Sprintf("%s: have %q, want at least %q", k, *c.Value, want))
			}
		case !sameConfigValue(*c.Value, want):
			s.Mismatches = append(s.Mismatches, fmt.Sprintf("%s: have %q, want %q", k, *c.Value, want))
		}
	}
}

// atLeast reports whether the config value have is want or more, -1
// counting as no limit. A value that is not a whole number is compared as
// text.
func atLeast(have, want string) bool {
	h, errH := strconv.ParseInt(strings.TrimSpace(have), 10, 64)
	w, errW := strconv.ParseInt(strings.TrimSpace(want), 10, 64)
	if errH != nil || errW != nil {
		return sameConfigValue(have, want)
	}
	return h == -1 || h >= w
}

// sameConfigValue compares config values ignoring surrounding spaces, and
// comma-separated lists ignoring order and spaces around items.
func sameConfigValue(have, want string) bool {
	have, want = strings.TrimSpace(have), strings.TrimSpace(want)
	if have == want {
		return true
	}
	if !strings.Contains(have, ",") && !strings.Contains(want, ",") {
		return false
	}
	split := func(s string) []string {
		var out []string
		for item := range strings.SplitSeq(s, ",") {
			out = append(out, strings.TrimSpace(item))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(split(have), split(want))
}

func configPtrs(m map[string]string) map[string]*string {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = kadm.StringPtr(v)
	}
	return out
}

func errMessage(m string) string {
	if m == "" {
		return ""
	}
	return " (" + m + ")"
}

// createMissing creates the topics of specs that are not in existing (their
// indexes), noting each in st, and returns the indexes of those that
// another process created first.
func createMissing(ctx context.Context, adm *kadm.Client, specs []Spec, existing []int, st []Status) (raced []int, err error) {
	for i, s := range specs {
		if slices.Contains(existing, i) {
			continue
		}
		resp, err := adm.CreateTopic(ctx, s.Partitions, s.Replicas, configPtrs(s.Configs), s.Name)
		switch {
		case err == nil:
			st[i].Created = true
			st[i].Partitions = s.Partitions
			if resp.NumPartitions > 0 {
				st[i].Partitions = resp.NumPartitions
			}
		case errors.Is(err, kerr.TopicAlreadyExists):
			raced = append(raced, i)
		default:
			return nil, fmt.Errorf("create topic %s (partitions %d, replicas %d): %w%s",
				s.Name, s.Partitions, s.Replicas, err, errMessage(resp.ErrMessage))
		}
	}
	return raced, nil
}
