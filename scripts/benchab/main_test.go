package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLastLine(t *testing.T) {
	figs, line, err := lastLine("bench: progress\n{\"a\":1}\n{\"lateness_ms\":{\"p99\":5},\"mode\":\"burst\",\"lost\":0}\n")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(line, `{"lateness_ms"`) {
		t.Errorf("line = %q, want the last one", line)
	}
	want := map[string]float64{"lateness_ms.p99": 5, "lost": 0}
	if len(figs) != len(want) || figs["lateness_ms.p99"] != 5 || figs["lost"] != 0 {
		t.Errorf("figures = %v, want %v (strings left out)", figs, want)
	}
	if _, _, err := lastLine("bench: the broker did not start\n"); err == nil {
		t.Error("a last line that is not JSON: no error")
	}
}

func TestMedian(t *testing.T) {
	runs := []map[string]float64{{"a": 3, "b": 1}, {"a": 1}, {"a": 2, "b": 4}}
	for _, tt := range []struct {
		key    string
		want   float64
		wantOK bool
	}{
		{"a", 2, true},   // odd count
		{"b", 2.5, true}, // even count: the mean of the middle two
		{"c", 0, false},  // no run has it
	} {
		if got, ok := median(runs, tt.key); got != tt.want || ok != tt.wantOK {
			t.Errorf("median(%s) = %v, %v; want %v, %v", tt.key, got, ok, tt.want, tt.wantOK)
		}
	}
}

func TestSummarize(t *testing.T) {
	c := config{base: "abc123", pairs: 2, keys: []string{"router_cpu_s", "lost", "absent"}, args: []string{"--orders", "10"}}
	runs := map[string][]map[string]float64{
		"base": {{"router_cpu_s": 2, "lost": 0}, {"router_cpu_s": 4, "lost": 0}},
		"new":  {{"router_cpu_s": 1.5, "lost": 0}},
	}
	var out bytes.Buffer
	if err := summarize(&out, c, runs); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	if !strings.Contains(text, "router_cpu_s") || strings.Contains(text, "absent") {
		t.Errorf("table:\n%s\nwant router_cpu_s and no row for a figure no run has", text)
	}
	lines := strings.Split(strings.TrimSpace(text), "\n")
	var s summary
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &s); err != nil {
		t.Fatalf("last line is not the JSON summary: %v", err)
	}
	if s.Median["base"]["router_cpu_s"] != 3 || s.Median["new"]["router_cpu_s"] != 1.5 || s.Ratio["router_cpu_s"] != 0.5 {
		t.Errorf("summary = %+v; want medians 3 and 1.5, ratio 0.5", s)
	}
	if _, ok := s.Ratio["lost"]; ok {
		t.Errorf("ratio of lost = %v; want none over a base of 0", s.Ratio["lost"])
	}
}

// TestBenchFailed: a bench that exits 1 after its JSON line (an order
// lost, a bound exceeded) gives its figures and an error; one that prints
// no line gives only the error.
func TestBenchFailed(t *testing.T) {
	dir := t.TempDir()
	script := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	figs, _, err := bench(script("lost", `echo '{"lost":3}'; exit 1`), nil, time.Minute, io.Discard)
	if err == nil || figs["lost"] != 3 {
		t.Errorf("bench that lost orders = %v, %v; want its figures and an error", figs, err)
	}
	figs, _, err = bench(script("crash", `echo 'panic: boom' >&2; exit 2`), nil, time.Minute, io.Discard)
	if err == nil || figs != nil {
		t.Errorf("bench that crashed = %v, %v; want no figures and an error", figs, err)
	}
	figs, _, err = bench(script("ok", `echo '{"lost":0}'`), nil, time.Minute, io.Discard)
	if err != nil || len(figs) != 1 {
		t.Errorf("bench that passed = %v, %v; want its figures", figs, err)
	}
}
