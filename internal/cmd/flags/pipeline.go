package flags

import (
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TiersFlag is the flag of the tier table. Its environment variable,
// HOURGLASS_TIERS, is the same for every command, so that one setting gives
// the router and the canceller the same tiers.
const TiersFlag = "tiers"

// Tiers registers --tiers (HOURGLASS_TIERS) on fs, storing the raw list in
// p with default def; usage says what the command does with the tiers.
// Parse the list with [ParseTiers] when validating, so that a bad list is
// reported together with every other problem.
func Tiers(fs *cli.FlagSet, p *string, def, usage string) {
	fs.StringVar(p, TiersFlag, cli.Env(TiersFlag), def, usage)
}

// ParseTiers parses the value of --tiers; its error is a *cli.FlagError
// naming the flag.
func ParseTiers(raw string) (tiers.Table, error) {
	t, err := tiers.Parse(raw)
	if err != nil {
		return t, cli.Errorf(TiersFlag, "%v", err)
	}
	return t, nil
}

// CheckReplication returns the problem of a --replication-factor other
// than -1 (the broker's) or 1 to 32, or nil.
func CheckReplication(v int) error {
	if v == 0 || v < -1 || v > 32 {
		return cli.Errorf("replication-factor", "%d: want -1 (broker default) or 1 to 32", v)
	}
	return nil
}

// InstanceID registers --instance-id (HOURGLASS_INSTANCE_ID) on fs: the
// static group membership of a service's consumer, default "", a dynamic
// member.
func InstanceID(fs *cli.FlagSet, p *string) {
	fs.StringVar(p, "instance-id", cli.Env("instance-id"), "",
		"static group membership `id`, unique per running instance (e.g. the pod name): a restarted instance takes its partitions back at once instead of after --session-timeout")
}

// Limits registers the flags of the record limits into l, each with its
// HOURGLASS_* environment variable (HOURGLASS_MAX_KEY_BYTES, ...). The
// router and the canceller both take them and must have the same: a record
// within the router's limits is forwarded, and refused by the canceller it
// would be dead-lettered unclosed.
func Limits(fs *cli.FlagSet, l *tiers.Limits) {
	fs.IntVar(&l.KeyBytes, "max-key-bytes", cli.Env("max-key-bytes"), tiers.DefaultMaxKeyBytes,
		"largest key (task id) in `bytes`; larger records go to the dead-letter topic (router and canceller alike)")
	fs.IntVar(&l.HeaderBytes, "max-header-bytes", cli.Env("max-header-bytes"), tiers.DefaultMaxHeaderBytes,
		"largest sum of header names and values in `bytes`, besides the contract's headers (router and canceller alike)")
	fs.IntVar(&l.Headers, "max-headers", cli.Env("max-headers"), tiers.DefaultMaxHeaders,
		"most headers on a record, besides the contract's (router and canceller alike)")
	fs.IntVar(&l.ValueBytes, "max-value-bytes", cli.Env("max-value-bytes"), tiers.DefaultMaxValueBytes,
		"largest value (payload) in `bytes` (router and canceller alike)")
}

// LimitsFields are the flags of the fields of a service Config's Limits,
// the tiers.Limits that [Limits] fills.
var LimitsFields = cli.Fields{
	"Limits.KeyBytes":    "max-key-bytes",
	"Limits.HeaderBytes": "max-header-bytes",
	"Limits.Headers":     "max-headers",
	"Limits.ValueBytes":  "max-value-bytes",
}
