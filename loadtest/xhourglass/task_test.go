package xhourglass

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/sobek"
)

func TestParseTask(t *testing.T) {
	rt := sobek.New()
	ab := rt.NewArrayBuffer([]byte{1, 2, 3})
	tests := []struct {
		name    string
		in      any
		want    TaskSpec
		wantErr []string
	}{
		{"delay", map[string]any{"delayMs": int64(1500)}, TaskSpec{Delay: 1500 * time.Millisecond}, nil},
		{"fractional delay", map[string]any{"delayMs": 2.5}, TaskSpec{Delay: 2500 * time.Microsecond}, nil},
		{"negative delay: past due", map[string]any{"delayMs": int64(-2000)}, TaskSpec{Delay: -2 * time.Second}, nil},
		{"due", map[string]any{"dueMs": int64(1_800_000_000_000)}, TaskSpec{Due: time.UnixMilli(1_800_000_000_000)}, nil},
		{"everything", map[string]any{"id": "o-1", "delayMs": int64(5), "kind": "reminder", "payload": "{}", "paid": true, "shape": "exact_tier"},
			TaskSpec{ID: "o-1", Delay: 5 * time.Millisecond, Kind: "reminder", Payload: []byte("{}"), Paid: true, Shape: "exact_tier"}, nil},
		{"array buffer payload", map[string]any{"delayMs": int64(0), "payload": ab}, TaskSpec{Payload: []byte{1, 2, 3}}, nil},
		{"nulls are absent", map[string]any{"delayMs": int64(1), "id": nil, "payload": nil, "paid": nil}, TaskSpec{Delay: time.Millisecond}, nil},
		{"not an object", "soon", TaskSpec{}, []string{"want an object"}},
		{"no time", map[string]any{"id": "x"}, TaskSpec{}, []string{"delayMs: required (or dueMs)"}},
		{"both times", map[string]any{"delayMs": int64(1), "dueMs": int64(1)}, TaskSpec{}, []string{"not both"}},
		{"delay out of range", map[string]any{"delayMs": 1e18}, TaskSpec{}, []string{"out of range"}},
		{"due not unix ms", map[string]any{"dueMs": int64(-5)}, TaskSpec{}, []string{"dueMs: -5: want unix milliseconds"}},
		{"NaN delay", map[string]any{"delayMs": math.NaN()}, TaskSpec{}, []string{"delayMs: NaN is not a number"}},
		{"wrong types", map[string]any{"delayMs": "5", "id": int64(3), "paid": "yes", "payload": int64(1)}, TaskSpec{},
			[]string{"id: 3 is not a string", `delayMs: 5 is not a number`, "payload: want a string or an ArrayBuffer", "paid: yes is not a boolean"}},
		{"unknown key", map[string]any{"delayMs": int64(1), "delay": int64(1)}, TaskSpec{}, []string{"delay: unknown key"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseTask(tt.in)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("ParseTask(%v) = %+v, want an error", tt.in, got)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.ID != tt.want.ID || got.Delay != tt.want.Delay || !got.Due.Equal(tt.want.Due) || got.Kind != tt.want.Kind ||
				!bytes.Equal(got.Payload, tt.want.Payload) || got.Paid != tt.want.Paid || got.Shape != tt.want.Shape {
				t.Errorf("ParseTask = %+v, want %+v", got, tt.want)
			}
		})
	}
}
