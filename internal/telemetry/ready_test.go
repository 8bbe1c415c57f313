package telemetry

import (
	"errors"
	"testing"
)

// TestNotReady: a service is ready only while running and every condition
// holds; the error names each condition that does not.
func TestNotReady(t *testing.T) {
	t.Parallel()
	ok := Condition{Name: "ok", Check: func() error { return nil }}
	fetch := Condition{Name: "fetch", Check: func() error { return errors.New("failing for 31s") }}
	gate := Condition{Name: "cancellations", Check: func() error { return errors.New("stuck for 2m") }}
	tests := []struct {
		name    string
		running bool
		conds   []Condition
		want    string // "" means ready
	}{
		{name: "running, no conditions", running: true},
		{name: "running, conditions hold", running: true, conds: []Condition{ok, ok}},
		{name: "not running", conds: []Condition{ok}, want: ErrNotRunning.Error()},
		{name: "not running, a condition fails", conds: []Condition{fetch}, want: ErrNotRunning.Error()},
		{name: "one fails", running: true, conds: []Condition{ok, fetch}, want: "fetch: failing for 31s"},
		{name: "two fail", running: true, conds: []Condition{fetch, ok, gate}, want: "fetch: failing for 31s\ncancellations: stuck for 2m"},
	}
	for _, tt := range tests {
		got := ""
		if err := NotReady(tt.running, tt.conds...); err != nil {
			got = err.Error()
		}
		if got != tt.want {
			t.Errorf("%s: NotReady = %q, want %q", tt.name, got, tt.want)
		}
	}
}
