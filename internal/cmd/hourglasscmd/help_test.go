package hourglasscmd_test

import (
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cmd/hourglasscmd"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// TestHelpEssentialFirst: a service's --help begins with its usage line and
// what it does, then the Essential flags, then its sections; lines fit 80
// columns but for a flag line whose name and variable do not, and defaults
// are in days and MiB.
func TestHelpEssentialFirst(t *testing.T) {
	t.Setenv("COLUMNS", "")
	for _, tc := range []struct {
		cmd       []string
		essential []string
		sections  []string
		defaults  []string
	}{
		{[]string{"router"}, []string{"brokers", "tiers", "topic-prefix"},
			[]string{"Tiers and topics", "Limits", "Timing", "Kafka connection", "Observability", "Advanced"},
			[]string{"default 365d)", "default 32 MiB)", "default 1h)"}},
		{[]string{"canceller"}, []string{"brokers", "closers", "tiers", "topic-prefix"},
			[]string{"Tiers and topics", "Limits", "Timing", "Kafka connection", "Observability", "Advanced"},
			[]string{"default 10m)", "default 64 MiB)"}},
		{[]string{"recorder"}, []string{"brokers", "clickhouse-addr", "topic-prefix", "index"},
			[]string{"ClickHouse", "Tiers and topics", "Timing", "Kafka connection"}, nil},
	} {
		t.Run(tc.cmd[0], func(t *testing.T) {
			_, help, _ := cmdtest.Run(t, hourglasscmd.Run, append(tc.cmd, "--help")...)
			usage, rest, _ := strings.Cut(help, "\n\n")
			if !strings.HasPrefix(usage, "Usage: ") {
				t.Errorf("help does not begin with its usage line:\n%s", help)
			}
			description, rest, _ := strings.Cut(rest, "\n\n")
			if !strings.HasPrefix(description, "hourglass "+tc.cmd[0]+" ") && !strings.HasPrefix(description, tc.cmd[0]+" ") {
				t.Errorf("the usage is not followed by what the command does: %q", description)
			}
			essential, rest, _ := strings.Cut(rest, "\n\n")
			names := flagNames(essential)
			if !strings.HasPrefix(essential, "Essential:\n") || strings.Join(names, " ") != strings.Join(tc.essential, " ") {
				t.Errorf("Essential section lists %q, want %q:\n%s", names, tc.essential, essential)
			}
			at := 0
			for _, s := range tc.sections {
				i := strings.Index("\n"+rest, "\n"+s+":\n")
				if i < at {
					t.Errorf("section %s missing or out of order:\n%s", s, help)
				}
				at = max(i, at)
			}
			if strings.Contains(help, "\nOther flags:\n") {
				t.Errorf("a flag in no section (Other flags):\n%s", help)
			}
			for _, d := range tc.defaults {
				if !strings.Contains(help, d) {
					t.Errorf("help lacks %q", d)
				}
			}
			for line := range strings.Lines(help) {
				line = strings.TrimSuffix(line, "\n")
				_, paren, _ := strings.Cut(line, "  (")
				if len(line) > 80 && !(strings.HasPrefix(line, "  --") && strings.Count(paren, " ") <= 1) {
					t.Errorf("line of %d wider than 80: %q", len(line), line)
				}
			}
		})
	}
}

// TestHelpOneOffCommands: the commands run by hand list their Essential
// flags before the Kafka connection flags, which have a section of their
// own.
func TestHelpOneOffCommands(t *testing.T) {
	t.Setenv("COLUMNS", "")
	for _, tc := range []struct {
		cmd       []string
		essential []string
	}{
		{[]string{"schedule"}, []string{"brokers", "id", "tiers", "topic-prefix", "in", "at"}},
		{[]string{"cancel"}, []string{"brokers", "id", "tiers", "topic-prefix"}},
		{[]string{"status"}, []string{"brokers", "tiers", "topic-prefix", "since", "clickhouse"}},
		{[]string{"topics"}, []string{"brokers", "tiers", "topic-prefix", "partitions", "check"}},
		{[]string{"dlq", "list"}, []string{"brokers", "topic-prefix"}},
	} {
		t.Run(strings.Join(tc.cmd, " "), func(t *testing.T) {
			_, help, _ := cmdtest.Run(t, hourglasscmd.Run, append(tc.cmd, "--help")...)
			_, rest, ok := strings.Cut(help, "\nEssential:\n")
			essential, rest, _ := strings.Cut(rest, "\n\n")
			names := flagNames(essential)
			if !ok || strings.Join(names, " ") != strings.Join(tc.essential, " ") {
				t.Errorf("Essential section lists %q, want %q:\n%s", names, tc.essential, help)
			}
			if !strings.Contains(rest, "\nKafka connection:\n  --kafka-config ") && !strings.HasPrefix(rest, "Kafka connection:\n  --kafka-config ") {
				t.Errorf("no Kafka connection section after Essential:\n%s", help)
			}
		})
	}
}

// flagNames returns the flags a section of --help lists, in its order.
func flagNames(section string) []string {
	var names []string
	for line := range strings.Lines(section) {
		if name, ok := strings.CutPrefix(line, "  --"); ok {
			name, _, _ = strings.Cut(name, " ")
			names = append(names, name)
		}
	}
	return names
}
