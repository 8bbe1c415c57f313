package sqlcloser

import (
	"context"
	"sync/atomic"

	"github.com/hourglass/hourglass/internal/closer"
)

// KeyUnique reports whether New proved the key column unique, so that the
// default close runs on its own, in autocommit.
func KeyUnique(c *Closer) bool { return c.keyUnique }

// Batching reports whether c batches closes.
func Batching(c *Closer) bool { return c.batch != nil }

// BatchesRun counts the batches of two orders or more that succeeded.
func BatchesRun(c *Closer) int64 { return c.batch.ran.Load() }

// CloseBatch closes ids as Close would if they were all queued when a
// batch started: in one batch (also fewer than MySQL's least), then each
// finished as its Close would.
func CloseBatch(ctx context.Context, c *Closer, ids []string) ([]closer.Result, []error) {
	tasks := make([]closer.Task, len(ids))
	for i, id := range ids {
		tasks[i] = closer.Task{ID: id}
	}
	return CloseTasks(ctx, c, tasks)
}

// CloseTasks is CloseBatch for tasks.
func CloseTasks(ctx context.Context, c *Closer, tasks []closer.Task) ([]closer.Result, []error) {
	res, errs := make([]closer.Result, len(tasks)), make([]error, len(tasks))
	var ps []*pending
	var at []int
	for i, t := range tasks {
		key, err := c.keyArg(t.ID)
		var o order
		if err == nil {
			o, err = c.orderOf(t, key)
		}
		if err != nil {
			res[i], errs[i] = c.Close(ctx, t) // fails before batching
			continue
		}
		ps = append(ps, &pending{ctx: ctx, order: o, done: make(chan struct{})})
		at = append(at, i)
	}
	c.runBatchOf(ps, 2)
	for j, p := range ps {
		res[at[j]], errs[at[j]] = c.finish(ctx, p)
	}
	return res, errs
}

// CountBatches counts, from now on, the batches c's flushers run (a lone
// close is a batch of one) and the closes in them. Call it before the
// first Close.
func CountBatches(c *Closer) (batches, closes *atomic.Int64) {
	batches, closes = new(atomic.Int64), new(atomic.Int64)
	if c.batch != nil {
		run := c.batch.run
		c.batch.run = func(ps []*pending) {
			batches.Add(1)
			closes.Add(int64(len(ps)))
			run(ps)
		}
	}
	return batches, closes
}
