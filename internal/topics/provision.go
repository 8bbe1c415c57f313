package topics

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// provisionTimeout bounds Provision.
const provisionTimeout = 60 * time.Second

// slowStart is how long EnsureLogged waits for the brokers before it logs
// that it is still waiting; a variable so that tests can shorten it.
var slowStart = 5 * time.Second

// delayWait is how long CheckDelay waits for missing delay topics; a
// variable so that tests can shorten it.
var delayWait = time.Minute

// Provision creates (or, with create false, only checks) the topics of
// specs on a short-lived client and reports what it found.
func Provision(ctx context.Context, opts []kgo.Opt, specs []Spec, create bool) ([]Status, error) {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	return provision(ctx, cl, specs, create)
}

// provision is Provision on cl.
func provision(ctx context.Context, cl *kgo.Client, specs []Spec, create bool) ([]Status, error) {
	ctx, cancel := context.WithTimeout(ctx, provisionTimeout)
	defer cancel()
	st, err := Ensure(ctx, kadm.NewClient(cl), specs, create)
	if err != nil {
		return nil, fmt.Errorf("topics: %w", err)
	}
	return st, nil
}

// EnsureLogged provisions the topics a service needs at its start and logs
// what differs from the spec, and the topics whose configs it was not
// allowed to describe. It fails only when it cannot reach the brokers,
// describe the topics or create a missing one. Brokers that accept connections and
// do not answer (a hung broker, a wrong port behind a proxy) hold it for
// up to provisionTimeout: after slowStart it logs that it is waiting.
func EnsureLogged(ctx context.Context, opts []kgo.Opt, specs []Spec, create bool, log *slog.Logger) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	start := time.Now()
	slow := time.AfterFunc(slowStart, func() {
		log.Warn("no answer from the brokers yet; still trying", "brokers", strings.Join(seeds, ","),
			"waited", time.Since(start).Round(time.Second), "gives_up_after", provisionTimeout)
	})
	st, err := provision(ctx, cl, specs, create)
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
			log.Warn("topic is missing; it is created by `hourglass topics` or --create-topics", "topic", s.Spec.Name)
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

// CheckDelay waits, up to a minute, for the delay topics of table under
// prefix to exist, checking every second, and fails naming --tiers when one
// does not appear. The router creates the delay topics of its own --tiers
// (as does `hourglass topics`), so a delay topic that never appears means
// the tiers of the caller differ from the router's: a record sent there
// would never be routed.
func CheckDelay(ctx context.Context, opts []kgo.Opt, prefix string, table tiers.Table, log *slog.Logger) error {
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	want := table.Topics(prefix)
	deadline := time.Now().Add(delayWait)
	for {
		missing, err := missingTopics(ctx, adm, want)
		switch {
		case err != nil:
			return fmt.Errorf("topics: %w", err)
		case len(missing) == 0:
			return nil
		case time.Now().After(deadline):
			return cli.Errorf(FlagTiers, "%s (%s): delay topics %s do not exist: the router creates the delay topics of its --tiers, "+
				"so give this command the router's --tiers (or create them with `hourglass topics`)",
				table, cli.Env(FlagTiers), strings.Join(missing, ", "))
		}
		log.Warn("waiting for the delay topics of --tiers; the router creates them", "missing", missing)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// missingTopics returns the topics of names that do not exist.
func missingTopics(ctx context.Context, adm *kadm.Client, names []string) ([]string, error) {
	details, err := listTopics(ctx, adm, names)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, n := range names {
		if d, ok := details[n]; !ok || d.Err != nil {
			missing = append(missing, n)
		}
	}
	return slices.Clip(missing), nil
}
