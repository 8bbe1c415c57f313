package cli

import (
	"testing"
	"time"
)

func TestParseDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    time.Duration
		wantErr bool
	}{
		{in: "7d", want: 7 * day},
		{in: "1d", want: 24 * time.Hour},
		{in: "1d12h", want: 36 * time.Hour},
		{in: "1.5d", want: 36 * time.Hour},
		{in: "30d", want: 720 * time.Hour},
		{in: "365d", want: 8760 * time.Hour},
		{in: "2d3h4m5s6ms", want: 51*time.Hour + 4*time.Minute + 5*time.Second + 6*time.Millisecond},
		{in: "+1d", want: day},
		{in: "-1d", want: -day}, // parsed; the command refuses it as it refused -24h
		{in: "-1d12h", want: -36 * time.Hour},
		{in: "0d", want: 0},
		{in: "90s", want: 90 * time.Second},
		{in: "1m30s", want: 90 * time.Second},
		{in: "250ms", want: 250 * time.Millisecond},
		{in: "0", want: 0},
		{in: "7x", wantErr: true},
		{in: "7", wantErr: true},
		{in: "d", wantErr: true},
		{in: "-d", wantErr: true},
		{in: "1dd", wantErr: true},
		{in: "1d 2h", wantErr: true},
		{in: ".d", wantErr: true},
		{in: "", wantErr: true},
		{in: "7days", wantErr: true},
		{in: "200000d", wantErr: true}, // beyond time.Duration
		{in: "106751d23h", want: 2562047 * time.Hour},
		{in: "106751d23h48m", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseDuration(tt.in)
		if tt.wantErr {
			if err == nil {
				t.Errorf("ParseDuration(%q) = %v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", tt.in, got, err, tt.want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"},
		{8760 * time.Hour, "365d"},
		{7 * day, "7d"},
		{36 * time.Hour, "1d12h"},
		{day + 5*time.Millisecond, "1d5ms"},
		{time.Hour, "1h"},
		{time.Hour + 5*time.Second, "1h5s"},
		{90 * time.Minute, "1h30m"},
		{10 * time.Minute, "10m"},
		{90 * time.Second, "1m30s"},
		{30 * time.Second, "30s"},
		{5 * time.Millisecond, "5ms"},
		{1500 * time.Microsecond, "1.5ms"},
		{-90 * time.Second, "-1m30s"},
	}
	for _, tt := range tests {
		got := FormatDuration(tt.in)
		if got != tt.want {
			t.Errorf("FormatDuration(%v) = %q, want %q", tt.in, got, tt.want)
		}
		if back, err := ParseDuration(got); err != nil || back != tt.in {
			t.Errorf("ParseDuration(FormatDuration(%v) = %q) = %v, %v", tt.in, got, back, err)
		}
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		n    int
		want string
	}{
		{0, "0"}, {1024, "1 KiB"}, {32 << 10, "32 KiB"}, {4 << 20, "4 MiB"}, {32 << 20, "32 MiB"},
		{72 << 20, "72 MiB"}, {2 << 30, "2 GiB"}, {900000, "900000"}, {1536, "1536"},
	} {
		if got := FormatBytes(tt.n); got != tt.want {
			t.Errorf("FormatBytes(%d) = %q, want %q", tt.n, got, tt.want)
		}
		if back, err := ParseBytes(tt.want); err != nil || back != tt.n {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", tt.want, back, err, tt.n)
		}
	}
	for _, in := range []string{"32MiB", "32mib", " 32 MiB "} {
		if n, err := ParseBytes(in); err != nil || n != 32<<20 {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, n, err, 32<<20)
		}
	}
	for _, in := range []string{"", "MiB", "1.5MiB", "32MB", "x", "99999999999999GiB"} {
		if n, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q) = %d, want an error", in, n)
		}
	}
}
