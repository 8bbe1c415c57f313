package benchcmd

import (
	"bytes"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cmd/embedded"
	"github.com/hourglass/hourglass/internal/hostile"
	"github.com/hourglass/hourglass/internal/kafka"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// afterKill is the window after a kill whose deadlines the kill result
// measures.
const afterKill = 10 * time.Second

// killWatch kills a service of the bench and measures what the kill cost,
// from the outcome events.
type killWatch struct {
	begun    time.Time    // the bench's start
	at       atomic.Int64 // unix ms of the kill; 0 before
	mu       sync.Mutex
	recovery int64   // ms from the kill to the first forward (or close) after it; -1 none yet
	late     []int64 // lateness of the first closes of deadlines due in afterKill
}

// killResult is the "kill" object of the bench's JSON line.
type killResult struct {
	Process        string               `json:"process"`
	AtSeconds      float64              `json:"at_s"`
	RestartAfterMs int64                `json:"restart_after_ms"`
	RecoveryMs     int64                `json:"recovery_ms"` // kill to the first forward (router) or close (canceller) by the new instance
	Deadlines      int                  `json:"deadlines_after_kill"`
	LatenessMs     embedded.Percentiles `json:"lateness_after_kill_ms"`
	Duplicates     int                  `json:"duplicates"`    // outcome events beyond the first, all of them the kill's
	DuplicatesMs   float64              `json:"duplicates_ms"` // duplicates as milliseconds of traffic at --rate
}

// run kills the process victim holds with SIGKILL at at, and starts args
// again restartAfter later, storing the new process in victim (died is
// spawn's).
func (k *killWatch) run(ctx context.Context, victim *atomic.Pointer[child], args []string, at time.Time, restartAfter time.Duration, died func(error), stderr io.Writer) error {
	if !sleepUntil(ctx, at) {
		return nil
	}
	old := victim.Load()
	old.ending.Store(true)
	if err := old.cmd.Process.Kill(); err != nil {
		return fmt.Errorf("kill %s: %w", args[0], err)
	}
	<-old.done
	k.mu.Lock()
	k.recovery = -1
	k.mu.Unlock()
	k.at.Store(time.Now().UnixMilli())
	fmt.Fprintf(stderr, "bench: killed the %s (SIGKILL); starting it again in %v\n", args[0], restartAfter)
	if !sleepUntil(ctx, time.Now().Add(restartAfter)) {
		return nil
	}
	ch, err := spawn(ctx, stderr, died, args...)
	if err != nil {
		return err
	}
	victim.Store(ch)
	return nil
}

// sleepUntil waits until t and reports whether ctx was still alive then.
func sleepUntil(ctx context.Context, t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-timer.C:
		return true
	}
}

// see takes an outcome event into the kill's figures.
func (k *killWatch) see(ev outcome.Event, first bool, process string) {
	at := k.at.Load()
	if at == 0 {
		return
	}
	acted := ev.ForwardedMs // the new router forwards
	if process == "canceller" {
		acted = ev.ClosedMs
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if acted >= at && (k.recovery < 0 || acted-at < k.recovery) {
		k.recovery = acted - at
	}
	if first && ev.DueMs >= at && ev.DueMs < at+afterKill.Milliseconds() {
		k.late = append(k.late, ev.LatenessMs)
	}
}

// result is the kill's figures; dups are the run's duplicates.
func (k *killWatch) result(c *benchConfig, dups int) *killResult {
	k.mu.Lock()
	defer k.mu.Unlock()
	r := &killResult{Process: c.kill, RestartAfterMs: c.restartAfter.Milliseconds(), RecoveryMs: k.recovery,
		Deadlines: len(k.late), LatenessMs: embedded.PercentilesOf(k.late),
		Duplicates: dups, DuplicatesMs: round(float64(dups) / float64(c.rate) * 1000)}
	if at := k.at.Load(); at > 0 {
		r.AtSeconds = round(float64(at-k.begun.UnixMilli()) / 1000)
	}
	return r
}

// hostileResult is the "hostile" object of the bench's JSON line.
type hostileResult struct {
	Rate       int `json:"near_limit_records_per_s"`
	Bombs      int `json:"bombs"`
	BigBatches int `json:"big_batches"`
}

// hostileLoad produces, until ctx ends, near-limit records at c.hostileRate
// per second (half valid and held --pending-delay, half just over the value
// limit) and c.bombs zstd batches of 256 MiB, one per second, into the delay
// topics.
func hostileLoad(ctx context.Context, prod *kgo.Client, c *benchConfig, stderr io.Writer) {
	topics := c.tiers.Topics(tiers.DefaultPrefix)
	held := make([]byte, tiers.DefaultMaxValueBytes-1000)
	over := make([]byte, 990_000)
	rand.Read(held) // incompressible, like the worst payloads
	rand.Read(over)
	tick := time.NewTicker(time.Second / time.Duration(max(1, c.hostileRate)))
	defer tick.Stop()
	bombTick := time.NewTicker(time.Second)
	defer bombTick.Stop()
	bombs := 0
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-bombTick.C:
			if bombs >= c.bombs {
				continue
			}
			topic := topics[bombs%len(topics)]
			if err := hostile.ZstdBomb(ctx, prod, topic, int32(bombs%c.partitions), []byte("bomb-"+strconv.Itoa(bombs)), 256, 1<<20); err != nil && ctx.Err() == nil {
				fmt.Fprintln(stderr, "bench: bomb:", err)
			}
			bombs++
		case <-tick.C:
			if c.hostileRate == 0 {
				continue
			}
			now := time.Now()
			r, err := tiers.BuildRecord(tiers.DefaultPrefix, c.tiers, now, tiers.Task{ID: "hostile-" + strconv.Itoa(i), Due: now.Add(c.pendingDelay), Payload: held})
			if err != nil {
				fmt.Fprintln(stderr, "bench: hostile record:", err)
				return
			}
			if i%2 == 1 {
				r.Value = over
			}
			prod.Produce(ctx, r, nil)
		}
	}
}

