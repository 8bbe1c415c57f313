package cancellercmd

import (
	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cancellerFields are the flags of canceller.Config's fields.
var cancellerFields = cli.Fields{
	"Prefix":           "topic-prefix",
	"Topics":           "topics",
	"Outcomes":         "outcomes-topic",
	"DeadLetter":       "dlq-topic",
	"Group":            "group",
	"InstanceID":       "instance-id",
	"SessionTimeout":   "session-timeout",
	"OutcomesKey":      "outcomes-key-file",
	"DefaultKind":      "default-kind",
	"CloseTimeout":     "close-timeout",
	"MaxPollRecords":   "max-poll-records",
	"CommitInterval":   "commit-interval",
	"ShutdownTimeout":  "shutdown-timeout",
	"Instance":         "instance",
	"Tiers":            flags.TiersFlag,
	"MaxInFlight":      "max-in-flight",
	"MaxInFlightBytes": "max-in-flight-bytes",
	"RateLimit":        "rate-limit",
	"RateBurst":        "rate-burst",
	"MaxAttempts":      "max-attempts",
	"RetryBackoff":     "retry-backoff",
	"RetryBackoffMax":  "retry-backoff-max",
}.With(flags.LimitsFields)

// register registers the flags of the fields of k on fs, each with its
// HOURGLASS_* environment variable, storing the defaults in k and the raw
// --tiers in rawTiers; the topic names stay empty, for WithTopicDefaults to
// derive from the prefix. SessionTimeout and OutcomesKey have no flag here:
// they come from the flag every service shares and from the key file.
func register(fs *cli.FlagSet, k *canceller.Config, rawTiers *string) {
	env := cli.Env
	fs.StringVar(&k.Prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringsVar(&k.Topics, "topics", env("topics"), nil, "target `topics` to consume, comma-separated (default <prefix>cancel)")
	fs.StringVar(&k.Outcomes, "outcomes-topic", env("outcomes-topic"), "", "`topic` of outcome events (default <prefix>outcomes)")
	fs.StringVar(&k.DeadLetter, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&k.Group, "group", env("group"), "", flags.GroupUsage("canceller"))
	flags.InstanceID(fs, &k.InstanceID)
	fs.StringVar(&k.DefaultKind, "default-kind", env("default-kind"), canceller.DefaultKind, "`kind` of tasks without hourglass-kind")
	fs.DurationVar(&k.CloseTimeout, "close-timeout", env("close-timeout"), canceller.DefaultCloseTimeout, "bound on one close")
	fs.IntVar(&k.MaxPollRecords, "max-poll-records", env("max-poll-records"), canceller.DefaultMaxPollRecords, "records taken per poll")
	fs.DurationVar(&k.CommitInterval, "commit-interval", env("commit-interval"), canceller.DefaultCommitInterval,
		"least time between two commits; offsets are committed as closes finish, so a crash repeats about this much")
	fs.DurationVar(&k.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), canceller.DefaultShutdownTimeout, "bound on a graceful stop")
	fs.StringVar(&k.Instance, "instance", env("instance"), "", "`name` of this instance in outcome events (default --instance-id, else the host name)")
	flags.Tiers(fs, rawTiers, tiers.DefaultTiers, "delay tiers (the router's): retries are rescheduled through them")
	flags.Limits(fs, &k.Limits) // the router's flags and variables
	fs.IntVar(&k.MaxInFlight, "max-in-flight", env("max-in-flight"), 0,
		"records closing or waiting at once (closes ready together are batched; one task id never closes twice at once); 0 chooses by the closers: 1000 when every one batches (sql, kafka, log, http with batch_url), else 100")
	fs.IntVar(&k.MaxInFlightBytes, "max-in-flight-bytes", env("max-in-flight-bytes"), canceller.DefaultMaxInFlightBytes,
		"`bytes` of the records closing or waiting at once; no more are taken while they hold this much")
	fs.Float64Var(&k.RateLimit, "rate-limit", env("rate-limit"), 0, "closes per second over all kinds, 0 for no limit")
	fs.IntVar(&k.RateBurst, "rate-burst", env("rate-burst"), canceller.DefaultRateBurst, "closes allowed at once above --rate-limit")
	fs.IntVar(&k.MaxAttempts, "max-attempts", env("max-attempts"), canceller.DefaultMaxAttempts, "close attempts before a task goes to the dead-letter topic")
	fs.DurationVar(&k.RetryBackoff, "retry-backoff", env("retry-backoff"), canceller.DefaultRetryBackoff, "wait before the second attempt; doubles per attempt, half of it random")
	fs.DurationVar(&k.RetryBackoffMax, "retry-backoff-max", env("retry-backoff-max"), canceller.DefaultRetryBackoffMax, "longest wait between attempts")
}

// sections puts the canceller's flags into the sections of its help: among
// the Essential flags --closers, without which nothing is closed, only
// logged.
func sections(fs *cli.FlagSet) {
	fs.Essential("closers", flags.TiersFlag, "topic-prefix")
	fs.Move(service.SectionTopics, "topics", "outcomes-topic", "dlq-topic", "default-kind")
	fs.Move(service.SectionLimits, "max-key-bytes", "max-header-bytes", "max-headers", "max-value-bytes", "max-poll-records",
		"max-in-flight", "max-in-flight-bytes", "rate-limit", "rate-burst", "max-attempts")
	fs.Move(service.SectionTiming, "close-timeout", "retry-backoff", "retry-backoff-max", "commit-interval", "shutdown-timeout")
	fs.Move(service.SectionKafka, "group", "instance-id")
	fs.Move(service.SectionAdvanced, "instance", "outcomes-key-file")
}

// check completes c.Canceller from the flags after fs.Parse (the tiers,
// the session timeout, the key, the topic names) and returns every
// problem, each naming its flag.
func (c *Config) check(rawTiers string) error {
	var errs cli.Problems
	k := &c.Canceller
	t, tiersErr := flags.ParseTiers(rawTiers)
	errs.Join(tiersErr)
	k.Tiers = t
	k.SessionTimeout = c.SessionTimeout
	key, err := service.ReadKey(c.OutcomesKeyFile)
	if err != nil {
		errs.Add("outcomes-key-file", "%v", err)
	}
	k.OutcomesKey = key
	// Only the topic names derive from the prefix; a zero anywhere else
	// is the user's and is reported rather than replaced.
	*k = k.WithTopicDefaults()
	problems := k.Validate()
	if tiersErr != nil {
		// A --tiers that did not parse is reported as such, not again as
		// "no tiers".
		problems = field.Omit(problems, "Tiers")
	}
	errs.Join(cancellerFields.Flags(problems, nil))
	return errs.Err()
}
