package statuscmd_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/taskstatus"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestStatusOtherPartition: a task a producer put into another partition
// than the one murmur2 gives its key (kcat's default partitioner does) is
// not found, and status says which partition it read and how to read them
// all; --all-partitions finds it.
func TestStatusOtherPartition(t *testing.T) {
	t.Parallel()
	p := newPipeline(t, nil)
	now := time.Now().Truncate(time.Millisecond)
	r2, err := tiers.BuildRecord(p.prefix, tiers.DefaultTable(), now, tiers.Task{ID: "order-8", Due: now.Add(37 * time.Minute)})
	if err != nil {
		t.Fatal(err)
	}
	keyPart := kafka.KeyPartition(r2.Topic, r2.Key, partitions)
	r2.Partition = (keyPart + 1) % partitions
	p.produceTo(r2)

	stdout, stderr, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "order-8")...)
	if err != nil {
		t.Fatalf("status: %v\n%s", err, stderr)
	}
	for _, want := range []string{
		"no records of order-8 since ",
		fmt.Sprintf(" in partition %d of each topic (the partition murmur2 gives its key)", keyPart),
		"kcat without -X partitioner=murmur2_random", "--all-partitions reads every partition",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout does not say %q:\n%s", want, stdout)
		}
	}

	st, _ := p.status("order-8", "--all-partitions")
	d := only(t, st)
	if d.State != taskstatus.StateWaiting || d.Topic != r2.Topic || !st.Complete || !st.AllPartitions {
		t.Errorf("--all-partitions: deadline %+v, complete %v, all_partitions %v", d, st.Complete, st.AllPartitions)
	}
	if len(st.Events) != 1 || st.Events[0].Partition != r2.Partition {
		t.Errorf("events %+v, want one in partition %d", st.Events, r2.Partition)
	}
	perTopic := map[string]int{}
	for _, rd := range st.Read {
		if !rd.Missing {
			perTopic[rd.Topic]++
		}
	}
	for topic, n := range perTopic {
		if n != partitions {
			t.Errorf("--all-partitions read %d partitions of %s, want %d", n, topic, partitions)
		}
	}
	stdout, _, err = cmdtest.Run(t, statuscmd.Run, append(p.flags(), "order-9", "--all-partitions")...)
	if err != nil || !strings.Contains(stdout, "no records of it since") || !strings.Contains(stdout, "in any partition") {
		t.Errorf("--all-partitions, unknown task: %v\n%s", err, stdout)
	}
}

// produceTo produces r into the partition it names, not the one its key
// gives.
func (p *pipeline) produceTo(r *kgo.Record) {
	p.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(p.c.ListenAddrs()...), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		p.t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		p.t.Fatal(err)
	}
}
