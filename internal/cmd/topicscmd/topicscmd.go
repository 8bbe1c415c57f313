package topicscmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const topicsUsage = `hourglass topics creates the pipeline's topics, or checks them with --check.

Topics: one delay topic per tier (<prefix>delay.<tier>), the cancel topic
(<prefix>cancel), the outcomes topic (<prefix>outcomes) and the dead-letter
topic (<prefix>dlq). A delay topic keeps records 7 days or twice its tier,
whichever is longer; a longer retention is fine. Existing topics are never
altered; where their configs differ from the recommended ones (a delay
topic's retention shorter than that), or their partitions from an explicit
--partitions, the difference is reported and the command exits 1, as it does
when a topic is missing (--check names each, and the command that creates
them) or when the broker refuses to describe a topic's configs (the
principal needs DescribeConfigs on the topics). Without --partitions, the
partition count of an existing topic is whoever created it's choice: it is
shown, not checked.

Usage: hourglass topics [flags]

` + cli.FlagsHeading + "\n"

// Run is the `hourglass topics` command.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		kc          kafka.Config
		rawTiers    string
		prefix      string
		partitions  int
		replication int
		check       bool
	)
	fs := cli.NewFlagSet("topics", topicsUsage)
	fs.SetOutput(stderr)
	flags.Kafka(fs, &kc, "hourglass-topics")
	flags.Tiers(fs, &rawTiers, tiers.DefaultTiers, "delay tiers: comma-separated `durations`")
	fs.StringVar(&prefix, "topic-prefix", cli.Env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.IntVar(&partitions, "partitions", cli.Env("partitions"), topics.DefaultPartitions, "partitions of each topic")
	fs.IntVar(&replication, "replication-factor", cli.Env("replication-factor"), -1, "replication factor; -1 uses the broker default")
	fs.BoolVar(&check, "check", "", false, "only check: report missing and different topics, create nothing")
	fs.Essential(flags.TiersFlag, "topic-prefix", "partitions", "check")
	if err := service.ParseArgs(fs, args); err != nil {
		return err
	}
	var errs cli.Problems
	errs.Join(flags.CheckKafka(fs, &kc))
	table, err := flags.ParseTiers(rawTiers)
	errs.Join(err)
	errs.IntRange("partitions", partitions, 1, 10_000)
	errs.Join(flags.CheckReplication(replication))
	if err := fs.Explain(errs.Err()); err != nil {
		return service.UsageError{Err: err}
	}
	opts, err := flags.KafkaOpts(&kc)
	if err != nil {
		return err
	}
	specs := topics.Specs(topics.Default(prefix, table), int32(partitions), int16(replication))
	explicit := fs.Source("partitions") != cli.SourceDefault
	if !explicit {
		// The count is a capacity the operator chose when creating the
		// topics (the demo's are 3): not asked for, it is not held against them.
		topics.PartitionsOnCreate(specs)
	}
	st, err := topics.Provision(ctx, opts, specs, !check)
	if err != nil {
		return err
	}
	topics.FormatStatus(stdout, st)
	if !explicit && otherPartitions(st, int32(partitions)) {
		fmt.Fprintf(stdout, "partition counts not checked: topics created here get %d; give --partitions to check them\n", partitions)
	}
	for _, s := range st {
		if s.ConfigsDenied {
			// Checking is this command's job: a check it could not make fails.
			return errors.New("the configs of some topics could not be checked: allow this principal DescribeConfigs on them (docs/security.md)")
		}
	}
	var missing []string
	differ := false
	for _, s := range st {
		switch {
		case !s.Created && !s.Existed:
			missing = append(missing, s.Spec.Name)
		case !s.OK():
			differ = true
		}
	}
	var problems []error
	if len(missing) > 0 {
		// A running system that moves to a longer ladder lacks the
		// topics of the new tiers: name each, and the command that
		// creates them without touching the others.
		problems = append(problems, fmt.Errorf("missing topics %s: create them with `hourglass topics%s` (the flags of this check, without --check)",
			strings.Join(missing, ", "), createArgs(table, prefix, partitions)))
	}
	if differ {
		problems = append(problems, errors.New("some topics differ from the recommended settings (existing topics are never altered)"))
	}
	return errors.Join(problems...)
}

// otherPartitions reports whether an existing topic of st has a partition
// count other than partitions.
func otherPartitions(st []topics.Status, partitions int32) bool {
	for _, s := range st {
		if s.Existed && s.Partitions != partitions {
			return true
		}
	}
	return false
}

// createArgs returns the flags of a `hourglass topics` that creates the
// topics checked: the tiers and partitions always, the prefix unless it is
// the default.
func createArgs(table tiers.Table, prefix string, partitions int) string {
	args := fmt.Sprintf(" --tiers %s --partitions %d", table, partitions)
	if prefix != tiers.DefaultPrefix {
		args += " --topic-prefix " + prefix
	}
	return args
}
