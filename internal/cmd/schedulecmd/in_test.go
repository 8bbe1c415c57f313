package schedulecmd

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestInDays: --in takes days, as the README's "7 days" invites, and a
// negative one is refused as before.
func TestInDays(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		in      string
		want    time.Duration
		wantErr string
	}{
		{in: "7d", want: 7 * 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "45m", want: 45 * time.Minute},
		{in: "-1d", wantErr: "--in: -24h0m0s: must not be negative"},
		{in: "7x", wantErr: `--in: "7x" is not a duration`},
	} {
		var f taskFlags
		fs := cli.NewFlagSet("schedule", "")
		f.register(fs)
		if err := fs.Parse([]string{"--in", tc.in}); err != nil {
			if tc.wantErr == "" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("--in %s: %v, want %q", tc.in, err, tc.wantErr)
			}
			continue
		}
		var errs cli.Problems
		task := f.task(fs, "order-42", tiers.DefaultPrefix, now, &errs)
		switch err := errs.Err(); {
		case tc.wantErr != "":
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("--in %s: %v, want %q", tc.in, err, tc.wantErr)
			}
		case err != nil || !task.Due.Equal(now.Add(tc.want)):
			t.Errorf("--in %s: due %v, %v; want %v", tc.in, task.Due, err, now.Add(tc.want))
		}
	}
}
