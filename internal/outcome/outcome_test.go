package outcome

import "testing"

func TestFinal(t *testing.T) {
	for _, tc := range []struct {
		o    Outcome
		want bool
	}{
		{Closed, true},
		{AlreadyClosed, true},
		{Skipped, true},
		{NotFound, true},
		{Retry, false},
		{Failed, false},
		{"", false},
		{"unknown", false},
	} {
		if got := tc.o.Final(); got != tc.want {
			t.Errorf("%q.Final() = %v, want %v", tc.o, got, tc.want)
		}
	}
}
