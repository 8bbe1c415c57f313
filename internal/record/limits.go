package record

import (
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// LimitsVar registers the flags of the record limits into l, each with its
// HOURGLASS_* environment variable (HOURGLASS_MAX_KEY_BYTES, ...). The
// router and the canceller both take them and must have the same: a record
// within the router's limits is forwarded, and refused by the canceller it
// would be dead-lettered unclosed.
func LimitsVar(fs *cli.FlagSet, l *tiers.Limits) {
	fs.IntVar(&l.KeyBytes, "max-key-bytes", cli.Env("max-key-bytes"), tiers.DefaultMaxKeyBytes,
		"largest key (task id) in `bytes`; larger records go to the dead-letter topic (router and canceller alike)")
	fs.IntVar(&l.HeaderBytes, "max-header-bytes", cli.Env("max-header-bytes"), tiers.DefaultMaxHeaderBytes,
		"largest sum of header names and values in `bytes`, besides the contract's headers (router and canceller alike)")
	fs.IntVar(&l.Headers, "max-headers", cli.Env("max-headers"), tiers.DefaultMaxHeaders,
		"most headers on a record, besides the contract's (router and canceller alike)")
	fs.IntVar(&l.ValueBytes, "max-value-bytes", cli.Env("max-value-bytes"), tiers.DefaultMaxValueBytes,
		"largest value (payload) in `bytes` (router and canceller alike)")
}

// CheckLimits adds the problems of l to p, naming the flags of LimitsVar:
// each limit is at least 1; a key is at most what an outcome event keeps of
// a task id (outcome.MaxTaskIDBytes: a longer one would be recorded cut,
// and `hourglass status` could not find its task); and the record they
// allow, with the headers Hourglass adds, fits a dead letter.
func CheckLimits(p *cli.Problems, l tiers.Limits) {
	for _, f := range []struct {
		flag string
		v    int
	}{
		{"max-key-bytes", l.KeyBytes}, {"max-header-bytes", l.HeaderBytes},
		{"max-headers", l.Headers}, {"max-value-bytes", l.ValueBytes},
	} {
		if f.v < 1 {
			p.Add(f.flag, "%d: must be at least 1", f.v)
		}
	}
	if l.KeyBytes > outcome.MaxTaskIDBytes {
		p.Add("max-key-bytes", "%d: at most %d, the longest task id an outcome event records whole", l.KeyBytes, outcome.MaxTaskIDBytes)
	}
	if sum := l.KeyBytes + l.HeaderBytes + l.ValueBytes; sum > MaxDeadLetterBytes-16<<10 {
		p.Add("max-value-bytes", "key, header and value limits add up to %d bytes: a record that large could not be forwarded (at most %d)",
			sum, MaxDeadLetterBytes-16<<10)
	}
}
