package cli

import (
	"errors"
	"slices"
	"testing"
)

// TestParseCommandLineErrors: a bad command line is a *CommandLineError in
// the --flag spelling, with a suggestion when a flag is close and a pointer
// to --help.
func TestParseCommandLineErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown flag, a typo", []string{"--max-dealy", "1s"}, "unknown flag --max-dealy; did you mean --max-delay?\nsee test --help"},
		{"unknown flag, one dash", []string{"-worker", "3"}, "unknown flag --worker; did you mean --workers?\nsee test --help"},
		{"unknown flag, a prefix", []string{"--sasl", "x"}, "unknown flag --sasl; did you mean --sasl-password?\nsee test --help"},
		{"unknown flag, attached value", []string{"--client=me"}, "unknown flag --client; did you mean --client-id?\nsee test --help"},
		{"unknown flag, nothing close", []string{"--bogus"}, "unknown flag --bogus\nsee test --help"},
		{"no value at the end", []string{"--max-delay"}, "--max-delay needs a value: --max-delay duration\nsee test --help"},
		{"no value before a flag", []string{"--client-id", "--tls"}, "--client-id needs a value: --client-id string\nsee test --help"},
		{"duration without a unit", []string{"--max-delay", "5"}, `--max-delay: "5" is not a duration; want a number with a unit, like 5s, 250ms or 1m30s` + "\nsee test --help"},
		{"bool with a bad value", []string{"--tls=maybe"}, `--tls: "maybe" is not a boolean; want true or false` + "\nsee test --help"},
		{"three dashes", []string{"---tls"}, `bad flag syntax "---tls": write --name value or --name=value` + "\nsee test --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, _ := newTestFlagSet(nil)
			err := f.Parse(tt.args)
			var ce *CommandLineError
			if !errors.As(err, &ce) {
				t.Fatalf("Parse(%q) = %T %v, want a *CommandLineError", tt.args, err, err)
			}
			if err.Error() != tt.want {
				t.Errorf("Parse(%q):\n%s\nwant:\n%s", tt.args, err, tt.want)
			}
		})
	}
}

// TestParseStops: parsing stops at the first argument that is not a flag
// and after "--"; "-" is an argument.
func TestParseStops(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, rest []string
	}{
		{[]string{"--tls", "a", "--workers", "2"}, []string{"a", "--workers", "2"}},
		{[]string{"--workers", "2", "--", "--tls"}, []string{"--tls"}},
		{[]string{"-", "x"}, []string{"-", "x"}},
		{[]string{"--client-id", "-"}, nil},
	}
	for _, tt := range tests {
		f, _ := newTestFlagSet(nil)
		if err := f.Parse(tt.args); err != nil {
			t.Fatalf("Parse(%q): %v", tt.args, err)
		}
		if !slices.Equal(f.Args(), tt.rest) {
			t.Errorf("Parse(%q): Args %q, want %q", tt.args, f.Args(), tt.rest)
		}
	}
}

// TestParseInterspersed: with Interspersed, every flag is read wherever
// it is, and the other arguments are kept in order; after "--" all are
// arguments.
func TestParseInterspersed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args, rest []string
		workers    int
	}{
		{[]string{"a", "--workers", "2"}, []string{"a"}, 2},
		{[]string{"--tls", "a", "--workers", "2", "b"}, []string{"a", "b"}, 2},
		{[]string{"--workers", "2", "--", "-a", "--workers", "3"}, []string{"-a", "--workers", "3"}, 2},
		{[]string{"-", "--workers=5"}, []string{"-"}, 5},
		{nil, nil, 4},
	}
	for _, tt := range tests {
		f, c := newTestFlagSet(nil)
		f.Interspersed()
		if err := f.Parse(tt.args); err != nil {
			t.Fatalf("Parse(%q): %v", tt.args, err)
		}
		if !slices.Equal(f.Args(), tt.rest) || c.workers != tt.workers {
			t.Errorf("Parse(%q): Args %q workers %d, want %q %d", tt.args, f.Args(), c.workers, tt.rest, tt.workers)
		}
	}
}
