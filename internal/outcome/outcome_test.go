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

func TestEnds(t *testing.T) {
	for _, o := range All {
		if want := o != Retry; o.Ends() != want {
			t.Errorf("%q.Ends() = %v, want %v", o, o.Ends(), want)
		}
	}
	for _, o := range []Outcome{"", "unknown"} {
		if o.Ends() {
			t.Errorf("%q.Ends() = true", o)
		}
	}
}
