package cli

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// config is a stand-in for a command's configuration.
type config struct {
	brokers  []string
	clientID string
	workers  int
	tls      bool
	maxDelay time.Duration
	password string
}

// newTestFlagSet registers one flag of each kind and reads env from the given
// map instead of the process environment, so tests can run in parallel.
func newTestFlagSet(env map[string]string) (*FlagSet, *config) {
	var c config
	f := NewFlagSet("test", "usage: test [flags]")
	f.lookupEnv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	f.SetOutput(new(bytes.Buffer))
	f.StringsVar(&c.brokers, "brokers", "HOURGLASS_BROKERS", []string{"127.0.0.1:9092"}, "seed `host:port,...` list")
	f.StringVar(&c.clientID, "client-id", "HOURGLASS_CLIENT_ID", "hourglass", "client id")
	f.IntVar(&c.workers, "workers", "HOURGLASS_WORKERS", 4, "number of workers")
	f.BoolVar(&c.tls, "tls", "HOURGLASS_TLS", false, "enable TLS")
	f.DurationVar(&c.maxDelay, "max-delay", "HOURGLASS_MAX_DELAY", time.Minute, "largest delay")
	f.StringVar(&c.password, "sasl-password", "HOURGLASS_SASL_PASSWORD", "", "SASL password")
	return f, &c
}

func TestParse(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    config // brokers compared separately
		brokers []string
		sources map[string]string
		wantErr string // substring; every line must be present
	}{
		{
			name:    "defaults",
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Minute},
			brokers: []string{"127.0.0.1:9092"},
			sources: map[string]string{"brokers": "default", "client-id": "default", "max-delay": "default"},
		},
		{
			name: "env beats default",
			env: map[string]string{
				"HOURGLASS_BROKERS": "a:1, b:2", "HOURGLASS_CLIENT_ID": "router", "HOURGLASS_WORKERS": "8",
				"HOURGLASS_TLS": "true", "HOURGLASS_MAX_DELAY": "90s",
			},
			want:    config{clientID: "router", workers: 8, tls: true, maxDelay: 90 * time.Second},
			brokers: []string{"a:1", "b:2"},
			sources: map[string]string{"brokers": "env", "client-id": "env", "workers": "env", "tls": "env", "max-delay": "env", "sasl-password": "default"},
		},
		{
			name: "flag beats env",
			args: []string{"--brokers", "c:3", "-client-id=cli", "--workers=2", "--tls=false", "--max-delay", "5s"},
			env: map[string]string{
				"HOURGLASS_BROKERS": "a:1", "HOURGLASS_CLIENT_ID": "router", "HOURGLASS_WORKERS": "8",
				"HOURGLASS_TLS": "true", "HOURGLASS_MAX_DELAY": "90s",
			},
			want:    config{clientID: "cli", workers: 2, tls: false, maxDelay: 5 * time.Second},
			brokers: []string{"c:3"},
			sources: map[string]string{"brokers": "flag", "client-id": "flag", "workers": "flag", "tls": "flag", "max-delay": "flag"},
		},
		{
			name:    "flag beats a bad env value, which is then not parsed",
			args:    []string{"--max-delay=1s"},
			env:     map[string]string{"HOURGLASS_MAX_DELAY": "abc"},
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Second},
			brokers: []string{"127.0.0.1:9092"},
			sources: map[string]string{"max-delay": "flag"},
		},
		{
			name:    "empty env is unset",
			env:     map[string]string{"HOURGLASS_CLIENT_ID": "", "HOURGLASS_BROKERS": ""},
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Minute},
			brokers: []string{"127.0.0.1:9092"},
			sources: map[string]string{"client-id": "default", "brokers": "default"},
		},
		{
			name:    "bare bool flag",
			args:    []string{"-tls"},
			want:    config{clientID: "hourglass", workers: 4, tls: true, maxDelay: time.Minute},
			brokers: []string{"127.0.0.1:9092"},
			sources: map[string]string{"tls": "flag"},
		},
		{
			name:    "list trimmed, empties dropped",
			args:    []string{"--brokers", " a:1 ,, b:2 ,"},
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Minute},
			brokers: []string{"a:1", "b:2"},
		},
		{
			name:    "repeated list flag appends after replacing the default",
			args:    []string{"--brokers", "a:1", "--brokers=b:2,c:3"},
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Minute},
			brokers: []string{"a:1", "b:2", "c:3"},
		},
		{
			name:    "list flag of only commas is empty",
			args:    []string{"--brokers", " , "},
			want:    config{clientID: "hourglass", workers: 4, maxDelay: time.Minute},
			brokers: []string{},
		},
		{
			name:    "bad env duration names env and flag",
			env:     map[string]string{"HOURGLASS_MAX_DELAY": "abc"},
			wantErr: `HOURGLASS_MAX_DELAY (--max-delay): "abc" is not a duration`,
		},
		{
			name:    "every bad env value is reported",
			env:     map[string]string{"HOURGLASS_WORKERS": "many", "HOURGLASS_TLS": "yes please"},
			wantErr: "HOURGLASS_WORKERS (--workers): \"many\" is not an integer\nHOURGLASS_TLS (--tls): \"yes please\" is not a boolean",
		},
		{
			name:    "bad flag duration names flag",
			args:    []string{"--max-delay", "abc"},
			wantErr: `--max-delay: "abc" is not a duration`,
		},
		{
			name:    "bad flag int names flag",
			args:    []string{"-workers=x"},
			wantErr: `--workers: "x" is not an integer`,
		},
		{
			name:    "bad flag bool names flag",
			args:    []string{"--tls=maybe"},
			wantErr: `--tls: "maybe" is not a boolean`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, c := newTestFlagSet(tt.env)
			err := f.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse: no error, want %q", tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error:\n%v\nwant it to contain:\n%v", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got := *c
			got.brokers = nil
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("config = %+v, want %+v", got, tt.want)
			}
			if !slices.Equal(c.brokers, tt.brokers) || (c.brokers == nil) != (tt.brokers == nil) {
				t.Errorf("brokers = %q, want %q", c.brokers, tt.brokers)
			}
			for name, want := range tt.sources {
				if got := f.Source(name); got != want {
					t.Errorf("Source(%q) = %q, want %q", name, got, want)
				}
			}
		})
	}
}

