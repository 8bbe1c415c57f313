package statuscmd_test

import (
	"crypto/rand"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/internal/testutil/hung"
	"github.com/hourglass/hourglass/internal/testutil/kfaketest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestStatusNamedTarget: a target named by the task's delay record is
// read too.
func TestStatusNamedTarget(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	other := p.prefix + "payments"
	if err := cluster.CreateTopic(other, 2, nil); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	r, err := tiers.BuildRecord(p.prefix, tiers.DefaultTable(), now.Add(-2*time.Minute), tiers.Task{ID: "n", Due: now.Add(-time.Minute), Target: other})
	if err != nil {
		t.Fatal(err)
	}
	p.produce(r)
	p.onward(r, other, now.Add(-time.Minute), hdr(tiers.HeaderForwarded, formatMs(now.Add(-time.Minute))))
	st, out := p.status("n")
	if d := only(t, st); d.State != taskstatus.StateForwarded || d.Target != other {
		t.Errorf("deadline %+v, want forwarded to %s:\n%s", d, other, out)
	}
}

// TestStatusFarBehind: a partition far behind is read with progress on
// stderr, and the command stops at --timeout with what it read, saying
// what it did not.
func TestStatusFarBehind(t *testing.T) {
	defer statuscmd.SetProgress(100, 100*time.Millisecond)()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	p := newPipeline(t, c)
	now := time.Now()
	p.schedule("far", now.Add(-time.Hour), now.Add(time.Hour)) // the 30m tier
	topic := p.delay(30 * time.Minute)
	part := kafka.KeyPartition(topic, []byte("far"), partitions)
	var noise []*kgo.Record
	for i := 0; len(noise) < 2000; i++ {
		if k := []byte(fmt.Sprint("other-", i)); kafka.KeyPartition(topic, k, partitions) == part {
			value := make([]byte, 4000) // random, so that batches do not compress
			rand.Read(value)
			noise = append(noise, &kgo.Record{Topic: topic, Key: k, Value: value, Timestamp: now.Add(-time.Hour)})
		}
	}
	p.produce(noise...)
	// Every fetch takes 300 ms: 8 MB at 1 MiB a fetch take longer than
	// the timeout.
	stop := make(chan struct{})
	defer close(stop)
	c.ControlKey(int16(kmsg.Fetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		c.SleepControl(func() {
			select {
			case <-time.After(300 * time.Millisecond):
			case <-stop:
			}
		})
		return nil, nil, false
	})
	start := time.Now()
	stdout, stderr, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "far", "--timeout", "1500ms")...)
	elapsed := time.Since(start)
	if err == nil || !strings.Contains(err.Error(), "is incomplete") || !strings.Contains(err.Error(), fmt.Sprintf("%s[%d] read ", topic, part)) {
		t.Errorf("error %v, want the read of %s[%d] incomplete", err, topic, part)
	}
	t.Logf("status took %v; stderr:\n%s", elapsed, stderr)
	if elapsed > 2500*time.Millisecond {
		t.Errorf("took %v with --timeout 1500ms", elapsed)
	}
	if !strings.Contains(stderr, "status: reading 2001 records in ") || !strings.Contains(stderr, fmt.Sprintf("status: %s[%d]: ", topic, part)) {
		t.Errorf("stderr shows no progress:\n%s", stderr)
	}
	if !strings.Contains(stdout, "(incomplete)") {
		t.Errorf("stdout does not say the read is incomplete:\n%s", stdout)
	}
}

// TestStatusMissingTopics: topics that do not exist are listed as such
// and read as empty; the status is complete.
func TestStatusMissingTopics(t *testing.T) {
	t.Parallel()
	prefix := kfaketest.TopicName(t, "p") + "."
	delay := tiers.Topic(prefix, time.Minute)
	if err := cluster.CreateTopic(delay, 2, nil); err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, c: cluster, prefix: prefix}
	cl, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	p.cl = cl
	p.schedule("m", time.Now(), time.Now().Add(time.Minute))
	st, out := p.status("m")
	missing := 0
	for _, r := range st.Read {
		if r.Missing {
			missing++
		}
	}
	// Every delay topic of the default ladder but 1m, and the cancel,
	// outcomes, dead-letter and cancellations topics.
	want := tiers.DefaultTable().Len() - 1 + 4
	if d := only(t, st); d.State != taskstatus.StateWaiting || missing != want || !st.Complete {
		t.Errorf("state %s, %d topics missing, complete %v, want waiting, %d, true:\n%s", d.State, missing, st.Complete, want, out)
	}
	stdout, _, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "m")...)
	if err != nil || !strings.Contains(stdout, prefix+"cancellations  does not exist") {
		t.Errorf("text: %v\n%s", err, stdout)
	}
}

// TestStatusTimeoutBoundsConnecting: --timeout bounds the whole command,
// connecting included: brokers that accept connections and never answer
// fail it at about --timeout, not after the Kafka client's own 10 s dial
// and read timeouts, with an error naming the flag.
func TestStatusTimeoutBoundsConnecting(t *testing.T) {
	t.Parallel()
	addr := hung.Listen(t)
	start := time.Now()
	_, _, err := cmdtest.Run(t, statuscmd.Run, "--brokers", addr, "--timeout", "1s", "order-1")
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("took %v with --timeout 1s", took.Round(time.Millisecond))
	}
	if err == nil || !strings.Contains(err.Error(), "--timeout") {
		t.Errorf("error %v, want one naming --timeout", err)
	}
}
