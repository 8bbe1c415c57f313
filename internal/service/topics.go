package service

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// slowStart is how long EnsureTopics waits for the brokers before it logs
// that it is still waiting; a variable so that tests can shorten it.
var slowStart = 5 * time.Second

// delayWait is how long CheckDelayTopics waits for missing delay topics; a
// variable so that tests can shorten it.
var delayWait = time.Minute

// EnsureTopics provisions the topics a service needs at its start (creating
// the missing ones with --create-topics) and logs what differs from the
// spec, and the topics whose configs it was not allowed to describe. It
// fails only when it cannot reach the brokers, describe the topics or
// create a missing one. Brokers that accept connections and do not answer
// (a hung broker, a wrong port behind a proxy) hold it for up to
// topics.ProvisionTimeout: after slowStart it logs that it is waiting.
func EnsureTopics(ctx context.Context, opts []kgo.Opt, specs []topics.Spec, create bool, log *slog.Logger) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	start := time.Now()
	slow := time.AfterFunc(slowStart, func() {
		log.Warn("no answer from the brokers yet; still trying", "brokers", strings.Join(seeds, ","),
			"waited", time.Since(start).Round(time.Second), "gives_up_after", topics.ProvisionTimeout)
	})
	st, err := topics.ProvisionOn(ctx, cl, specs, create)
	slow.Stop()
	if err != nil {
		return err
	}
	var denied []string
	for _, s := range st {
		if s.ConfigsDenied {
			denied = append(denied, s.Spec.Name)
		}
		switch {
		case s.Created:
			log.Info("created topic", "topic", s.Spec.Name, "partitions", s.Partitions)
		case len(s.Mismatches) > 0:
			log.Warn("topic differs from the recommended settings", "topic", s.Spec.Name, "differences", strings.Join(s.Mismatches, "; "))
		case !s.Existed:
			log.Warn("topic is missing; create it with `hourglass topics` (with this service's --tiers, --topic-prefix and --partitions) or start with --create-topics",
				"topic", s.Spec.Name)
		}
	}
	if len(denied) > 0 {
		// The check only warns, so a service starts without it; the
		// operator's `hourglass topics --check` is the check that needs it.
		log.Warn("topic configs not checked: this principal may not DescribeConfigs them; check them with `hourglass topics --check`",
			"topics", strings.Join(denied, ","))
	}
	return nil
}

// CheckDelayTopics waits, up to a minute, for the delay topics of table
// under prefix to exist, checking every second, and fails naming --tiers,
// each missing topic and the command that creates it when one does not
// appear. The router creates the delay topics of its own --tiers (as does
// `hourglass topics`) and reads every delay topic of its prefix that
// exists, so a delay topic that never appears means tiers that neither the
// router nor `hourglass topics` was given: a record sent there would fail.
func CheckDelayTopics(ctx context.Context, opts []kgo.Opt, prefix string, table tiers.Table, log *slog.Logger) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := table.Topics(prefix)
	deadline := time.Now().Add(delayWait)
	for {
		missing, err := topics.Missing(ctx, adm, want)
		switch {
		case err != nil:
			return fmt.Errorf("topics: %w", err)
		case len(missing) == 0:
			return nil
		case time.Now().After(deadline):
			create := "hourglass topics --tiers " + table.String()
			if prefix != tiers.DefaultPrefix {
				create += " --topic-prefix " + prefix
			}
			return cli.Errorf(flags.TiersFlag, "%s (%s): delay topics %s do not exist: create them with `%s` (and the --partitions of the others), "+
				"or give this command the router's --tiers; the router creates the delay topics of its --tiers and reads every delay topic of its prefix",
				table, cli.Env(flags.TiersFlag), strings.Join(missing, ", "), create)
		}
		log.Warn("waiting for the delay topics of --tiers; the router creates them", "missing", missing)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
