package flags

import (
	"testing"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestGroup: the default prefix keeps the groups deployments committed
// their offsets under; another prefix gets groups of its own.
func TestGroup(t *testing.T) {
	for _, tc := range []struct{ prefix, component, want string }{
		{tiers.DefaultPrefix, "router", router.DefaultGroup},
		{tiers.DefaultPrefix, "canceller", canceller.DefaultGroup},
		{tiers.DefaultPrefix, "recorder", recorder.DefaultGroup},
		{"nc.", "router", "nc-router"},
		{"nc.", "canceller", "nc-canceller"},
		{"shop.eu.", "recorder", "shop.eu-recorder"},
		{"staging-", "router", "staging-router"},
		{"hourglass", "router", "hourglass-router"},
		{"", "router", "router"},
	} {
		if got := Group(tc.prefix, tc.component); got != tc.want {
			t.Errorf("Group(%q, %q) = %q, want %q", tc.prefix, tc.component, got, tc.want)
		}
	}
}
