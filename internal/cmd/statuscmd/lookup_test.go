package statuscmd_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/hourglass/hourglass/internal/cmd/statuscmd"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/testutil/cmdtest"
)

// failLookupsByTime makes c answer every ListOffsets by timestamp with err:
// for each partition when the error is a partition's, or for the whole
// request for an authorization error (which kadm reports so). Listings of
// end offsets are answered as usual.
func failLookupsByTime(c *kfake.Cluster, err *kerr.Error) {
	c.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kr.(*kmsg.ListOffsetsRequest)
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				if rp.Timestamp < 0 {
					return nil, nil, false
				}
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.Offset, sp.Timestamp, sp.ErrorCode = rp.Partition, -1, -1, err.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
}

// TestStatusLookupFails: the brokers answer the lookup of the first offset
// since --since by timestamp with an error. The task has a deadline, so
// status must not say it has no records: it names each partition it could
// not look up and the broker's error, on stdout and in the error it exits
// non-zero with, and does not blame --timeout.
func TestStatusLookupFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  *kerr.Error
		want func(p *pipeline, delay string) []string // in the error
	}{
		{
			name: "partition error", err: kerr.UnknownServerError,
			want: func(p *pipeline, delay string) []string {
				return []string{"status of x is incomplete: ", fmt.Sprintf("could not look up %s by timestamp (its first offset since ", delay), "UNKNOWN_SERVER_ERROR"}
			},
		},
		{
			name: "request error", err: kerr.TopicAuthorizationFailed,
			want: func(p *pipeline, _ string) []string {
				return []string{"could not look up the first offsets since ", "by timestamp in " + p.delay(time.Minute) + ", ", "TOPIC_AUTHORIZATION_FAILED"}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.NumBrokers(1))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			p := newPipeline(t, c)
			now := time.Now()
			p.schedule("x", now.Add(-time.Minute), now.Add(time.Hour)) // in the 30m tier
			delayTopic := p.delay(30 * time.Minute)
			delay := fmt.Sprintf("%s[%d]", delayTopic, kafka.KeyPartition(delayTopic, []byte("x"), partitions))
			failLookupsByTime(c, tc.err)

			stdout, _, err := cmdtest.Run(t, statuscmd.Run, append(p.flags(), "x", "--timeout", "10s")...)
			if err == nil {
				t.Fatalf("status exited 0, though it could not look up its topics:\n%s", stdout)
			}
			for _, want := range tc.want(p, delay) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q\ndoes not say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "--timeout") {
				t.Errorf("error %q blames --timeout", err)
			}
			if strings.Contains(stdout, "no records of x since") {
				t.Errorf("stdout says the task has no records:\n%s", stdout)
			}
			if tc.err == kerr.UnknownServerError && !strings.Contains(stdout, delay) {
				t.Errorf("stdout does not name %s:\n%s", delay, stdout)
			}
		})
	}
}
