package deploy

// Tests of how settings reach the pods: extraEnv that would override what
// the chart sets.

import (
	"strings"
	"testing"
)

// TestChartExtraEnvRefused checks that extraEnv cannot override what the
// chart sets: above all the per-pod instance id.
func TestChartExtraEnvRefused(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set  string
		want string
	}{
		{"router.extraEnv.HOURGLASS_INSTANCE_ID=r", "router.extraEnv.HOURGLASS_INSTANCE_ID: the chart gives each pod its own"},
		{"canceller.extraEnv.HOURGLASS_INSTANCE_ID=c", "canceller.extraEnv.HOURGLASS_INSTANCE_ID: the chart gives each pod its own"},
		{"router.extraEnv.HOURGLASS_SESSION_TIMEOUT=45s", "router.extraEnv.HOURGLASS_SESSION_TIMEOUT: the chart sets this variable from its own values"},
		{"canceller.extraEnv.HOURGLASS_HTTP_ADDR=127.0.0.1:8081", "canceller.extraEnv.HOURGLASS_HTTP_ADDR: the chart sets this variable"},
	} {
		t.Run(tc.set, func(t *testing.T) {
			t.Parallel()
			_, err := renderChart(t, "", tc.set)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("--set %s: want an error containing %q, got %v", tc.set, tc.want, err)
			}
		})
	}
	if _, err := renderChart(t, "", "router.extraEnv.HOURGLASS_MAX_VALUE_BYTES=100000"); err != nil {
		t.Errorf("a variable the chart does not set: %v", err)
	}
}
