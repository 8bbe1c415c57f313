package record

import (
	"errors"
	"slices"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestCheckLimits(t *testing.T) {
	def := tiers.Limits{}.WithDefaults()
	with := func(f func(*tiers.Limits)) tiers.Limits {
		l := def
		f(&l)
		return l
	}
	for _, tt := range []struct {
		name  string
		l     tiers.Limits
		flags []string // the flags the problems name, in order
	}{
		{"defaults", def, nil},
		{"lowered", tiers.Limits{KeyBytes: 64, HeaderBytes: 1, Headers: 1, ValueBytes: 1}, nil},
		{"zero key", with(func(l *tiers.Limits) { l.KeyBytes = 0 }), []string{"max-key-bytes"}},
		{"negative headers", with(func(l *tiers.Limits) { l.Headers = -1 }), []string{"max-headers"}},
		{"key longer than an outcome keeps", with(func(l *tiers.Limits) { l.KeyBytes = 1025 }), []string{"max-key-bytes"}},
		{"too large to forward", with(func(l *tiers.Limits) { l.ValueBytes = 1 << 20 }), []string{"max-value-bytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var p cli.Problems
			CheckLimits(&p, tt.l)
			var flags []string
			for _, err := range p {
				var fe *cli.FlagError
				if !errors.As(err, &fe) {
					t.Fatalf("problem %v names no flag", err)
				}
				flags = append(flags, fe.Flag)
			}
			if !slices.Equal(flags, tt.flags) {
				t.Errorf("problems %v; want of the flags %v", p, tt.flags)
			}
		})
	}
}
