package topics

import (
	"slices"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestSpecsRetention(t *testing.T) {
	table, _ := tiers.Parse("1m,30m,24h,168h,6480h")
	specs := Specs(Set{Prefix: "p.", Tiers: table, Targets: []string{"p.cancel", "p.dlq"}, DeadLetter: "p.dlq"}, 3, -1)
	want := map[string]string{
		"p.delay.1m":    "604800000",   // 7 days
		"p.delay.30m":   "604800000",   // 7 days
		"p.delay.24h":   "604800000",   // 7 days, more than twice the tier
		"p.delay.168h":  "1209600000",  // 14 days: twice the tier
		"p.delay.6480h": "46656000000", // 540 days: twice the tier
		"p.dlq":         "2592000000",  // 30 days, even when also listed as a target
		"p.cancel":      "604800000",
	}
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d: %+v", len(specs), len(want), specs)
	}
	for _, s := range specs {
		if got := s.Configs["retention.ms"]; got != want[s.Name] {
			t.Errorf("%s: retention.ms %s, want %s", s.Name, got, want[s.Name])
		}
		_, delay := tiers.TierOf("p.", s.Name)
		if got := slices.Equal(s.AtLeast, []string{"retention.ms"}); got != delay {
			t.Errorf("%s: AtLeast %v: want retention.ms a floor of the delay topics only", s.Name, s.AtLeast)
		}
	}
}

// TestDelayRetention: a delay topic keeps a record at least as long as its
// tier, with margin, and never less than 7 days.
func TestDelayRetention(t *testing.T) {
	const day = 24 * time.Hour
	for _, d := range tiers.DefaultTable().Durations() {
		got := DelayRetention(d)
		if got < 7*day || got < 2*d || (got != 7*day && got != 2*d) {
			t.Errorf("DelayRetention(%s) = %v, want max(7 days, 2 x the tier)", tiers.Name(d), got)
		}
	}
}