func TestParseArgs(t *testing.T) {
	t.Parallel()
	f, _ := newTestFlagSet(nil)
	if err := f.Parse([]string{"--workers", "3", "check", "--tls"}); err != nil {
		t.Fatal(err)
	}
	if got, want := f.Args(), []string{"check", "--tls"}; !slices.Equal(got, want) {
		t.Errorf("Args = %q, want %q", got, want)
	}
}

// TestParseProcessEnv proves the default lookup reads the real environment.
func TestParseProcessEnv(t *testing.T) {
	t.Setenv("HOURGLASS_TEST_CLI_DELAY", "250ms")
	var d time.Duration
	f := NewFlagSet("test", "")
	f.DurationVar(&d, "delay", "HOURGLASS_TEST_CLI_DELAY", time.Second, "delay")
	if err := f.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if d != 250*time.Millisecond || f.Source("delay") != SourceEnv {
		t.Errorf("delay = %v from %s, want 250ms from env", d, f.Source("delay"))
	}
}

func TestHelp(t *testing.T) {
	t.Parallel()
	for _, arg := range []string{"-h", "--help", "-help"} {
		f, _ := newTestFlagSet(nil)
		var out bytes.Buffer
		f.SetOutput(&out)
		if err := f.Parse([]string{arg}); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("Parse(%s) = %v, want flag.ErrHelp", arg, err)
		}
		want := `usage: test [flags]

Flags:
  --brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
        seed host:port,... list
  --client-id string  (env HOURGLASS_CLIENT_ID, default hourglass)
        client id
  --workers int  (env HOURGLASS_WORKERS, default 4)
        number of workers
  --tls  (env HOURGLASS_TLS)
        enable TLS
  --max-delay duration  (env HOURGLASS_MAX_DELAY, default 1m)
        largest delay
  --sasl-password string  (env HOURGLASS_SASL_PASSWORD)
        SASL password

` + FlagsNote + "\n" + durationsNote + "\n"
		if out.String() != want {
			t.Errorf("Parse(%s) usage:\n%s\nwant:\n%s", arg, out.String(), want)
		}
	}
}

