package httpcloser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hourglass/hourglass/internal/closer"
)

// Limits of batches.
const (
	// batchFlushers is how many batch requests run at once. While they all
	// run, new closes queue up and go out together in the next request, so
	// batches grow with the load; a close that finds a flusher free goes
	// out at once, in a batch of its own.
	batchFlushers = 2
	// maxBatchBody cuts a batch before its request body passes it; a
	// single close larger than that goes alone.
	maxBatchBody = 4 << 20
	// maxBatchAnswer is how much of a batch answer is read; a longer one is
	// malformed.
	maxBatchAnswer = 4 << 20
	// maxMaxBatch bounds Config.MaxBatch.
	maxMaxBatch = 10_000
)

// batchItem is one close in the JSON array of a batch request.
type batchItem struct {
	ID             string          `json:"id"`
	Kind           string          `json:"kind"`
	DueMs          int64           `json:"due_ms"` // unix milliseconds; 0 when unknown
	Attempt        int             `json:"attempt"`
	IdempotencyKey string          `json:"idempotency_key"`
	Payload        json.RawMessage `json:"payload,omitempty"`
	PayloadBase64  []byte          `json:"payload_base64,omitempty"`
}

// queued is a close waiting for its batch.
type queued struct {
	ctx  context.Context
	t    closer.Task
	item []byte // its batchItem, encoded

	done chan struct{} // closed when its batch is over; res and err are set
	res  closer.Result
	err  error
}

// batcher groups the closes that are ready at the same moment: Close queues
// its item and waits; a flusher takes everything queued right then, up to
// max items and maxBatchBody bytes, and sends it as one request. Nothing
// waits for a batch to fill.
type batcher struct {
	run func([]*queued)
	max int

	mu     sync.Mutex
	queue  []*queued
	active int // flushers running
}

// submit queues q and starts a flusher when fewer than batchFlushers run.
func (b *batcher) submit(q *queued) {
	b.mu.Lock()
	b.queue = append(b.queue, q)
	start := b.active < batchFlushers
	if start {
		b.active++
	}
	b.mu.Unlock()
	if start {
		go b.flush()
	}
}

// flush sends batches of what is queued until the queue is empty.
func (b *batcher) flush() {
	for {
		batch := b.take()
		if batch == nil {
			return
		}
		b.run(batch)
	}
}

// take removes the next batch from the queue; with the queue empty it
// counts its flusher out and returns nil. A close of a task id already in
// the batch waits for the next: the answer is matched to the closes by id.
func (b *batcher) take() []*queued {
	b.mu.Lock()
	defer b.mu.Unlock()
	var batch, rest []*queued
	ids := make(map[string]bool)
	size := 2
	for i, q := range b.queue {
		if len(batch) == b.max || (len(batch) > 0 && size+len(q.item)+1 > maxBatchBody) {
			rest = append(rest, b.queue[i:]...)
			break
		}
		if ids[q.t.ID] {
			rest = append(rest, q)
			continue
		}
		ids[q.t.ID] = true
		size += len(q.item) + 1
		batch = append(batch, q)
	}
	if len(batch) == 0 {
		b.active--
		return nil
	}
	b.queue = rest
	return batch
}

// closeBatched queues t for the next batch and returns its outcome once
// the batch is answered.
func (c *Closer) closeBatched(ctx context.Context, t closer.Task) (closer.Result, error) {
	where := fmt.Sprintf("http close task %q: POST %s", t.ID, c.cfg.BatchURL)
	item, err := c.encodeItem(t)
	if err != nil {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: %w", where, err))
	}
	q := &queued{ctx: ctx, t: t, item: item, done: make(chan struct{})}
	c.batch.submit(q)
	select {
	case <-q.done:
		return q.res, q.err
	case <-ctx.Done():
		// Left out of its batch if that has not been sent yet.
		return closer.Result{}, fmt.Errorf("%s: %w", where, ctx.Err())
	}
}

