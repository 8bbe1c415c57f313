// Package topics is the one place that knows the topic layout of an
// Hourglass pipeline: which topics there are, their names, the settings
// they are created with, and how they are provisioned and checked.
//
// Names derive from a prefix (default tiers.DefaultPrefix, "hourglass.")
// and the tier table, through the naming functions of pkg/tiers that
// producers use too: one delay topic per tier (<prefix>delay.<tier>), the
// cancel topic (<prefix>cancel), the outcomes topic (<prefix>outcomes) and
// the dead-letter topic (<prefix>dlq). [Set] names the topics a command
// needs and [Specs] gives them their recommended settings: delay topics keep
// records 7 days or twice the tier, whichever is longer ([DelayRetention],
// a floor: a longer retention is no mismatch); target and outcome topics 7
// days; the dead-letter topic 30 days.
//
// [Ensure] creates missing topics and checks existing ones against a [Spec]
// without ever altering them; [FormatStatus] prints the result. Configs are
// compared only as the broker reports them: kfake (and some
// Kafka-compatible brokers) do not report every topic config, and a config
// that is not reported is listed as unverified, never as a mismatch; so is
// every config of a topic the principal may not DescribeConfigs
// (Status.ConfigsDenied), which a service logs and starts anyway, and
// `hourglass topics` reports as a failed check.
// [Provision] runs Ensure on a short-lived client, [ProvisionOn] on one of
// the caller's, and [Missing] lists the topics that do not exist.
//
// The router consumes the delay topics of its tiers and creates them; the
// canceller reschedules failed closes through the delay topics of its own
// tiers, so the two must agree. The commands that start the services, and
// their flags, are in internal/service and internal/cmd.
package topics
