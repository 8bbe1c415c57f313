package statuscmd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// TestStatusArgs: the task id goes before, among or after the flags;
// "--" before one that begins with a dash.
func TestStatusArgs(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	p.schedule("-7", time.Now(), time.Now().Add(time.Hour))
	p.schedule("mid", time.Now(), time.Now().Add(time.Hour))
	for _, args := range [][]string{
		append([]string{"--format", "json"}, append(p.flags(), "--", "-7")...),
		append(append([]string{"--format", "json"}, p.flags()[:2]...), append([]string{"mid"}, p.flags()[2:]...)...),
		append([]string{"mid", "--format", "json"}, p.flags()...),
	} {
		stdout, stderr, err := cmdtest.Run(t, statuscmd.Run, args...)
		if err != nil || !strings.Contains(stdout, `"state": "waiting"`) {
			t.Errorf("status %q: %v\n%s%s", args, err, stdout, stderr)
		}
	}
}

// TestStatusBadArgs: bad command lines are usage errors naming the flag.
func TestStatusBadArgs(t *testing.T) {
	cmdtest.CheckBadConfig(t, []cmdtest.BadConfigCase{
		{"no id", statuscmd.Run, []string{"--since", "1h"}, nil, []string{"no task id"}},
		{"two ids", statuscmd.Run, []string{"1", "2"}, nil, []string{`unexpected arguments ["2"]`}},
		{"empty id", statuscmd.Run, []string{""}, nil, []string{"empty"}},
		{"format", statuscmd.Run, []string{"1", "--format", "yaml"}, nil, []string{"--format", `"yaml"`}},
		{"since", statuscmd.Run, []string{"1", "--since", "0s"}, nil, []string{"--since"}},
		{"timeout", statuscmd.Run, []string{"1", "--timeout", "-1s"}, nil, []string{"--timeout"}},
		{"topics", statuscmd.Run, []string{"1", "--topics", "a b"}, nil, []string{"--topics"}},
		{"tiers from env", statuscmd.Run, []string{"1"}, map[string]string{"HOURGLASS_TIERS": "1x"}, []string{"--tiers (HOURGLASS_TIERS)"}},
		{"clickhouse addr", statuscmd.Run, []string{"1", "--clickhouse", "--clickhouse-addr", "nope"}, nil, []string{"--clickhouse-addr"}},
		{"unknown flag", statuscmd.Run, []string{"1", "--sinc", "1h"}, nil, []string{"unknown flag --sinc; did you mean --since?", "see status --help"}},
	}, func(t *testing.T, stdout string) {
		if stdout != "" {
			t.Errorf("stdout %q", stdout)
		}
	})
}
