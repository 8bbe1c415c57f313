package record

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// FuzzAppendPath checks that the router's path stays decodable: whatever
// path tiers.Decode accepted, AppendPath of it decodes again.
func FuzzAppendPath(f *testing.F) {
	for _, seed := range []string{"", "1m", "30m*2,5m", "30m,...", strings.Repeat("p", 1022), strings.Repeat("ä", 512), "1m*999999"} {
		f.Add(seed, int64(time.Minute))
	}
	f.Fuzz(func(t *testing.T, path string, tier int64) {
		if _, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, path)); err != nil || tier <= 0 {
			return
		}
		got := AppendPath(path, time.Duration(tier))
		if _, err := tiers.Decode(hdrs(tiers.HeaderDue, "1767225600000", tiers.HeaderPath, got)); err != nil {
			t.Fatalf("AppendPath(<%d-byte path>, %v) = <%d bytes ending %q>, which does not decode: %v",
				len(path), time.Duration(tier), len(got), got[max(0, len(got)-8):], err)
		}
	})
}
