package cli

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// newSectionsFlagSet registers flags as a service does: a shared group with
// a section of its own, then the command's, placed afterwards.
func newSectionsFlagSet(columns string) *FlagSet {
	var (
		brokers, tiers                   []string
		prefix, closers, clientID, level string
		timerBytes, maxKey, partitions   int
		maxDelay, commit                 time.Duration
	)
	header := "router moves records.\n\nIt consumes the delay topics and holds each partition's head until it is due, hopping records with a tier's wait ahead to a shorter tier, and forwarding due ones.\n\nUsage: router [flags]\n       router --version\n\n" + FlagsHeading + "\n"
	f := NewFlagSet("router", header)
	f.lookupEnv = func(k string) (string, bool) {
		if k == "COLUMNS" && columns != "" {
			return columns, true
		}
		return "", false
	}
	f.Sections("Tiers and topics", "Limits", "Timing", "Kafka connection")
	f.Section("Kafka connection")
	f.StringsVar(&brokers, "brokers", "HOURGLASS_BROKERS", []string{"127.0.0.1:9092"}, "Kafka seed brokers, comma-separated `host:port,...`")
	f.StringVar(&clientID, "client-id", "HOURGLASS_CLIENT_ID", "router", "Kafka client ID, seen in broker logs and quotas")
	f.Section("Observability")
	f.StringVar(&level, "log-level", "HOURGLASS_LOG_LEVEL", "info", "log `level`")
	f.Section("")
	f.StringsVar(&tiers, "tiers", "HOURGLASS_TIERS", []string{"1m", "2m", "5m", "10m", "30m", "1h", "3h", "12h", "24h", "72h", "168h", "720h", "2160h", "6480h"},
		"delay tiers: comma-separated `durations`, one delay topic each")
	f.StringVar(&prefix, "topic-prefix", "HOURGLASS_TOPIC_PREFIX", "hourglass.", "`prefix` of every topic name")
	f.IntVar(&partitions, "partitions", "HOURGLASS_PARTITIONS", 6, "partitions of topics created at start")
	f.DurationVar(&maxDelay, "max-delay", "HOURGLASS_MAX_DELAY", 8760*time.Hour, "records due further ahead go to the dead-letter topic")
	f.IntVar(&timerBytes, "timer-bytes", "HOURGLASS_TIMER_BYTES", 32<<20, "`bytes` of records the in-memory timer holds at most")
	f.IntVar(&maxKey, "max-key-bytes", "HOURGLASS_MAX_KEY_BYTES", 1024, "largest key (task id) in bytes; larger records go to the dead-letter topic (router and canceller alike)")
	f.DurationVar(&commit, "commit-interval", "HOURGLASS_COMMIT_INTERVAL", 50*time.Millisecond,
		"least time between two commits; offsets are committed as produces are acknowledged, so a crash repeats about this much")
	f.StringVar(&closers, "closers", "HOURGLASS_CLOSERS", "", "closers `file`; without it nothing is closed, only logged")
	f.Move("Limits", "max-key-bytes", "timer-bytes", "max-delay")
	f.Move("Tiers and topics", "partitions")
	f.Move("Timing", "commit-interval")
	f.Essential("brokers", "tiers", "topic-prefix", "closers")
	return f
}

func TestUsageSections(t *testing.T) {
	t.Parallel()
	f := newSectionsFlagSet("")
	var out bytes.Buffer
	f.SetOutput(&out)
	f.Usage()
	want := `Usage: router [flags]
       router --version

router moves records.

Essential:
  --brokers host:port,...  (env HOURGLASS_BROKERS, default 127.0.0.1:9092)
        Kafka seed brokers, comma-separated host:port,...
  --tiers durations  (env HOURGLASS_TIERS, default 1m,2m,5m,10m,30m,1h,3h,12h,
          24h,72h,168h,720h,2160h,6480h)
        delay tiers: comma-separated durations, one delay topic each
  --topic-prefix prefix  (env HOURGLASS_TOPIC_PREFIX, default hourglass.)
        prefix of every topic name
  --closers file  (env HOURGLASS_CLOSERS)
        closers file; without it nothing is closed, only logged

Tiers and topics:
  --partitions int  (env HOURGLASS_PARTITIONS, default 6)
        partitions of topics created at start

Limits:
  --max-delay duration  (env HOURGLASS_MAX_DELAY, default 365d)
        records due further ahead go to the dead-letter topic
  --timer-bytes bytes  (env HOURGLASS_TIMER_BYTES, default 32 MiB)
        bytes of records the in-memory timer holds at most
  --max-key-bytes int  (env HOURGLASS_MAX_KEY_BYTES, default 1 KiB)
        largest key (task id) in bytes; larger records go to the dead-letter
        topic (router and canceller alike)

Timing:
  --commit-interval duration  (env HOURGLASS_COMMIT_INTERVAL, default 50ms)
        least time between two commits; offsets are committed as produces are
        acknowledged, so a crash repeats about this much

Kafka connection:
  --client-id string  (env HOURGLASS_CLIENT_ID, default router)
        Kafka client ID, seen in broker logs and quotas

Observability:
  --log-level level  (env HOURGLASS_LOG_LEVEL, default info)
        log level

A flag wins over its environment variable; "no env" marks a flag without one.
` + durationsNote + `

It consumes the delay topics and holds each partition's head until it is due,
hopping records with a tier's wait ahead to a shorter tier, and forwarding due
ones.
`
	if out.String() != want {
		t.Errorf("usage:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestUsageWidth: every line of the usage fits COLUMNS, but for the flag
// lines whose name and variable are longer.
func TestUsageWidth(t *testing.T) {
	t.Parallel()
	for _, columns := range []string{"", "60", "100", "nonsense", "10"} {
		f := newSectionsFlagSet(columns)
		var out bytes.Buffer
		f.SetOutput(&out)
		f.Usage()
		width := f.width()
		switch columns {
		case "", "nonsense":
			if width != DefaultWidth {
				t.Errorf("COLUMNS=%q: width %d, want %d", columns, width, DefaultWidth)
			}
		case "10":
			if width != minWidth {
				t.Errorf("COLUMNS=%q: width %d, want %d", columns, width, minWidth)
			}
		}
		for line := range strings.Lines(out.String()) {
			line = strings.TrimSuffix(line, "\n")
			if len(line) <= width {
				continue
			}
			// A flag line may not break before its variable.
			_, paren, _ := strings.Cut(line, "  (")
			if strings.HasPrefix(line, "  --") && strings.Count(paren, " ") <= 1 {
				continue
			}
			t.Errorf("COLUMNS=%q: line of %d wider than %d: %q", columns, len(line), width, line)
		}
		if !strings.Contains(out.String(), "\nEssential:\n  --brokers ") {
			t.Errorf("COLUMNS=%q: usage does not begin its flags with Essential:\n%s", columns, out.String())
		}
	}
}

// TestMoveUnknownPanics: placing a flag never registered is a mistake of
// the command, found by its first --help test.
func TestMoveUnknownPanics(t *testing.T) {
	t.Parallel()
	for name, place := range map[string]func(f *FlagSet){
		"Move":      func(f *FlagSet) { f.Move("Limits", "tier") },
		"Essential": func(f *FlagSet) { f.Essential("tier") },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s of an unknown flag did not panic", name)
				}
			}()
			place(NewFlagSet("test", ""))
		}()
	}
}