// bigBatchKeys is how many records of a big batch have a key of 1 MiB:
// with the batch's one deadline, the batch decodes to just under the cap
// (kafka.DefaultMaxDecompressBatchBytes), which each batch passes alone.
const bigBatchKeys = kafka.DefaultMaxDecompressBatchBytes>>20 - 1

// buildBigBatches returns c.bigBatches zstd batches of about 3 kB each:
// one deadline due --pending-delay ahead, which the router holds, and
// bigBatchKeys records with a key of 1 MiB (over the key limit: dead
// letters).
func buildBigBatches(c *benchConfig) ([][]byte, error) {
	// Not zeros: a decoder may leave pages of zeros untouched, which
	// would not show in the router's RSS.
	bigKey := bytes.Repeat([]byte("hourglass "), 1<<20/10)
	batches := make([][]byte, c.bigBatches)
	for i := range batches {
		due, err := tiers.BuildRecord(tiers.DefaultPrefix, c.tiers, time.Now(),
			tiers.Task{ID: "big-batch-" + strconv.Itoa(i), Due: time.Now().Add(c.pendingDelay)})
		if err != nil {
			return nil, fmt.Errorf("bench: big batch: %w", err)
		}
		recs := []kgo.Record{*due}
		for range bigBatchKeys {
			recs = append(recs, kgo.Record{Key: bigKey})
		}
		if batches[i], err = hostile.ZstdBatch(recs); err != nil {
			return nil, fmt.Errorf("bench: big batch: %w", err)
		}
	}
	return batches, nil
}

// sendBigBatches produces batches at once, stamped now, from a few
// goroutines, into the first partition of the largest tier's topic,
// halfway through the scheduling that began at start: faster than the
// router fetches, so that one fetch meets dozens of them, and their
// deadlines wait out the longest tier in the router.
func sendBigBatches(ctx context.Context, prod *kgo.Client, c *benchConfig, batches [][]byte, start time.Time, stderr io.Writer) {
	if !sleepUntil(ctx, start.Add(time.Duration(float64(c.orders)/float64(c.rate)/2*float64(time.Second)))) {
		return
	}
	all := c.tiers.Topics(tiers.DefaultPrefix)
	topic := all[len(all)-1]
	sent := time.Now()
	var (
		wg   sync.WaitGroup
		next atomic.Int32
	)
	for range 4 {
		wg.Go(func() {
			for i := int(next.Add(1)) - 1; i < len(batches); i = int(next.Add(1)) - 1 {
				batch, err := hostile.Restamp(batches[i], time.Now())
				if err == nil {
					err = hostile.ProduceBatch(ctx, prod, topic, 0, batch)
				}
				if err != nil {
					if ctx.Err() == nil {
						fmt.Fprintln(stderr, "bench: big batch:", err)
					}
					return
				}
			}
		})
	}
	wg.Wait()
	fmt.Fprintf(stderr, "bench: sent %d big batches to %s[0] in %v\n", len(batches), topic, time.Since(sent).Round(time.Millisecond))
}
