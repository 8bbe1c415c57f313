package sqlcloser

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// batchFlushers is how many batches run at once. While they all run, new
// closes queue up and go out together in the next batch, so batches grow
// with the load; a close that finds a flusher free goes out at once.
const batchFlushers = 2

// batcher groups the closes that are ready at the same moment (group
// commit): Close queues its order and waits; a flusher takes everything
// queued right then, up to max, and closes it in one batch (see
// Closer.runBatch). Nothing waits for a batch to fill.
type batcher struct {
	run func([]*pending)
	max int

	mu     sync.Mutex
	queue  []*pending
	active int // flushers running

	ran atomic.Int64 // batches of two orders or more that succeeded
}

// pending is one close waiting in a batch.
type pending struct {
	ctx context.Context
	order

	done chan struct{} // closed when the batch settled next and res
	next step
	res  closer.Result // when next is stepDone
}

// step says what the close does once its batch is over.
type step int

const (
	stepAlone  step = iota // run the close on its own: the batch failed, or was not run
	stepDone               // res is the outcome
	stepLookup             // the batch changed no row: look the status up
)

// submit queues p and starts a flusher when fewer than batchFlushers run.
func (b *batcher) submit(p *pending) {
	b.mu.Lock()
	b.queue = append(b.queue, p)
	start := b.active < batchFlushers
	if start {
		b.active++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
}

// flush runs batches of what is queued until the queue is empty.
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

// closeBatched queues the close of o and finishes it once its batch is
// over: with the batch's outcome, a status lookup, or on its own.
func (c *Closer) closeBatched(ctx context.Context, o order) (closer.Result, error) {
	p := &pending{ctx: ctx, order: o, done: make(chan struct{})}
	c.batch.submit(p)
	select {
	case <-p.done:
	case <-ctx.Done():
		return closer.Result{Outcome: outcome.Failed}, c.wrap(ctx, "close", o.id, ctx.Err())
	}
	return c.finish(ctx, p)
}

// finish completes a close whose batch is over.
func (c *Closer) finish(ctx context.Context, p *pending) (closer.Result, error) {
	switch p.next {
	case stepDone:
		return p.res, nil
	case stepLookup:
		return c.statusOutcome(ctx, p.order)
	}
	return c.closeAlone(ctx, p.order)
}

// runBatch closes the orders of ps together and settles each of them. The
// closes whose ctx ended are left out. Duplicates of one order (the same
// id and deadline) are closed once: the first is closed, the others
// already closed, as one close after the other would be. When the batch
// fails, or holds a single order, every close runs on its own
// (closeAlone), so that one bad row fails only itself.
func (c *Closer) runBatch(ps []*pending) {
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
	if len(orders) < 2 {
		return // stepAlone: today's single close, one round trip
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
