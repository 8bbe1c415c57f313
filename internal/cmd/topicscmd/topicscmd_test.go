package topicscmd_test

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/hourglass/hourglass/internal/cmd/topicscmd"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// cluster is the kfake broker the package's tests share.
var cluster *kfake.Cluster

func TestMain(m *testing.M) {
	kfaketest.Main(m, func(c *kfake.Cluster) { cluster = c })
}

// TestCheckLongerLadder: a pipeline made with tiers 1m,5m,30m, checked
// against the default ladder, has each topic of the new tiers missing:
// --check names each, and the command that creates them, which then
// leaves the check clean.
func TestCheckLongerLadder(t *testing.T) {
	t.Parallel()
	prefix := kfaketest.TopicName(t, "") + "."
	base := []string{"--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic-prefix", prefix, "--partitions", "2"}
	if _, _, err := cmdtest.Run(t, topicscmd.Run, append(base, "--tiers", "1m,5m,30m")...); err != nil {
		t.Fatalf("hourglass topics --tiers 1m,5m,30m: %v", err)
	}
	stdout, _, err := cmdtest.Run(t, topicscmd.Run, append(base, "--check")...)
	if err == nil {
		t.Fatalf("--check with the default ladder on a 1m,5m,30m pipeline passed:\n%s", stdout)
	}
	list, _, _ := strings.Cut(strings.TrimPrefix(err.Error(), "missing topics "), ": ")
	missing := strings.Split(list, ", ")
	for _, d := range tiers.DefaultTable().Durations() {
		name := tiers.Topic(prefix, d)
		old := d == time.Minute || d == 5*time.Minute || d == 30*time.Minute
		if got := slices.Contains(missing, name); got == old {
			t.Errorf("error names %s as missing: %v, want %v:\n%v", name, got, !old, err)
		}
	}
	want := "create them with `hourglass topics --tiers " + tiers.DefaultTiers + " --partitions 2 --topic-prefix " + prefix + "`"
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error does not say %s:\n%v", want, err)
	}
	if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(tiers.Topic(prefix, 6480*time.Hour)) + ` +missing `).MatchString(stdout) {
		t.Errorf("the table does not list the missing topics:\n%s", stdout)
	}
	if _, _, err := cmdtest.Run(t, topicscmd.Run, base...); err != nil {
		t.Fatalf("hourglass topics with the default ladder: %v", err)
	}
	if stdout, _, err := cmdtest.Run(t, topicscmd.Run, append(base, "--check")...); err != nil {
		t.Errorf("--check after creating the topics: %v\n%s", err, stdout)
	}
}

// TestCheckShortRetention: a delay topic that keeps records for less than
// twice its tier fails the check, naming the retention it needs; a longer
// retention passes.
func TestCheckShortRetention(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	prefix := kfaketest.TopicName(t, "") + "."
	adm := kfaketest.Admin(t, cluster)
	for topic, ms := range map[string]string{
		tiers.Topic(prefix, time.Minute):    "8640000000", // 100 days: more than 7, fine
		tiers.Topic(prefix, 720*time.Hour):  "604800000",  // 7 days: less than 60
		tiers.Topic(prefix, 2160*time.Hour): "-1",         // forever: fine
	} {
		if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": kadm.StringPtr(ms)}, topic); err != nil {
			t.Fatal(err)
		}
	}
	stdout, _, err := cmdtest.Run(t, topicscmd.Run, "--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic-prefix", prefix,
		"--partitions", "2", "--tiers", "1m,720h,2160h")
	if err == nil || !strings.Contains(err.Error(), "differ from the recommended settings") {
		t.Errorf("error %v, want the topics reported as different", err)
	}
	for _, line := range strings.Split(stdout, "\n") {
		short := strings.HasPrefix(line, tiers.Topic(prefix, 720*time.Hour)+" ")
		if got := strings.Contains(line, "retention.ms"); got != short {
			t.Errorf("line %q: reports retention.ms %v, want %v", line, got, short)
		}
		if short && !strings.Contains(line, `retention.ms: have "604800000", want at least "5184000000"`) {
			t.Errorf("line %q does not say the retention it needs", line)
		}
	}
}

// TestCheckPartitionsNotAsked: topics created with 3 partitions (as the
// demo creates them) pass a --check that was not given --partitions, which
// says it did not check the counts; with --partitions 6 the check reports
// each and fails, and with --partitions 3 it passes.
func TestCheckPartitionsNotAsked(t *testing.T) {
	t.Parallel()
	prefix := kfaketest.TopicName(t, "") + "."
	base := []string{"--brokers", strings.Join(cluster.ListenAddrs(), ","), "--topic-prefix", prefix, "--tiers", "1s,5s"}
	if _, _, err := cmdtest.Run(t, topicscmd.Run, append(base, "--partitions", "3")...); err != nil {
		t.Fatalf("hourglass topics --partitions 3: %v", err)
	}
	stdout, _, err := cmdtest.Run(t, topicscmd.Run, append(base, "--check")...)
	if err != nil {
		t.Fatalf("--check without --partitions on topics of 3 partitions: %v\n%s", err, stdout)
	}
	if strings.Contains(stdout, "partitions: have") || !strings.Contains(stdout, "partition counts not checked: topics created here get 6; give --partitions to check them") {
		t.Errorf("--check without --partitions:\n%s", stdout)
	}
	stdout, _, err = cmdtest.Run(t, topicscmd.Run, append(base, "--check", "--partitions", "6")...)
	if err == nil || strings.Count(stdout, "partitions: have 3, want 6") != 6 {
		t.Errorf("--check --partitions 6 on topics of 3 partitions: %v\n%s", err, stdout)
	}
	stdout, _, err = cmdtest.Run(t, topicscmd.Run, append(base, "--check", "--partitions", "3")...)
	if err != nil || strings.Contains(stdout, "not checked") {
		t.Errorf("--check --partitions 3: %v\n%s", err, stdout)
	}
}
