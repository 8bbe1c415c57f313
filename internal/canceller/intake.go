package canceller

import (
	"context"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/consumer"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// consume polls as many records as there is room for and dispatches them,
// until ctx is canceled or an error stops the canceller.
func (c *Canceller) consume(ctx, closeCtx context.Context) error {
	for {
		free, err := c.waitFree(ctx)
		if err != nil || ctx.Err() != nil {
			return err
		}
		fs := c.cl.PollRecords(ctx, min(free, c.cfg.MaxPollRecords))
		if fs.IsClientClosed() || ctx.Err() != nil {
			c.cl.AllowRebalance()
			return nil
		}
		fs.EachRecord(func(r *kgo.Record) { c.dispatch(closeCtx, r) })
		skip := func(b *kgo.ErrDecompressTooLarge) { c.skipBatch(closeCtx, b) }
		if err := c.member.FetchErrors(fs, skip); err != nil {
			c.setFatal(err)
		}
		c.cl.AllowRebalance()
	}
}

func (c *Canceller) setFatal(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.signal()
}

// signal wakes waitFree.
func (c *Canceller) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// maxUnacked bounds the records whose close is done and whose records
// onward (outcome event, retry, dead letter) are not yet acknowledged: a
// topic that refuses them holds up the taking of more records instead of
// filling memory.
const maxUnacked = 10_000

// waitFree waits until fewer than MaxInFlight records are pending, not
// counting those queued behind a close of the same task id, holding less
// than MaxInFlightBytes (and fewer than maxUnacked unacknowledged), and
// returns how many more may be taken, or the error that stops the
// canceller. The bytes bound is checked before a poll, so the records of
// one poll may pass it: by at most MaxPollRecords records, which the fetch
// limits bound.
//
// A queued record holds no slot: the records of one task id close one at
// a time, so many of them (one order scheduled again and again) would
// otherwise hold every slot for a close latency each, and the tasks of
// every other partition would wait behind them. They are bounded by
// MaxInFlightBytes and maxUnacked instead.
func (c *Canceller) waitFree(ctx context.Context) (int, error) {
	for {
		c.mu.Lock()
		free, err := min(c.cfg.MaxInFlight-(c.pending-c.queued), maxUnacked-c.unacked), c.fatal
		if c.pendingBytes >= c.cfg.MaxInFlightBytes {
			free = 0
		}
		c.mu.Unlock()
		if err != nil || free > 0 {
			return free, err
		}
		select {
		case <-ctx.Done():
			return 0, nil
		case <-c.wake:
		}
	}
}

// take counts r, of mark, as taken from its partition and returns its job.
func (c *Canceller) take(closeCtx context.Context, r *kgo.Record, mark consumer.Mark) job {
	k := tp{r.Topic, r.Partition}
	p, ok := c.parts[k]
	if !ok {
		p = &partition{}
		p.ctx, p.cancel = context.WithCancel(closeCtx)
		c.parts[k] = p
	}
	p.work.Add(1)
	c.work.Add(1)
	size := record.Size(r)
	c.pending++
	c.pendingBytes += size
	c.unacked++
	c.metrics.pending.Set(float64(c.pending))
	return job{r: r, p: p, mark: mark, size: size}
}

// dispatch takes r: it starts closing it, or queues it behind the running
// close of the same task id.
func (c *Canceller) dispatch(closeCtx context.Context, r *kgo.Record) {
	mark := c.member.Take(r)
	if mark.Handled() {
		return // closed before the last assignment
	}
	c.mu.Lock()
	j := c.take(closeCtx, r, mark)
	key := string(r.Key)
	if waiting, busy := c.keys[key]; busy {
		c.keys[key] = append(waiting, j)
		c.queued++
		c.mu.Unlock()
		return
	}
	c.keys[key] = nil
	c.mu.Unlock()
	select {
	case c.idle <- closeWork{key, j}:
	default:
		go c.serve(closeCtx, key, j)
	}
}

// closeWork is a task id whose close is to start, and its first record.
type closeWork struct {
	key string
	j   job
}

// serve runs the closes of key from j on, then waits for another task id
// from dispatch, until the stop. Reusing the goroutines spares a goroutine
// and the growth of its stack for every record: the stack of a close
// goroutine grows to several kilobytes (the record's decoding, the closer,
// the outcome event's JSON). At most MaxInFlight wait; one more exits.
func (c *Canceller) serve(closeCtx context.Context, key string, j job) {
	for {
		c.run(closeCtx, key, j)
		if c.waiting.Add(1) > int64(c.cfg.MaxInFlight) {
			c.waiting.Add(-1)
			return
		}
		select {
		case w := <-c.idle:
			c.waiting.Add(-1)
			key, j = w.key, w.j
		case <-c.stopped:
			return
		}
	}
}

// skipBatch dead-letters a batch the client refused to decompress (the
// client has moved past it), naming its offsets.
func (c *Canceller) skipBatch(closeCtx context.Context, b *kgo.ErrDecompressTooLarge) {
	r := &kgo.Record{Topic: b.Topic, Partition: b.Partition, Offset: b.Offset, Timestamp: c.clock.Now()}
	mark := c.member.TakeSkipped(b)
	c.mu.Lock()
	j := c.take(closeCtx, r, mark)
	c.pending-- // nothing to close
	c.pendingBytes -= j.size
	c.mu.Unlock()
	c.deadLetter(j, string(tiers.ReasonBatchTooLarge), kafka.SkippedBatch(b))
}

// run handles j, then each record that queued behind it for the same task
// id, in offset order.
func (c *Canceller) run(closeCtx context.Context, key string, j job) {
	for {
		c.handle(closeCtx, j)
		c.mu.Lock()
		c.pending--
		c.pendingBytes -= j.size
		c.metrics.pending.Set(float64(c.pending))
		waiting := c.keys[key]
		if len(waiting) == 0 {
			delete(c.keys, key)
		} else {
			c.keys[key] = waiting[1:]
			c.queued--
		}
		c.mu.Unlock()
		c.signal()
		if len(waiting) == 0 {
			return
		}
		j = waiting[0]
	}
}

// finish ends j: its offset is done when its records onward are
// acknowledged (done), or left for the next owner (a revoke or a stop came
// first).
func (c *Canceller) finish(j job, done bool) {
	if done {
		c.member.Done(j.mark)
	}
	c.mu.Lock()
	c.unacked--
	c.mu.Unlock()
	j.p.work.Done()
	c.work.Done()
	c.signal()
}

// letGo is the group member's Release. Records of the revoked or lost
// partitions that have not begun closing are dropped (the next owner reads
// them again); for a revoke it waits for the closes running and their
// records onward, until deadline. It forgets the partitions.
func (c *Canceller) letGo(parts map[string][]int32, lost bool, deadline time.Time) {
	var gone []*partition
	c.mu.Lock()
	for topic, ps := range parts {
		for _, n := range ps {
			if p, ok := c.parts[tp{topic, n}]; ok {
				p.cancel()
				gone = append(gone, p)
				delete(c.parts, tp{topic, n})
			}
		}
	}
	c.mu.Unlock()
	if lost {
		return
	}
	for _, p := range gone {
		if !waitTimeout(&p.work, time.Until(deadline)) {
			c.log.Warn("revoke: closes or their events unfinished; their tasks will be closed again by the next owner")
			return
		}
	}
}

// waitTimeout waits for wg at most d and reports whether wg finished. On
// false, one goroutine stays blocked in wg.Wait until wg finishes.
func waitTimeout(wg *sync.WaitGroup, d time.Duration) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}