// encodeItem returns the JSON item of t: its payload as JSON when it is
// JSON, else in base64, and none with Config.Body none.
func (c *Closer) encodeItem(t closer.Task) ([]byte, error) {
	switch {
	case t.ID == "":
		return nil, errors.New("the task has no id")
	case !utf8.ValidString(t.ID) || !utf8.ValidString(t.Kind):
		return nil, errors.New("the task id or kind is not UTF-8, which a JSON batch cannot carry unchanged")
	}
	it := batchItem{ID: t.ID, Kind: t.Kind, Attempt: t.Attempt, IdempotencyKey: "hourglass:" + t.Kind + ":" + t.ID}
	if !t.Meta.Due.IsZero() {
		it.DueMs = t.Meta.Due.UnixMilli()
	}
	if c.cfg.Body == BodyPayload {
		switch {
		case len(t.Payload) == 0:
		case json.Valid(t.Payload):
			it.Payload = t.Payload
		default:
			it.PayloadBase64 = t.Payload
		}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the payload stays as it was, apart from whitespace
	if err := enc.Encode(it); err != nil {
		return nil, fmt.Errorf("encode the batch item: %w", err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// runBatch sends the closes of qs whose context has not ended as one
// request and settles each of them. Every close of qs is done when it
// returns.
func (c *Closer) runBatch(qs []*queued) {
	defer func() {
		for _, q := range qs {
			close(q.done)
		}
	}()
	live := make([]*queued, 0, len(qs))
	for _, q := range qs {
		if q.ctx.Err() == nil {
			live = append(live, q) // the others' Close has returned
		}
	}
	if len(live) == 0 {
		return
	}
	size := 2
	for _, q := range live {
		size += len(q.item) + 1
	}
	body := make([]byte, 0, size)
	body = append(body, '[')
	for i, q := range live {
		if i > 0 {
			body = append(body, ',')
		}
		body = append(body, q.item...)
	}
	body = append(body, ']')

	auth, err := c.authorization(false)
	if err != nil {
		c.failAll(live, err)
		return
	}
	resp, data, err := c.post(body, auth)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && auth != "" {
		// The secret may have been rotated since it was last read: read it
		// again, and try once more if it changed.
		if fresh, ferr := c.authorization(true); ferr == nil && fresh != auth {
			resp, data, err = c.post(body, fresh)
		}
	}
	if err != nil {
		c.failAll(live, err)
		return
	}
	c.settleBatch(live, resp, data)
}

// post sends one batch request and reads at most maxBatchAnswer+1 bytes of
// its answer. It is bounded by Config.Timeout, and by no caller's context:
// the batch carries many closes.
func (c *Closer) post(body []byte, auth string) (*http.Response, []byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.cfg.BatchURL, bytes.NewReader(body))
	if err != nil {
		return nil, nil, closer.Permanent(err)
	}
	h := req.Header
	for k, v := range c.cfg.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	if auth != "" {
		h.Set("Authorization", auth)
	}
	h.Set("User-Agent", UserAgent)
	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		if ctx.Err() != nil {
			return nil, nil, fmt.Errorf("no answer within the timeout %v: %w", c.cfg.Timeout, ctx.Err())
		}
		return nil, nil, err
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBatchAnswer+1))
	resp.Body.Close()
	if err != nil && resp.StatusCode >= 200 && resp.StatusCode <= 299 {
		err = fmt.Errorf("%s: reading the answer: %w", resp.Status, err)
		return nil, nil, err
	}
	return resp, data, nil
}

// failAll ends every close of qs with err, which the batch as a whole met.
func (c *Closer) failAll(qs []*queued, err error) {
	for i, q := range qs {
		q.err = fmt.Errorf("%s: %w", c.itemWhere(q, i, len(qs)), err)
	}
}

// itemWhere names close i of a batch of n in errors.
func (c *Closer) itemWhere(q *queued, i, n int) string {
	return fmt.Sprintf("http close task %q: POST %s (item %d of a batch of %d)", q.t.ID, c.cfg.BatchURL, i+1, n)
}

// settleBatch sets the outcome of each close of qs from the answer to their
// batch: per item for a well-formed 2xx answer, otherwise the batch's
// error for every close (batchError).
func (c *Closer) settleBatch(qs []*queued, resp *http.Response, data []byte) {
	after, hasAfter := retryAfterOf(resp, c.clock.Now())
	if err := batchError(resp, data); err != nil {
		if hasAfter && !closer.IsPermanent(err) {
			err = closer.RetryAfter(err, after)
		}
		c.failAll(qs, err)
		return
	}
	answers, unmatched, err := matchAnswers(data, qs)
	if err != nil {
		c.failAll(qs, fmt.Errorf("%s: malformed answer: %w", resp.Status, err))
		return
	}
	for i, q := range qs {
		if q.err = unmatched[i]; q.err == nil {
			q.res, q.err = c.itemResult(answers[i])
		}
		if q.err != nil {
			err := fmt.Errorf("%s: %w", c.itemWhere(q, i, len(qs)), q.err)
			if _, marked := closer.RetryAfterOf(err); !marked && hasAfter && !closer.IsPermanent(err) {
				err = closer.RetryAfter(err, after)
			}
			q.err = err
		}
	}
}

// batchError maps the status of a batch answer that is not 2xx to the
// error every close of the batch gets: retryable for 408, 413, 425, 429
// and 5xx, permanent otherwise. A 404 or 409 here is about the batch
// endpoint, not about an order.
func batchError(resp *http.Response, data []byte) error {
	code := resp.StatusCode
	switch {
	case code >= 200 && code <= 299:
		return nil
	case code == http.StatusRequestEntityTooLarge:
		return fmt.Errorf("%s: the batch is too large for the endpoint; lower max_batch%s", resp.Status, excerpt(data))
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return fmt.Errorf("%s%s", resp.Status, excerpt(data))
	case code >= 300 && code <= 399:
		return closer.Permanent(fmt.Errorf("%s to %q: redirects are not followed; set batch_url to the final address%s",
			resp.Status, resp.Header.Get("Location"), excerpt(data)))
	case code == http.StatusNotFound:
		return closer.Permanent(fmt.Errorf("%s: no batch endpoint at batch_url%s", resp.Status, excerpt(data)))
	}
	return closer.Permanent(fmt.Errorf("%s%s", resp.Status, excerpt(data)))
}

// jsonText returns a JSON string's text, or the JSON text of any other
// value; "" for none or null.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

// checkBatch checks batch_url and max_batch: batch_url instead of url,
// with no placeholder, and the POST method.
func (c Config) checkBatch(p *closer.Problems) {
	if c.MaxBatch < 1 || c.MaxBatch > maxMaxBatch {
		p.Add("max_batch", "%d: want 1 to %d", c.MaxBatch, maxMaxBatch)
	}
	if c.BatchURL == "" {
		return
	}
	if c.URL != "" {
		p.Add("batch_url", "set together with url: give one (url sends one request per close, batch_url batches)")
	}
	if strings.Contains(c.BatchURL, PlaceholderID) || strings.Contains(c.BatchURL, PlaceholderKind) {
		p.Add("batch_url", "%q has a placeholder: a batch carries many tasks, their ids and kinds are in its body", c.BatchURL)
	} else if _, err := parseTemplate(c.BatchURL); err != nil {
		p.Add("batch_url", "%v", err)
	}
	if c.Method != "" && !strings.EqualFold(c.Method, http.MethodPost) {
		p.Add("method", "%q: a batch is always POST; method applies to url only", c.Method)
	}
}
