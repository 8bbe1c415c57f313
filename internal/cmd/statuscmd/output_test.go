package statuscmd_test

import (
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// TestStatusJSONFields: the field names of --format json, as the golden
// file lists them, from records that fill every field but in_clickhouse.
func TestStatusJSONFields(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	now := time.Now().Truncate(time.Millisecond)
	at := now.Add
	r := p.schedule("g", at(-40*time.Minute), at(-5*time.Minute))
	r.Headers = append(r.Headers, hdr(tiers.HeaderTarget, p.cancel()))
	f := p.forward(p.hop(r, 5*time.Minute, at(-10*time.Minute)), at(-5*time.Minute))
	p.outcome(f, outcome.Retry, at(-5*time.Minute+time.Second), "timeout")
	p.outcome(f, outcome.Skipped, at(-4*time.Minute), "")
	p.cancelAt("g", at(-time.Minute), at(-5*time.Minute))
	p.deadLetter(p.onward(r, p.delay(time.Minute), at(-time.Minute), hdr(tiers.HeaderDue, "x")), "due_not_a_number: x", at(-time.Minute))
	p.schedule("w", at(-time.Minute), at(time.Minute))
	p.cancelAt("w", at(-time.Minute), time.Time{})
	w, err := tiers.BuildCancellation(p.prefix, tiers.Cancellation{ID: "w", At: now, Withdrawn: true})
	if err != nil {
		t.Fatal(err)
	}
	p.produce(w)

	got := map[string]map[string]bool{}
	for _, id := range []string{"g", "w"} {
		_, out := p.status(id)
		var doc map[string]any
		if err := json.Unmarshal([]byte(out), &doc); err != nil {
			t.Fatal(err)
		}
		collectKeys(got, "status", doc)
	}
	var lines []string
	for _, kind := range slices.Sorted(maps.Keys(got)) {
		lines = append(lines, kind+": "+strings.Join(slices.Sorted(maps.Keys(got[kind])), " "))
	}
	text := strings.Join(lines, "\n") + "\n"
	golden := filepath.Join("testdata", "fields.golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if text != string(want) {
		t.Errorf("JSON fields changed (go test -run TestStatusJSONFields -update rewrites %s if that is meant):\n%s\nwant:\n%s", golden, text, want)
	}
}

// collectKeys adds the keys of the objects in v to got[kind], naming
// nested objects by their key.
func collectKeys(got map[string]map[string]bool, kind string, v any) {
	switch v := v.(type) {
	case map[string]any:
		if got[kind] == nil {
			got[kind] = map[string]bool{}
		}
		for k, e := range v {
			got[kind][k] = true
			collectKeys(got, k, e)
		}
	case []any:
		for _, e := range v {
			collectKeys(got, kind, e)
		}
	}
}
