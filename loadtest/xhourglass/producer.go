package xhourglass

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/loadtest/manifest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// IDPrefix returns the prefix of every task id of run runID: "lt-<runID>-".
func IDPrefix(runID string) string { return "lt-" + runID + "-" }

// NewRunID returns a run id from the time and a random number:
// "20260918t101500-3f2a".
func NewRunID(now time.Time) string {
	var b [2]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102t150405") + "-" + hex.EncodeToString(b[:])
}

// processRunID is the run id of producers that set none: one per process,
// so that every VU's producer shares it.
var processRunID = sync.OnceValue(func() string { return NewRunID(time.Now()) })

// Stats are a producer's totals.
type Stats struct {
	RunID    string `json:"runId"`
	IDPrefix string `json:"idPrefix"`
	Manifest string `json:"manifest"`
	// Scheduled is the tasks handed to the Kafka client.
	Scheduled int64 `json:"scheduled"`
	// Produced is the tasks the broker acknowledged (each in the
	// manifest).
	Produced int64 `json:"produced"`
	// Errors is the tasks whose produce failed.
	Errors int64 `json:"errors"`
	// PayErrors is the paid tasks whose payment failed; they were not
	// produced.
	PayErrors int64 `json:"payErrors"`
	// InFlight is the tasks produced and not yet acknowledged.
	InFlight int64 `json:"inFlight"`
	// FirstError is the first produce, payment or manifest error.
	FirstError string `json:"firstError,omitempty"`
	// Outcomes are what the outcomes watcher judged; nil when the
	// producer does not watch outcomes (or has not started).
	Outcomes *OutcomeStats `json:"outcomes,omitempty"`
}

// Delta is what a producer did since the previous TakeDelta: the k6
// metrics' samples.
type Delta struct {
	Produced, Errors, PayErrors int64
	// Latencies are the produce latencies (schedule to acknowledgement)
	// of the tasks finished since.
	Latencies []time.Duration
	// NewError is the first error, once: on the first TakeDelta after it.
	NewError string
	// Outcomes is what the outcomes watcher judged since; Lost is the
	// tasks Close counted lost since. Both zero without a watcher.
	Outcomes OutcomeDelta
	Lost     int64
}

// Producer schedules tasks through tiers.Scheduler with at most MaxInFlight
// unacknowledged, pays paid orders in the store first, and records every
// acknowledged task in the manifest. It is safe for concurrent use. It
// connects and creates the manifest on the first Schedule.
type Producer struct {
	cfg      ProducerConfig
	table    tiers.Table
	idPrefix string

	// mu is held for reading while a task is handed to the client, and
	// for writing to start and to close, so that Close waits for those.
	mu        sync.RWMutex
	started   bool
	startErr  error
	closed    bool
	closeErr  error
	closeDone chan struct{} // closed when the first Close has finished
	cl        *kgo.Client
	watch     *watcher // nil when outcomes are not watched
	sched     *tiers.Scheduler
	man       *manifest.Writer
	store     *http.Client
	sem       chan struct{}
	wg        sync.WaitGroup
	stopFlush chan struct{}
	flushDone chan struct{}

	seq                                     atomic.Int64
	scheduled, produced, errs, payErrs, inf atomic.Int64
	lastDueMs                               atomic.Int64 // of the tasks handed to the client

	repMu    sync.Mutex
	reported Delta // totals handed out by TakeDelta
	lat      []time.Duration
	firstErr string
	errTold  bool
}

// NewProducer validates cfg (after WithDefaults with the process's run id)
// and returns a Producer; it connects nothing yet.
func NewProducer(cfg ProducerConfig) (*Producer, error) {
	cfg = cfg.WithDefaults(processRunID())
	if errs := cfg.Validate(); len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	table, _ := tiers.Parse(cfg.Tiers)
	return &Producer{cfg: cfg, table: table, idPrefix: IDPrefix(cfg.RunID), closeDone: make(chan struct{})}, nil
}

// Config returns the producer's configuration, defaults applied.
func (p *Producer) Config() ProducerConfig { return p.cfg }

// start connects and creates the manifest, once.
func (p *Producer) start() error {
	p.mu.RLock()
	started, err := p.started, p.startErr
	p.mu.RUnlock()
	if started {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return p.startErr
	}
	if p.closed {
		return errors.New("hourglass producer: closed")
	}
	p.started = true
	p.startErr = p.connect()
	return p.startErr
}

