package manifest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestRoundTrip writes a manifest from many goroutines and reads it back.
func TestRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	h := Header{RunID: "r1", IDPrefix: "lt-r1-", Prefix: "hourglass.", Tiers: "1s,2s", StartedMs: 1_800_000_000_000}
	w, err := Create(path, h)
	if err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 8, 250
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				e := Entry{ID: fmt.Sprintf("lt-r1-%d-%d", g, i), DueMs: int64(1_800_000_000_000 + i), ScheduledMs: 1_800_000_000_000,
					Paid: i%5 == 0, Shape: "multi_hop"}
				if err := w.Add(e); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := w.Len(); got != goroutines*each {
		t.Errorf("Len() = %d, want %d", got, goroutines*each)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	if err := w.Add(Entry{ID: "lt-r1-late", DueMs: 1}); err == nil {
		t.Error("Add after Close succeeded")
	}

	m, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h.Manifest = Version
	if m.Header != h {
		t.Errorf("header %+v, want %+v", m.Header, h)
	}
	if len(m.Entries) != goroutines*each {
		t.Fatalf("%d entries, want %d", len(m.Entries), goroutines*each)
	}
	paid := 0
	for _, e := range m.Entries {
		if e.Paid {
			paid++
		}
		if e.Shape != "multi_hop" || e.ScheduledMs != 1_800_000_000_000 {
			t.Fatalf("entry %+v lost a field", e)
		}
	}
	if paid != goroutines*each/5 {
		t.Errorf("%d paid entries, want %d", paid, goroutines*each/5)
	}
}

// TestEntryEncoding pins the JSON keys: verify and other tools read them.
func TestEntryEncoding(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.jsonl")
	w, err := Create(path, Header{RunID: "r", IDPrefix: "lt-r-", Prefix: "p.", Tiers: "1s", StartedMs: 5})
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Entry{{ID: "lt-r-1", DueMs: 10, ScheduledMs: 7, Paid: true, Shape: "past_due"}, {ID: "lt-r-2", DueMs: 11, ScheduledMs: 8}} {
		if err := w.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"manifest":1,"run_id":"r","id_prefix":"lt-r-","prefix":"p.","tiers":"1s","started_ms":5}
{"id":"lt-r-1","due_ms":10,"scheduled_ms":7,"paid":true,"shape":"past_due"}
{"id":"lt-r-2","due_ms":11,"scheduled_ms":8}
`
	if string(b) != want {
		t.Errorf("file:\n%s\nwant:\n%s", b, want)
	}
}

func TestReadErrors(t *testing.T) {
	const header = `{"manifest":1,"run_id":"r","id_prefix":"lt-r-","prefix":"hourglass.","tiers":"1s","started_ms":1}` + "\n"
	tests := []struct {
		name, in string
		want     string // substring of the error; "" for none
		entries  int
	}{
		{"header only", header, "", 0},
		{"blank lines skipped", header + "\n" + `{"id":"lt-r-1","due_ms":5,"scheduled_ms":1}` + "\n\n", "", 1},
		{"no trailing newline", header + `{"id":"lt-r-1","due_ms":5,"scheduled_ms":1}`, "", 1},
		{"empty", "", "empty manifest", 0},
		{"header not JSON", "nope\n", "line 1: header", 0},
		{"header unknown key", `{"manifest":1,"run_id":"r","color":"red"}` + "\n", `line 1: header: json: unknown field "color"`, 0},
		{"header wrong version", `{"manifest":2,"run_id":"r"}` + "\n", "manifest version 2, want 1", 0},
		{"header without run id", `{"manifest":1}` + "\n", "no run_id", 0},
		{"entry not JSON", header + "{\n", "line 2", 0},
		{"entry unknown key", header + `{"id":"lt-r-1","due_ms":5,"late":true}` + "\n", `line 2: json: unknown field "late"`, 0},
		{"entry trailing data", header + `{"id":"lt-r-1","due_ms":5} {}` + "\n", "line 2: trailing data", 0},
		{"entry without id", header + `{"due_ms":5}` + "\n", "line 2: entry has no id", 0},
		{"entry without due", header + `{"id":"lt-r-1"}` + "\n", "line 2: entry lt-r-1 has no due_ms", 0},
		{"entry of another run", header + `{"id":"lt-q-1","due_ms":5}` + "\n", `line 2: entry lt-q-1 does not start with the run's id prefix "lt-r-"`, 0},
		{"entry twice", header + `{"id":"lt-r-1","due_ms":5}` + "\n" + `{"id":"lt-r-1","due_ms":6}` + "\n", "line 3: entry lt-r-1 already listed on line 2", 0},
		{"line too long", header + `{"id":"` + strings.Repeat("x", maxLine) + `"}` + "\n", "line 2", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := Read(strings.NewReader(tt.in))
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("error %v, want one containing %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Entries) != tt.entries {
				t.Errorf("%d entries, want %d", len(m.Entries), tt.entries)
			}
		})
	}
}

func TestReadFileNames(t *testing.T) {
	_, err := ReadFile(filepath.Join(t.TempDir(), "missing.jsonl"))
	if err == nil || !strings.Contains(err.Error(), "missing.jsonl") {
		t.Errorf("error %v, want one naming the file", err)
	}
	path := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(path, []byte("x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(path); err == nil || !strings.Contains(err.Error(), "bad.jsonl: line 1") {
		t.Errorf("error %v, want one naming the file and line", err)
	}
	if _, err := Create(filepath.Join(t.TempDir(), "no", "such", "dir.jsonl"), Header{RunID: "r"}); err == nil {
		t.Error("Create in a missing directory succeeded")
	}
}
