package topics

import (
	"testing"

	"github.com/hourglass/hourglass/pkg/tiers"
)

func TestSpecsRetention(t *testing.T) {
	table, _ := tiers.Parse("1m,30m,24h")
	specs := Specs(Set{Prefix: "p.", Tiers: table, Targets: []string{"p.cancel", "p.dlq"}, DeadLetter: "p.dlq"}, 3, -1)
	want := map[string]string{
		"p.delay.1m":  "604800000",  // 7 days
		"p.delay.30m": "604800000",  // 7 days
		"p.delay.24h": "864000000",  // 10 x the tier
		"p.dlq":       "2592000000", // 30 days, even when also listed as a target
		"p.cancel":    "604800000",
	}
	if len(specs) != len(want) {
		t.Fatalf("%d specs, want %d: %+v", len(specs), len(want), specs)
	}
	for _, s := range specs {
		if got := s.Configs["retention.ms"]; got != want[s.Name] {
			t.Errorf("%s: retention.ms %s, want %s", s.Name, got, want[s.Name])
		}
	}
}
