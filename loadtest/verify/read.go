package verify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"

	"github.com/hourglass/hourglass/internal/outcome"
)

// Collected is what Collect read from the outcomes topic.
type Collected struct {
	// Events are the events of task ids with the prefix, in topic order
	// per partition.
	Events []outcome.Event
	// Invalid is the records keyed with the prefix that are not outcome
	// events.
	Invalid int
	// Records is every record read, of any run.
	Records int
}

// CollectOptions says how long Collect reads.
type CollectOptions struct {
	// Prefix selects the events whose task id starts with it. Required.
	Prefix string
	// Want, when not nil, are the task ids expected to reach a final
	// outcome. Collect first reads up to the end offsets it found at
	// start; while some of Want lack a final outcome it reads on, up to
	// the end offsets of the moment, until Until.
	Want map[string]bool
	// Until is when Collect stops waiting for Want; zero stops at the end
	// offsets found at start.
	Until time.Time
	// Now is the clock; time.Now when nil.
	Now func() time.Time
}

// Collect reads the outcomes topic from its start (no consumer group) as
// CollectOptions says.
func Collect(ctx context.Context, opts []kgo.Opt, topic string, o CollectOptions) (Collected, error) {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	var out Collected
	cl, err := kgo.NewClient(append(append(opts, kafka.ReaderOpts(0)...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		return out, fmt.Errorf("outcomes %s: kafka client: %w", topic, err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)

	ends, err := offsets(ctx, adm, topic, false)
	if err != nil {
		return out, err
	}
	next, err := offsets(ctx, adm, topic, true) // start offsets: nothing below them can be read
	if err != nil {
		return out, err
	}
	pending := len(o.Want)
	done := make(map[string]bool, len(o.Want))
	reached := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	lastList := now()
	hooked := false
	for {
		if reached() {
			if pending == 0 || o.Until.IsZero() || !now().Before(o.Until) {
				return out, nil
			}
			if !hooked && waitingHook != nil {
				hooked = true
				waitingHook()
			}
			if now().Sub(lastList) >= 250*time.Millisecond {
				if ends, err = offsets(ctx, adm, topic, false); err != nil {
					return out, err
				}
				lastList = now()
			}
		}
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return out, fmt.Errorf("outcomes %s: %w", topic, err)
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
				ferr = fmt.Errorf("outcomes %s[%d]: fetch: %w", t, p, err)
			}
		})
		if ferr != nil {
			return out, ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			out.Records++
			if r.Offset+1 > next[r.Partition] {
				next[r.Partition] = r.Offset + 1
			}
			if !strings.HasPrefix(string(r.Key), o.Prefix) {
				return
			}
			ev, err := outcome.Unmarshal(r.Value)
			if err != nil {
				out.Invalid++
				return
			}
			if !strings.HasPrefix(ev.TaskID, o.Prefix) {
				return
			}
			out.Events = append(out.Events, ev)
			if o.Want[ev.TaskID] && !done[ev.TaskID] && final(ev.Outcome) {
				done[ev.TaskID] = true
				pending--
			}
		})
	}
}

// waitingHook, when set by a test, is called once when Collect has read up to
// the end offsets and starts waiting for tasks without a final outcome.
var waitingHook func()

// offsets lists the start (or end) offset of every partition of topic.
func offsets(ctx context.Context, adm *kadm.Client, topic string, start bool) (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	list, which := adm.ListEndOffsets, "end"
	if start {
		list, which = adm.ListStartOffsets, "start"
	}
	lo, err := list(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("outcomes %s: list %s offsets: %w", topic, which, err)
	}
	out := make(map[int32]int64)
	var perr error
	lo.Each(func(o kadm.ListedOffset) {
		if o.Err != nil && perr == nil {
			perr = fmt.Errorf("outcomes %s[%d]: list %s offsets: %w", topic, o.Partition, which, o.Err)
		}
		out[o.Partition] = o.Offset
	})
	if perr != nil {
		return nil, perr
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("outcomes %s: topic not found", topic)
	}
	return out, nil
}