// TestUsageNoEnv: a flag without an environment variable says so.
func TestUsageNoEnv(t *testing.T) {
	t.Parallel()
	var (
		check bool
		limit int
	)
	f := NewFlagSet("test", "usage: test [flags]\n\n"+FlagsHeading)
	var out bytes.Buffer
	f.SetOutput(&out)
	f.BoolVar(&check, "check", "", false, "only check")
	f.IntVar(&limit, "limit", "", 20, "at most `n`")
	f.Usage()
	want := `usage: test [flags]

Flags:
  --check  (no env)
        only check
  --limit n  (no env, default 20)
        at most n

A flag wins over its environment variable; "no env" marks a flag without one.
`
	if out.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", out.String(), want)
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	f, _ := newTestFlagSet(nil)
	var x string
	f.StringVar(&x, "no-env", "", "", "")
	tests := []struct{ flag, want string }{
		{"max-delay", "--max-delay (HOURGLASS_MAX_DELAY)"},
		{"no-env", "--no-env"},
		{"unregistered", "--unregistered"},
	}
	for _, tt := range tests {
		if got := f.Name(tt.flag); got != tt.want {
			t.Errorf("Name(%q) = %q, want %q", tt.flag, got, tt.want)
		}
	}
	if got := f.Source("unregistered"); got != "" {
		t.Errorf(`Source("unregistered") = %q, want ""`, got)
	}
}

func TestPrintConfig(t *testing.T) {
	t.Parallel()
	f, _ := newTestFlagSet(map[string]string{"HOURGLASS_SASL_PASSWORD": "hunter2", "HOURGLASS_WORKERS": "6"})
	var secret string
	f.StringVar(&secret, "api-secret", "", "", "")
	if err := f.Parse([]string{"--client-id", "me"}); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	f.PrintConfig(&out)
	want := `--brokers=127.0.0.1:9092 (default)
--client-id=me (flag)
--workers=6 (env)
--tls=false (default)
--max-delay=1m0s (default)
--sasl-password=*** (env)
--api-secret="" (default)
`
	if out.String() != want {
		t.Errorf("PrintConfig:\n%s\nwant:\n%s", out.String(), want)
	}
	if strings.Contains(out.String(), "hunter2") {
		t.Error("PrintConfig leaked the password")
	}
}

func TestRedefinePanics(t *testing.T) {
	t.Parallel()
	f := NewFlagSet("test", "")
	var a, b string
	f.StringVar(&a, "x", "", "", "")
	defer func() {
		if recover() == nil {
			t.Error("second StringVar(x) did not panic")
		}
	}()
	f.StringVar(&b, "x", "", "", "")
}

func TestSplitList(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{}},
		{"a", []string{"a"}},
		{" a , b ,", []string{"a", "b"}},
		{",,,", []string{}},
	}
	for _, tt := range tests {
		if got := SplitList(tt.in); !slices.Equal(got, tt.want) || got == nil {
			t.Errorf("SplitList(%q) = %#v, want %#v", tt.in, got, tt.want)
		}
	}
}

func TestNewFlagSetOutput(t *testing.T) {
	t.Parallel()
	f := NewFlagSet("test", "")
	if f.Output() != os.Stderr {
		t.Errorf("default output is not os.Stderr")
	}
}

func TestFloat64Var(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		env     map[string]string
		want    float64
		wantErr string
	}{
		{want: 2.5},
		{args: []string{"--rate=120"}, want: 120},
		{env: map[string]string{"HOURGLASS_RATE": " 0.5 "}, want: 0.5},
		{args: []string{"--rate", "fast"}, wantErr: `"fast" is not a number`},
		{env: map[string]string{"HOURGLASS_RATE": "x"}, wantErr: `HOURGLASS_RATE (--rate): "x" is not a number`},
	} {
		var v float64
		f := NewFlagSet("test", "usage")
		f.lookupEnv = func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok }
		f.SetOutput(new(bytes.Buffer))
		f.Float64Var(&v, "rate", "HOURGLASS_RATE", 2.5, "closes per second")
		err := f.Parse(tc.args)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%v %v: error %v, want %q", tc.args, tc.env, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || v != tc.want):
			t.Errorf("%v %v: %v, %v; want %v", tc.args, tc.env, v, err, tc.want)
		}
	}
}
