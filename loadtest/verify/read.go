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
	cl, err := kgo.NewClient(append(append(opts, kafka.ReaderOpts(0)...),
		kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxWait(250*time.Millisecond),
	)...)
	if err != nil {
		return Collected{}, fmt.Errorf("outcomes %s: kafka client: %w", topic, err)
	}
	defer cl.Close()
	c := &collector{cl: cl, adm: kadm.NewClient(cl), topic: topic, o: o, now: now,
		pending: len(o.Want), done: make(map[string]bool, len(o.Want))}

	if c.ends, err = offsets(ctx, c.adm, topic, false); err != nil {
		return c.out, err
	}
	// start offsets: nothing below them can be read
	if c.next, err = offsets(ctx, c.adm, topic, true); err != nil {
		return c.out, err
	}
	c.lastList = now()
	for {
		if c.reached() {
			if stop, err := c.atEnd(ctx); stop || err != nil {
				return c.out, err
			}
		}
		if err := c.poll(ctx); err != nil {
			return c.out, err
		}
	}
}

// collector is the state of one Collect.
type collector struct {
	cl    *kgo.Client
	adm   *kadm.Client
	topic string
	o     CollectOptions
	now   func() time.Time
	out   Collected

	// ends are the end offsets to read up to, listed at lastList; next
	// are the offsets to read next, by partition.
	ends, next map[int32]int64
	lastList   time.Time
	// pending counts the task ids of o.Want not yet done (with a final
	// outcome).
	pending int
	done    map[string]bool
	hooked  bool // waitingHook was called
}

// reached reports whether c has read up to the end offsets.
func (c *collector) reached() bool {
	for p, end := range c.ends {
		if c.next[p] < end {
			return false
		}
	}
	return true
}

// atEnd is called when c has read up to the end offsets. It reports
// whether Collect is done: no task of o.Want pending, or no time left to
// wait for them. Otherwise it lists the end offsets anew, at most every
// 250ms.
func (c *collector) atEnd(ctx context.Context) (stop bool, err error) {
	if c.pending == 0 || c.o.Until.IsZero() || !c.now().Before(c.o.Until) {
		return true, nil
	}
	if !c.hooked && waitingHook != nil {
		c.hooked = true
		waitingHook()
	}
	if c.now().Sub(c.lastList) >= 250*time.Millisecond {
		if c.ends, err = offsets(ctx, c.adm, c.topic, false); err != nil {
			return false, err
		}
		c.lastList = c.now()
	}
	return false, nil
}

// poll fetches once, for at most 500ms, and records what it read. A fetch
// error other than the poll's own timeout ends Collect, as does ctx.
func (c *collector) poll(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	fs := c.cl.PollFetches(pctx)
	cancel()
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("outcomes %s: %w", c.topic, err)
	}
	var ferr error
	fs.EachError(func(t string, p int32, err error) {
		if !kafka.Deferred(err) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) && ferr == nil {
			ferr = fmt.Errorf("outcomes %s[%d]: fetch: %w", t, p, err)
		}
	})
	if ferr != nil {
		return ferr
	}
	fs.EachRecord(c.record)
	return nil
}

// record advances the next offset past r and, when r is keyed with the
// prefix, keeps its event (or counts it invalid) and marks its task done
// when the event is final.
func (c *collector) record(r *kgo.Record) {
	c.out.Records++
	if r.Offset+1 > c.next[r.Partition] {
		c.next[r.Partition] = r.Offset + 1
	}
	if !strings.HasPrefix(string(r.Key), c.o.Prefix) {
		return
	}
	ev, err := outcome.Unmarshal(r.Value)
	if err != nil {
		c.out.Invalid++
		return
	}
	if !strings.HasPrefix(ev.TaskID, c.o.Prefix) {
		return
	}
	c.out.Events = append(c.out.Events, ev)
	if c.o.Want[ev.TaskID] && !c.done[ev.TaskID] && ev.Outcome.Ends() {
		c.done[ev.TaskID] = true
		c.pending--
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
