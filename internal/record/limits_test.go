package record

import (
	"slices"
	"testing"

	"github.com/hourglass/hourglass/internal/testutil/fieldtest"
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
		name   string
		l      tiers.Limits
		fields []string // the fields the problems name, in order
	}{
		{"defaults", def, nil},
		{"lowered", tiers.Limits{KeyBytes: 64, HeaderBytes: 1, Headers: 1, ValueBytes: 1}, nil},
		{"zero key", with(func(l *tiers.Limits) { l.KeyBytes = 0 }), []string{"KeyBytes"}},
		{"negative headers", with(func(l *tiers.Limits) { l.Headers = -1 }), []string{"Headers"}},
		{"key longer than an outcome keeps", with(func(l *tiers.Limits) { l.KeyBytes = 1025 }), []string{"KeyBytes"}},
		{"too large to forward", with(func(l *tiers.Limits) { l.ValueBytes = 1 << 20 }), []string{"ValueBytes"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckLimits(tt.l)
			if got := fieldtest.Fields(err); !slices.Equal(got, tt.fields) {
				t.Errorf("problems %v; want of the fields %v", err, tt.fields)
			}
		})
	}
}
