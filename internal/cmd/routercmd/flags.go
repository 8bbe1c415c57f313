package routercmd

import (
	"github.com/hourglass/hourglass/internal/cancels"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/cmd/flags"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/internal/service"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// routerFields are the flags of router.Config's fields.
var routerFields = cli.Fields{
	"Tiers":                    flags.TiersFlag,
	"Prefix":                   "topic-prefix",
	"Target":                   "target",
	"DeadLetter":               "dlq-topic",
	"Outcomes":                 "outcomes-topic",
	"Cancellations":            "cancellations-topic",
	"CancellationsDir":         "cancellations-dir",
	"CancellationGrace":        "cancellation-grace",
	"OutcomesKey":              "outcomes-key-file",
	"AllowedTargets":           "allowed-targets",
	"DefaultKind":              "default-kind",
	"Group":                    "group",
	"InstanceID":               "instance-id",
	"SessionTimeout":           "session-timeout",
	"MaxDelay":                 "max-delay",
	"TimerCapacity":            "timer-capacity",
	"TimerBytes":               "timer-bytes",
	"MaxHeldPerPartition":      "max-held-per-partition",
	"MaxHeldBytesPerPartition": "max-held-bytes-per-partition",
	"MaxHeld":                  "max-held",
	"MaxHeldBytes":             "max-held-bytes",
	"MaxInFlightPerTarget":     "max-in-flight-per-target",
	"FetchPartitionBytes":      "fetch-partition-bytes",
	"BatchWindow":              "batch-window",
	"CommitInterval":           "commit-interval",
	"RevokeTimeout":            "revoke-timeout",
	"ShutdownTimeout":          "shutdown-timeout",
}.With(flags.LimitsFields)

// rawFlags are the values of the flags that need parsing after fs.Parse, so
// that a bad one is reported with every other problem.
type rawFlags struct {
	tiers      string
	fetchBytes int
}

// register registers the flags of the fields of r on fs, each with its
// HOURGLASS_* environment variable, storing the defaults in r and raw; the
// topic names stay empty, for WithTopicDefaults to derive from the prefix.
// SessionTimeout has no flag of its own here: it is the flag every service
// shares.
func register(fs *cli.FlagSet, r *router.Config, raw *rawFlags) {
	env := cli.Env
	flags.Tiers(fs, &raw.tiers, tiers.DefaultTiers, "delay tiers: comma-separated `durations`, one delay topic each")
	fs.StringVar(&r.Prefix, "topic-prefix", env("topic-prefix"), tiers.DefaultPrefix, "`prefix` of every topic name")
	fs.StringVar(&r.Target, "target", env("target"), "", "`topic` for due records without hourglass-target (default <prefix>cancel)")
	fs.StringVar(&r.DeadLetter, "dlq-topic", env("dlq-topic"), "", "dead-letter `topic` (default <prefix>dlq)")
	fs.StringVar(&r.Outcomes, "outcomes-topic", env("outcomes-topic"), "", "the canceller's outcome `topic`, never a target (default <prefix>outcomes)")
	fs.StringVar(&r.Cancellations, "cancellations-topic", env("cancellations-topic"), "", "compacted `topic` of cancellations, never a target (default <prefix>cancellations)")
	fs.StringVar(&r.CancellationsDir, "cancellations-dir", env("cancellations-dir"), "",
		"`directory` of the on-disk store of cancellations; keep it on a volume to skip rereading the topic after a restart (default: a temporary directory)")
	fs.DurationVar(&r.CancellationGrace, "cancellation-grace", env("cancellation-grace"), cancels.DefaultGrace, "how long a cancellation is kept after the furthest deadline it can call off was due (--max-delay after it was made)")
	fs.StringsVar(&r.AllowedTargets, "allowed-targets", env("allowed-targets"), nil,
		"topics a record may name in hourglass-target, comma-separated `patterns` (orders.*, *.cancel); others go to the dead-letter topic (default: --target only)")
	fs.StringVar(&r.DefaultKind, "default-kind", env("default-kind"), router.DefaultKind,
		"`kind` of the outcome event of a cancelled deadline without hourglass-kind: the canceller's --default-kind")
	fs.StringVar(&r.Group, "group", env("group"), "", flags.GroupUsage("router"))
	flags.InstanceID(fs, &r.InstanceID)
	fs.DurationVar(&r.MaxDelay, "max-delay", env("max-delay"), router.DefaultMaxDelay, "records due further ahead go to the dead-letter topic")
	fs.IntVar(&r.TimerCapacity, "timer-capacity", env("timer-capacity"), router.DefaultTimerCapacity,
		"records held in memory for delays shorter than the smallest tier; when full, partitions pause instead")
	fs.IntVar(&r.TimerBytes, "timer-bytes", env("timer-bytes"), router.DefaultTimerBytes, "`bytes` of records the in-memory timer holds at most")
	fs.IntVar(&r.MaxHeldPerPartition, "max-held-per-partition", env("max-held-per-partition"), router.DefaultMaxHeldPerPartition,
		"records a partition holds waiting out their tier before it is paused, and the most one poll takes")
	fs.IntVar(&r.MaxHeldBytesPerPartition, "max-held-bytes-per-partition", env("max-held-bytes-per-partition"), router.DefaultMaxHeldBytesPerPartition,
		"`bytes` the records a partition holds (waiting, in the timer or being produced) take in memory before it is paused")
	fs.IntVar(&r.MaxHeld, "max-held", env("max-held"), router.DefaultMaxHeld,
		"records all partitions hold waiting out their tiers before each is held to an even share")
	fs.IntVar(&r.MaxHeldBytes, "max-held-bytes", env("max-held-bytes"), router.DefaultMaxHeldBytes,
		"`bytes` all partitions hold before each is held to an even share")
	fs.IntVar(&r.MaxInFlightPerTarget, "max-in-flight-per-target", env("max-in-flight-per-target"), router.DefaultMaxInFlightPerTarget,
		"produces in flight to one topic at most; more wait, so that a failing topic cannot hold up the others")
	flags.Limits(fs, &r.Limits)
	fs.IntVar(&raw.fetchBytes, "fetch-partition-bytes", env("fetch-partition-bytes"), router.DefaultFetchPartitionBytes, "most `bytes` fetched per partition at once")
	fs.DurationVar(&r.BatchWindow, "batch-window", env("batch-window"), router.DefaultBatchWindow,
		"what falls due within one window leaves together at its end, in one check of the cancellations and one produce batch; adds at most this to lateness (0: each at its instant)")
	fs.DurationVar(&r.CommitInterval, "commit-interval", env("commit-interval"), router.DefaultCommitInterval,
		"least time between two commits; offsets are committed as produces are acknowledged, so a crash repeats about this much")
	fs.DurationVar(&r.RevokeTimeout, "revoke-timeout", env("revoke-timeout"), router.DefaultRevokeTimeout, "how long a rebalance waits for produces in flight")
	fs.DurationVar(&r.ShutdownTimeout, "shutdown-timeout", env("shutdown-timeout"), router.DefaultShutdownTimeout, "bound on a graceful stop")
}

// sections puts the router's flags into the sections of its help, the
// tiers and the topic prefix among the Essential flags.
func sections(fs *cli.FlagSet) {
	fs.Essential(flags.TiersFlag, "topic-prefix")
	fs.Move(service.SectionTopics, "target", "default-kind", "dlq-topic", "outcomes-topic", "cancellations-topic", "allowed-targets")
	fs.Move(service.SectionLimits, "max-delay", "timer-capacity", "timer-bytes", "max-held-per-partition", "max-held-bytes-per-partition",
		"max-held", "max-held-bytes", "max-in-flight-per-target", "max-key-bytes", "max-header-bytes", "max-headers", "max-value-bytes",
		"fetch-partition-bytes")
	fs.Move(service.SectionTiming, "cancellation-grace", "batch-window", "commit-interval", "revoke-timeout", "shutdown-timeout")
	fs.Move(service.SectionKafka, "group", "instance-id")
	fs.Move(service.SectionAdvanced, "cancellations-dir", "outcomes-key-file")
}

// check completes c.Router from the flags after fs.Parse (the tiers, the
// fetch bytes, the session timeout, the key, the topic names) and returns
// every problem, each naming its flag.
func (c *Config) check(raw rawFlags) error {
	var errs cli.Problems
	r := &c.Router
	t, err := flags.ParseTiers(raw.tiers)
	errs.Join(err)
	r.Tiers = t
	r.FetchPartitionBytes = int32(raw.fetchBytes)
	if raw.fetchBytes < 1<<10 || raw.fetchBytes > 1<<30 {
		errs.Add("fetch-partition-bytes", "%d: want %d to %d", raw.fetchBytes, 1<<10, 1<<30)
		// Reported here: Validate is not to report it again.
		r.FetchPartitionBytes = router.DefaultFetchPartitionBytes
	}
	r.SessionTimeout = c.SessionTimeout
	key, err := service.ReadKey(c.OutcomesKeyFile)
	if err != nil {
		errs.Add("outcomes-key-file", "%v", err)
	}
	r.OutcomesKey = key
	if r.Tiers.Len() > 0 {
		// Only the topic names derive from the prefix; every other flag
		// has its default already, so a zero is the user's and is reported
		// rather than replaced.
		*r = r.WithTopicDefaults()
		errs.Join(routerFields.Flags(r.Validate(), nil))
	}
	return errs.Err()
}
