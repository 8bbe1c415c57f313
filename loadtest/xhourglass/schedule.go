package xhourglass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/loadtest/manifest"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Schedule pays the order when spec.Paid, then hands the task to the Kafka
// client and returns its id without waiting for the acknowledgement. It
// waits while MaxInFlight tasks are unacknowledged, or until ctx ends. It
// returns queued false, and counts a payment error, when the payment
// failed; it returns an error for an invalid spec, or when the producer is
// closed or cannot connect.
func (p *Producer) Schedule(ctx context.Context, spec TaskSpec) (id string, queued bool, err error) {
	if err := p.start(); err != nil {
		return "", false, err
	}
	if spec.Paid && p.store == nil {
		return "", false, errors.New("schedule: a paid task needs the producer's storeUrl")
	}
	task, err := p.task(spec, time.Now())
	if err != nil {
		return "", false, err
	}
	if spec.Paid {
		if err := p.pay(ctx, task.ID); err != nil {
			p.payErrs.Add(1)
			p.noteErr(err)
			return task.ID, false, nil
		}
	}
	entry := manifest.Entry{ID: task.ID, DueMs: task.Due.UnixMilli(), Paid: spec.Paid, Shape: spec.Shape}
	if err := p.send(ctx, task, entry); err != nil {
		return "", false, err
	}
	return task.ID, true, nil
}

// task is the task of spec scheduled at now: the id with the run's
// prefix, the producer's kind and a default payload when spec has none. It
// returns an error when the task would make an invalid record.
func (p *Producer) task(spec TaskSpec, now time.Time) (tiers.Task, error) {
	due := spec.Due
	if due.IsZero() {
		due = now.Add(spec.Delay)
	}
	var id string
	if spec.ID != "" {
		id = p.idPrefix + spec.ID
	} else {
		id = p.idPrefix + strconv.FormatInt(p.seq.Add(1), 10)
	}
	kind := spec.Kind
	if kind == "" {
		kind = p.cfg.Kind
	}
	payload := spec.Payload
	if payload == nil {
		payload, _ = json.Marshal(map[string]string{"order": id})
	}
	task := tiers.Task{ID: id, Due: due, Kind: kind, Payload: payload}
	if _, err := tiers.BuildRecord(p.cfg.Prefix, p.table, now, task); err != nil {
		return tiers.Task{}, fmt.Errorf("schedule: %w", err)
	}
	return task, nil
}

// send hands task to the Kafka client once fewer than MaxInFlight tasks
// are unacknowledged (or fails when ctx ends first, or the producer is
// closed); delivered handles the acknowledgement.
func (p *Producer) send(ctx context.Context, task tiers.Task, entry manifest.Entry) error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		return errors.New("hourglass producer: closed")
	}
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		return fmt.Errorf("schedule %s: %w", task.ID, ctx.Err())
	}
	p.wg.Add(1)
	p.inf.Add(1)
	p.scheduled.Add(1)
	if p.watch != nil {
		p.watch.add(task.ID, task.Due, entry.Paid)
		storeMax(&p.lastDueMs, task.Due.UnixMilli())
	}
	start := time.Now()
	// The produce outlives the VU's iteration and context: the record
	// delivery timeout bounds it.
	p.sched.ScheduleAsync(context.Background(), task, func(r *kgo.Record, err error) {
		p.delivered(entry, start, r, err)
	})
	return nil
}

// delivered records the produce of entry's task, sent at start: the
// record r in the manifest, or the error err; its latency; and frees its
// in-flight slot.
func (p *Producer) delivered(entry manifest.Entry, start time.Time, r *kgo.Record, err error) {
	lat := time.Since(start)
	if err != nil {
		p.errs.Add(1)
		p.noteErr(err)
	} else {
		entry.ScheduledMs = r.Timestamp.UnixMilli()
		if merr := p.man.Add(entry); merr != nil {
			p.noteErr(merr)
		}
		p.produced.Add(1)
	}
	if p.watch != nil {
		p.watch.produced(entry.ID, entry.ScheduledMs, err == nil)
	}
	p.repMu.Lock()
	p.lat = append(p.lat, lat)
	p.repMu.Unlock()
	p.inf.Add(-1)
	<-p.sem
	p.wg.Done()
}

// pay marks order id paid in the store: PUT <storeUrl>/orders/<id>, body
// "paid", answered 2xx.
func (p *Producer) pay(ctx context.Context, id string) error {
	u := strings.TrimSuffix(p.cfg.StoreURL, "/") + "/orders/" + url.PathEscape(id)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, u, strings.NewReader("paid"))
	if err != nil {
		return fmt.Errorf("pay %s: %w", id, err)
	}
	resp, err := p.store.Do(req)
	if err != nil {
		return fmt.Errorf("pay %s: %w", id, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("pay %s: PUT %s: %s: %s", id, u, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// storeMax sets a to v when v is larger.
func storeMax(a *atomic.Int64, v int64) {
	for {
		old := a.Load()
		if v <= old || a.CompareAndSwap(old, v) {
			return
		}
	}
}
