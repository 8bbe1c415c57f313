package suggest

import "testing"

func TestClosest(t *testing.T) {
	t.Parallel()
	flags := []string{"brokers", "tiers", "max-delay", "max-in-flight", "session-timeout", "check-config", "topic-prefix"}
	tests := []struct{ name, want string }{
		{"tier", "tiers"},
		{"Tiers", "tiers"},
		{"broker", "brokers"},
		{"max_delay", "max-delay"},
		{"sesion-timeout", "session-timeout"},
		{"check", "check-config"},
		{"max", ""},   // two flags begin with it
		{"ti", ""},    // too short for a prefix
		{"bogus", ""}, // nothing close
		{"x", ""},
	}
	for _, tt := range tests {
		if got := Closest(tt.name, flags); got != tt.want {
			t.Errorf("Closest(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}
