package sqlcloser

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// batchFlushers is how many batches (a lone close is a batch of one) run
// at once, at most max_open_conns. While they all run, new closes queue up
// and go out together in the next batch, so batches grow with the load; a
// close that finds fewer running goes out at once. Two keep one batch
// filling while the other runs; more split the same closes into smaller
// batches (docs/benchmarks.md has the figures).
const batchFlushers = 2

// batcher groups the closes that are ready at the same moment (group
// commit): Close queues its order and waits; a flusher takes everything
// queued right then, up to max, and closes it in one batch (see
// Closer.runBatch). Nothing waits for a batch to fill.
type batcher struct {
	run      func([]*pending)
	max      int
	min      int // smaller batches run as single closes, at once
	flushers int // at most this many flushers run

	mu     sync.Mutex
	queue  []*pending
	active int // flushers running

	ran atomic.Int64 // batches of two orders or more that succeeded
}

// pending is one close waiting in a batch.
type pending struct {
	ctx context.Context
	order

	done chan struct{} // closed when the batch settled next, res and err
	next step
	res  closer.Result // when next is stepDone
	err  error         // when next is stepDone
}

// step says what the close does once its batch is over.
type step int

const (
	stepAlone  step = iota // run the close on its own: the batch failed, or was not run
	stepDone               // res and err are the outcome
	stepLookup             // the batch changed no row: look the status up
)

// submit runs p, or queues it for the next batch while b.flushers batches
// run. A close that finds fewer running runs at once, on the caller's
// goroutine: the queue is empty then, since flushers stop only when it
// is. The closes queued meanwhile go to a flusher that the caller starts
// before it returns.
func (b *batcher) submit(p *pending) {
	b.mu.Lock()
	if b.active >= b.flushers {
		b.queue = append(b.queue, p)
		b.mu.Unlock()
		return
	}
	b.active++
	b.mu.Unlock()
	b.run([]*pending{p})
	b.mu.Lock()
	more := len(b.queue) > 0
	if !more {
		b.active--
	}
	b.mu.Unlock()
	if more {
		go b.flush()
	}
}

// flush runs batches of what is queued until the queue is empty, in a
// flusher's place (counted in b.active), which it then leaves.
func (b *batcher) flush() {
	for {
		b.mu.Lock()
		n := min(len(b.queue), b.max)
		if n == 0 {
			b.active--
			b.mu.Unlock()
			return
		}
		batch := b.queue[:n:n]
		if n == len(b.queue) {
			b.queue = nil
		} else {
			b.queue = append([]*pending(nil), b.queue[n:]...)
		}
		b.mu.Unlock()
		b.run(batch)
	}
}

// closeBatched runs the close of o in a batch (see batcher.submit) and
// finishes it once its batch is over: with the batch's outcome, a status
// lookup, or on its own.
func (c *Closer) closeBatched(ctx context.Context, o order) (closer.Result, error) {
	p := &pending{ctx: ctx, order: o, done: make(chan struct{})}
	c.batch.submit(p)
	select {
	case <-p.done: // at once when submit ran it
	default:
		select {
		case <-p.done:
		case <-ctx.Done():
			return closer.Result{Outcome: outcome.Failed}, c.wrap(ctx, "close", o.id, ctx.Err())
		}
	}
	return c.finish(ctx, p)
}

// finish completes a close whose batch is over.
func (c *Closer) finish(ctx context.Context, p *pending) (closer.Result, error) {
	switch p.next {
	case stepDone:
		return p.res, p.err
	case stepLookup:
		return c.statusOutcome(ctx, p.order)
	}
	return c.closeAlone(ctx, p.order)
}

// runBatch closes the orders of ps together (see runBatchOf).
func (c *Closer) runBatch(ps []*pending) { c.runBatchOf(ps, c.batch.min) }

// runBatchOf closes the orders of ps together, when there are at least
// least of them, and settles each close. The closes whose ctx ended are
// left out. Duplicates of one order (the same id and deadline) are closed once:
// the first is closed, the others already closed, as one close after the
// other would be. A batch of one order is the single close (runAlone).
// When a batch fails, or holds fewer than least orders, every close runs
// on its own (closeAlone), so that one bad row fails only itself.
func (c *Closer) runBatchOf(ps []*pending, least int) {
	defer func() {
		for _, p := range ps {
			close(p.done)
		}
	}()
	var orders []order
	groups := map[batchKey][]*pending{}
	for _, p := range ps {
		if p.ctx.Err() != nil {
			continue // its Close has returned, or will run alone and fail
		}
		k := p.batchKey()
		if _, ok := groups[k]; !ok {
			orders = append(orders, p.order)
		}
		groups[k] = append(groups[k], p)
	}
	switch {
	case len(orders) == 0:
		return
	case len(orders) == 1:
		c.runAlone(groups[orders[0].batchKey()])
		return
	case len(orders) < least:
		return // stepAlone: each runs on its own, at once
	}
	out, err := c.batchClose(orders)
	if err != nil {
		return // stepAlone
	}
	c.batch.ran.Add(1)
	for i, o := range orders {
		c.settle(groups[o.batchKey()], out[i])
	}
}

// runAlone closes the one order of a batch on its own, for the first of
// ps, and settles the others as one close after the other would: already
// closed after a close, the same outcome otherwise. When the close fails,
// the others run on their own.
func (c *Closer) runAlone(ps []*pending) {
	first := ps[0]
	res, err := c.closeAlone(first.ctx, first.order)
	first.next, first.res, first.err = stepDone, res, err
	for _, p := range ps[1:] {
		switch {
		case err != nil: // stepAlone
		case res.Outcome == outcome.Closed:
			p.next, p.res = stepDone, closer.Result{Outcome: outcome.AlreadyClosed}
		default:
			p.next, p.res = stepDone, res
		}
	}
}

// settle sets the outcome of the closes of one order in a batch.
func (c *Closer) settle(ps []*pending, o batchOutcome) {
	for i, p := range ps {
		switch {
		case o.closed && i == 0:
			p.next, p.res = stepDone, closer.Result{Outcome: outcome.Closed}
		case o.closed:
			p.next, p.res = stepDone, closer.Result{Outcome: outcome.AlreadyClosed}
		case o.looked:
			p.next, p.res = stepDone, c.statusResult(o.found, o.status, o.moved)
		default:
			p.next = stepLookup
		}
	}
}
