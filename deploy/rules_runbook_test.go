package deploy

// Tests of what the rules give an operator beyond the alert itself: a
// runbook section per alert, and aggregations that keep environments
// (cluster, namespace, job) apart.

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	runbookFile = "../docs/runbook.md"
	// runbookURL is where each alert's runbook_url points, followed by
	// #<alert name in lower case>: the heading of its section.
	runbookURL = "https://github.com/hourglass/hourglass/blob/main/docs/runbook.md"
)

// runbookParts are what every alert's section of the runbook says.
var runbookParts = []string{"**What it means.**", "**How to confirm.**", "**What to do.**"}

// TestAlertRunbooks checks that every alert's runbook_url points at its
// section of docs/runbook.md, and that the section says what the alert
// means, how to confirm it and what to do.
func TestAlertRunbooks(t *testing.T) {
	b, err := os.ReadFile(runbookFile)
	if err != nil {
		t.Fatal(err)
	}
	sections := markdownSections(string(b))
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if got, want := r.Annotations["runbook_url"], runbookURL+"#"+strings.ToLower(r.Alert); got != want {
				t.Errorf("%s: runbook_url %q, want %q", r.Alert, got, want)
			}
			body, ok := sections[r.Alert]
			if !ok {
				t.Errorf("%s: no section \"## %s\" in %s", r.Alert, r.Alert, runbookFile)
				continue
			}
			for _, part := range runbookParts {
				if !strings.Contains(body, part) {
					t.Errorf("%s: its section in %s does not say %s", r.Alert, runbookFile, part)
				}
			}
		}
	}
}

// markdownSections returns the text under each "## " heading, by heading.
func markdownSections(text string) map[string]string {
	out := map[string]string{}
	var name string
	for line := range strings.SplitSeq(text, "\n") {
		if h, ok := strings.CutPrefix(line, "## "); ok {
			name = strings.TrimSpace(h)
			out[name] = ""
			continue
		}
		if name != "" {
			out[name] += line + "\n"
		}
	}
	return out
}

// grouping matches the label lists of by (...) and on (...).
var grouping = regexp.MustCompile(`\b(by|on)\s*\(([^)]*)\)`)

// TestRulesKeepEnvironments checks that no aggregation or match of the
// rules drops cluster or namespace, so that releases in several namespaces
// or clusters scraped by one Prometheus are never added together, and that
// the recording rules keep job too (the dashboards filter on it).
func TestRulesKeepEnvironments(t *testing.T) {
	for _, g := range readRules(t).Groups {
		for _, r := range g.Rules {
			want := []string{"cluster", "namespace"}
			if r.Record != "" {
				want = append(want, "job")
			}
			for _, m := range grouping.FindAllStringSubmatch(r.Expr, -1) {
				var labels []string
				for l := range strings.SplitSeq(m[2], ",") {
					labels = append(labels, strings.TrimSpace(l))
				}
				for _, l := range want {
					if !slices.Contains(labels, l) {
						t.Errorf("%s%s: %s (%s) drops %s", r.Record, r.Alert, m[1], m[2], l)
					}
				}
			}
			if strings.Contains(r.Expr, "without") || regexp.MustCompile(`\b(sum|max|min|avg|count)\s*\(`).MatchString(r.Expr) {
				t.Errorf("%s%s: an aggregation without by (...): it drops cluster and namespace", r.Record, r.Alert)
			}
		}
	}
}
