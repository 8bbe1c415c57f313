package deploy

// Tests of the Prometheus rules in prometheus/: promtool checks and unit
// tests, and what an operator needs of every alert.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRulesValid checks the rules file with promtool and runs its unit tests,
// every prometheus/*.test.yaml.
// A missing promtool fails the test: scripts/deps.sh installs it.
func TestRulesValid(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		// Where scripts/deps.sh puts it when it is not installed.
		if abs, aerr := filepath.Abs("../.tools/bin/promtool"); aerr == nil {
			promtool, err = exec.LookPath(abs)
		}
	}
	if err != nil {
		t.Fatalf("promtool is not on PATH (%v): run scripts/deps.sh, which takes it out of Debian's prometheus package into .tools/bin", err)
	}
	tests, err := filepath.Glob("prometheus/*.test.yaml")
	if err != nil || len(tests) < 2 {
		t.Fatalf("prometheus/*.test.yaml: %v %v", tests, err)
	}
	runs := [][]string{{"check", "rules", "hourglass-rules.yaml"}}
	for _, f := range tests {
		runs = append(runs, []string{"test", "rules", filepath.Base(f)})
	}
	for _, args := range runs {
		t.Run(strings.Join(args[:2], "_")+"_"+args[2], func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), promtool, args...)
			cmd.Dir = "prometheus"
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		})
	}
}

// TestAlerts checks what an operator needs of every alert: a severity, a
// summary and a description, and an entry in prometheus/README.md.
func TestAlerts(t *testing.T) {
	rf := readRules(t)
	readme, err := os.ReadFile(rulesReadme)
	if err != nil {
		t.Fatal(err)
	}
	var alerts []string
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts = append(alerts, r.Alert)
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", r.Alert, s)
			}
			for _, a := range []string{"summary", "description"} {
				if strings.TrimSpace(r.Annotations[a]) == "" {
					t.Errorf("%s: no %s annotation", r.Alert, a)
				}
			}
			if !bytes.Contains(readme, []byte(r.Alert)) {
				t.Errorf("%s: not described in %s", r.Alert, rulesReadme)
			}
		}
	}
	for _, want := range []string{
		"HourglassEarlyFire", "HourglassCloseFailureRatio", "HourglassDeadLettersGrowing", "HourglassRouterBehind",
		"HourglassCloseLateness", "HourglassCancellerLag", "HourglassCancellerLagGrowing", "HourglassRecorderLag", "HourglassInvalidCancellations",
		"HourglassTargetDown", "HourglassTargetAbsent", "HourglassSeriesAbsent", "HourglassFetchFailing",
	} {
		if !slices.Contains(alerts, want) {
			t.Errorf("alert %s is missing from %s", want, rulesFile)
		}
	}
}