func (p *Producer) connect() error {
	kc := p.cfg.kafka()
	opts, err := kc.Opts()
	if err != nil {
		return err
	}
	if *p.cfg.Outcomes {
		// The watcher starts first, so that it reads every outcome of
		// the tasks to come.
		if p.watch, err = newWatcher(opts[:len(opts):len(opts)], p.cfg.OutcomesTopic, p.idPrefix, time.Now()); err != nil {
			return err
		}
		p.watch.run()
	}
	// kgo's defaults stay: acks from all in-sync replicas, idempotent.
	// Records buffered must cover MaxInFlight; the delivery timeout bounds
	// retries so that a dead broker ends the run with errors, not a hang.
	opts = append(opts,
		kgo.MaxBufferedRecords(p.cfg.MaxInFlight+1),
		kgo.RecordDeliveryTimeout(time.Duration(p.cfg.DeliveryTimeout)),
	)
	if p.cfg.Linger != nil {
		opts = append(opts, kgo.ProducerLinger(time.Duration(*p.cfg.Linger)))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		p.stopWatch()
		return fmt.Errorf("hourglass producer: kafka client: %w", err)
	}
	sched, err := tiers.NewScheduler(cl, p.table, tiers.WithPrefix(p.cfg.Prefix))
	if err != nil {
		cl.Close()
		p.stopWatch()
		return err
	}
	man, err := manifest.Create(p.cfg.Manifest, manifest.Header{
		RunID: p.cfg.RunID, IDPrefix: p.idPrefix, Prefix: p.cfg.Prefix, Tiers: p.table.String(), StartedMs: time.Now().UnixMilli(),
	})
	if err != nil {
		cl.Close()
		p.stopWatch()
		return err
	}
	p.cl, p.sched, p.man = cl, sched, man
	p.sem = make(chan struct{}, p.cfg.MaxInFlight)
	if p.cfg.StoreURL != "" {
		p.store = &http.Client{
			Timeout:   time.Duration(p.cfg.StoreTimeout),
			Transport: &http.Transport{MaxIdleConnsPerHost: 256, IdleConnTimeout: 30 * time.Second},
		}
	}
	p.stopFlush, p.flushDone = make(chan struct{}), make(chan struct{})
	go p.flushLoop()
	return nil
}

// flushLoop writes the manifest's buffer to its file every second, so that
// a run cut short still leaves most of its manifest.
func (p *Producer) flushLoop() {
	defer close(p.flushDone)
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-p.stopFlush:
			return
		case <-t.C:
			if err := p.man.Flush(); err != nil {
				p.noteErr(err)
			}
		}
	}
}

func (p *Producer) noteErr(err error) {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	if p.firstErr == "" {
		p.firstErr = err.Error()
	}
}

// TakeDelta returns what happened since the previous call.
func (p *Producer) TakeDelta() Delta {
	p.repMu.Lock()
	defer p.repMu.Unlock()
	now := Delta{Produced: p.produced.Load(), Errors: p.errs.Load(), PayErrors: p.payErrs.Load()}
	w := p.watcher()
	if w != nil {
		now.Lost = w.stats().Lost
	}
	d := Delta{
		Produced:  now.Produced - p.reported.Produced,
		Errors:    now.Errors - p.reported.Errors,
		PayErrors: now.PayErrors - p.reported.PayErrors,
		Latencies: p.lat,
		Lost:      now.Lost - p.reported.Lost,
	}
	if w != nil {
		d.Outcomes = w.take()
	}
	p.reported = now
	p.lat = nil
	if p.firstErr != "" && !p.errTold {
		d.NewError, p.errTold = p.firstErr, true
	}
	return d
}

// Stats returns the producer's totals.
func (p *Producer) Stats() Stats {
	p.repMu.Lock()
	first := p.firstErr
	p.repMu.Unlock()
	s := Stats{
		RunID: p.cfg.RunID, IDPrefix: p.idPrefix, Manifest: p.cfg.Manifest,
		Scheduled: p.scheduled.Load(), Produced: p.produced.Load(), Errors: p.errs.Load(),
		PayErrors: p.payErrs.Load(), InFlight: p.inf.Load(), FirstError: first,
	}
	if w := p.watcher(); w != nil {
		o := w.stats()
		s.Outcomes = &o
	}
	return s
}

// watcher returns the outcomes watcher once the producer has started; nil
// before, or without one.
func (p *Producer) watcher() *watcher {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.watch
}

// stopWatch stops the outcomes watcher, if there is one.
func (p *Producer) stopWatch() {
	if p.watch != nil {
		p.watch.stop()
	}
}

// Close waits for every task in flight to be acknowledged or to fail (at
// most DeliveryTimeout, or closeTimeout, or until ctx ends), closes the
// manifest and the client; then, when the producer watches outcomes, it
// waits until every produced task has a final outcome, or OutcomeWait past
// the last due time, or until ctx ends, calling progress (when not nil)
// every 100ms, and counts the tasks still without one as lost. It returns
// the totals. Schedule fails after it. Closing again returns the first
// Close's result.
func (p *Producer) Close(ctx context.Context, progress func()) (Stats, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		<-p.closeDone
		return p.Stats(), p.closeErr
	}
	p.closed = true
	started := p.started && p.startErr == nil
	p.mu.Unlock()
	defer close(p.closeDone)
	if !started {
		return p.Stats(), nil
	}
	// Shutdown order: no new task can be handed over (closed, under the
	// write lock); wait for the client's buffer, then for every callback,
	// so that the manifest and the watcher have each acknowledged task;
	// stop the periodic flush; close the manifest; close the client; wait
	// for the outcomes (the watcher reads on); stop the watcher.
	var errs []error
	fctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	if err := p.cl.Flush(fctx); err != nil {
		errs = append(errs, fmt.Errorf("hourglass producer: flush: %w", err))
	}
	p.wg.Wait()
	close(p.stopFlush)
	<-p.flushDone
	if err := p.man.Close(); err != nil {
		errs = append(errs, err)
	}
	p.cl.Close()
	if p.watch != nil {
		until := time.UnixMilli(p.lastDueMs.Load()).Add(time.Duration(p.cfg.OutcomeWait))
		p.watch.await(ctx, until, progress)
		p.watch.stop()
	}
	p.closeErr = errors.Join(errs...)
	return p.Stats(), p.closeErr
}
