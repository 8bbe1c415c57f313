package httpcloser

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// batchAnswer is what the test batch endpoint answers to one request.
type batchAnswer struct {
	status  int // 0: 200
	headers map[string]string
	body    string
}

// batchServer is a batch endpoint on 127.0.0.1. A request whose first
// item's id starts with "hold" waits until release is called (at most
// waitBound) and is answered closed; any other is answered by answer.
type batchServer struct {
	url string

	mu       sync.Mutex
	batches  [][]batchItem // the items of each request that was not held
	requests []*http.Request
	held     chan struct{} // one value per held request that arrived
	release  func()
}

func newBatchServer(t *testing.T, answer func(items []batchItem) batchAnswer) *batchServer {
	t.Helper()
	release := make(chan struct{})
	s := &batchServer{held: make(chan struct{}, batchFlushers), release: sync.OnceFunc(func() { close(release) })}
	ts := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		data, err := io.ReadAll(r.Body)
		var items []batchItem
		if err == nil {
			err = json.Unmarshal(data, &items)
		}
		if err != nil || len(items) == 0 {
			t.Errorf("batch request body %q: %v", data, err)
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(items[0].ID, "hold") {
			s.held <- struct{}{}
			select {
			case <-release:
			case <-time.After(waitBound):
			}
			fmt.Fprint(w, answerAll(items, `"outcome":"closed"`))
			return
		}
		s.mu.Lock()
		s.batches = append(s.batches, items)
		s.requests = append(s.requests, r)
		s.mu.Unlock()
		a := answer(items)
		for k, v := range a.headers {
			w.Header().Set(k, v)
		}
		w.WriteHeader(orDefault(a.status, http.StatusOK))
		fmt.Fprint(w, a.body)
	})
	t.Cleanup(s.release) // before ts.Close
	s.url = ts.URL + "/api/orders/close-batch"
	return s
}

// answerAll is a batch answer that answers each of items with the JSON
// members fields, and its id.
func answerAll(items []batchItem, fields string) string {
	parts := make([]string, len(items))
	for i, it := range items {
		parts[i] = withID(it.ID, "{"+fields+"}")
	}
	return "[" + strings.Join(parts, ",") + "]"
}

// withID returns the JSON object obj with "id" set to id first.
func withID(id, obj string) string {
	rest := strings.TrimPrefix(obj, "{")
	if rest != "}" {
		rest = "," + rest
	}
	return fmt.Sprintf("{%q:%q%s", "id", id, rest)
}

func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// ids returns the task ids of each batch the server answered.
func (s *batchServer) ids() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, b := range s.batches {
		var ids []string
		for _, it := range b {
			ids = append(ids, it.ID)
		}
		out = append(out, ids)
	}
	return out
}

// closeTogether closes tasks while both flushers of c are held at s, so
// that they queue and go out together, and returns each close's result
// and error. ctxs, when not nil, are the contexts of the closes; queued,
// when not nil, runs once all are queued, before the flushers go on.
func closeTogether(t *testing.T, c *Closer, s *batchServer, tasks []closer.Task, ctxs []context.Context, queued func()) ([]closer.Result, []error) {
	t.Helper()
	var holders sync.WaitGroup
	for i := range batchFlushers {
		holders.Go(func() { _, _ = c.Close(t.Context(), task(fmt.Sprint("hold-", i), 1)) })
		select { // one at a time, so that each holds a flusher
		case <-s.held:
		case <-time.After(waitBound):
			t.Fatal("the holding request did not arrive")
		}
	}
	res, errs := make([]closer.Result, len(tasks)), make([]error, len(tasks))
	var wg sync.WaitGroup
	for i, tk := range tasks {
		ctx := t.Context()
		if ctxs != nil {
			ctx = ctxs[i]
		}
		wg.Go(func() { res[i], errs[i] = c.Close(ctx, tk) })
	}
	waitQueued(t, c, len(tasks))
	if queued != nil {
		queued()
	}
	s.release()
	wg.Wait()
	holders.Wait()
	return res, errs
}

// waitQueued waits until n closes are queued in c's batcher.
func waitQueued(t *testing.T, c *Closer, n int) {
	t.Helper()
	queued := func() int {
		c.batch.mu.Lock()
		defer c.batch.mu.Unlock()
		return len(c.batch.queue)
	}
	poll.Until(t, waitBound, fmt.Sprintf("%d closes queued", n), func() bool { return queued() == n },
		func() string { return fmt.Sprintf("%d queued", queued()) })
}

// TestBatchRequest: a batch is one POST of a JSON array to batch_url with
// the configured headers and credentials, and an item per close carrying
// its id, kind, due time, attempt, idempotency key and payload.
func TestBatchRequest(t *testing.T) {
	s := newBatchServer(t, func(items []batchItem) batchAnswer {
		return batchAnswer{body: answerAll(items, `"outcome":"closed"`)}
	})
	c := newTestCloser(t, Config{BatchURL: s.url, Headers: map[string]string{"X-Tenant": "eu-1"},
		BearerToken: credential.Secret{Value: "t0k"}}, nil)
	json1 := task("o-1", 2)
	text := task("o-2", 1)
	text.Payload = []byte("not json \x00")
	empty := task("o-3", 1)
	empty.Payload = nil
	res, errs := closeTogether(t, c, s, []closer.Task{json1, text, empty}, nil, nil)
	for i := range res {
		if errs[i] != nil || res[i].Outcome != outcome.Closed {
			t.Errorf("close %d = %+v, %v", i, res[i], errs[i])
		}
	}
	if got := s.ids(); len(got) != 1 || len(got[0]) != 3 {
		t.Fatalf("batches %q, want one of three", got)
	}
	s.mu.Lock()
	r := s.requests[0]
	s.mu.Unlock()
	for k, want := range map[string]string{"Content-Type": "application/json", "Authorization": "Bearer t0k",
		"User-Agent": UserAgent, "X-Tenant": "eu-1"} {
		if got := r.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/api/orders/close-batch" {
		t.Errorf("request %s %s", r.Method, r.URL.Path)
	}
	items := map[string]batchItem{}
	s.mu.Lock()
	first := s.batches[0]
	s.mu.Unlock()
	for _, it := range first {
		items[it.ID] = it
	}
	want := batchItem{ID: "o-1", Kind: "confirm-receipt", DueMs: due.UnixMilli(), Attempt: 2,
		IdempotencyKey: "hourglass:confirm-receipt:o-1", Payload: json.RawMessage(`{"order":"o-1"}`)}
	if got := items["o-1"]; !itemEqual(got, want) {
		t.Errorf("item o-1 = %+v, want %+v", got, want)
	}
	if got := items["o-2"]; got.Payload != nil || string(got.PayloadBase64) != "not json \x00" {
		t.Errorf("item o-2: payload %q, base64 %q; want the text in payload_base64", got.Payload, got.PayloadBase64)
	}
	if got := items["o-3"]; got.Payload != nil || got.PayloadBase64 != nil {
		t.Errorf("item o-3 of an empty payload = %+v", got)
	}

	none := newTestCloser(t, Config{BatchURL: s.url, Body: BodyNone}, nil)
	if _, err := none.Close(t.Context(), task("o-4", 1)); err != nil {
		t.Fatalf("Close with body none: %v", err)
	}
	s.mu.Lock()
	b := s.batches[len(s.batches)-1]
	s.mu.Unlock()
	if len(b) != 1 || b[0].Payload != nil || b[0].ID != "o-4" {
		t.Errorf("body none sent %+v; want no payload", b)
	}
}

func itemEqual(a, b batchItem) bool {
	return a.ID == b.ID && a.Kind == b.Kind && a.DueMs == b.DueMs && a.Attempt == b.Attempt &&
		a.IdempotencyKey == b.IdempotencyKey && bytes.Equal(a.Payload, b.Payload) && bytes.Equal(a.PayloadBase64, b.PayloadBase64)
}

// TestBatchItemOutcomes: each close of a batch gets the outcome or error
// of its own answer; a failing item leaves its neighbours closed, and its
// error is retryable or permanent as a single close's would be.
func TestBatchItemOutcomes(t *testing.T) {
	answers := map[string]string{
		"closed":        `{"status":200}`,
		"already":       `{"outcome":"already_closed"}`,
		"paid":          `{"status":200,"outcome":"skipped","detail":"PAID"}`,
		"conflict":      `{"status":409}`,
		"missing":       `{"status":404,"outcome":"closed"}`,
		"busy":          `{"status":503,"error":"db busy","retry_after":7}`,
		"busy-no-after": `{"status":500}`,
		"bad":           `{"status":400,"error":{"field":"payload"}}`,
		"unknown":       `{"status":200,"outcome":"exploded"}`,
		"empty":         `{}`,
		"odd-status":    `{"status":1200}`,
		"detail-number": `{"status":201,"detail":42}`,
	}
	s := newBatchServer(t, func(items []batchItem) batchAnswer {
		parts := make([]string, len(items))
		for i, it := range items {
			parts[i] = withID(it.ID, answers[it.ID])
		}
		return batchAnswer{body: "[" + strings.Join(parts, ",") + "]"}
	})
	c := newTestCloser(t, Config{BatchURL: s.url}, nil)
	var tasks []closer.Task
	for id := range answers {
		tasks = append(tasks, task(id, 1))
	}
	res, errs := closeTogether(t, c, s, tasks, nil, nil)
	if got := s.ids(); len(got) != 1 || len(got[0]) != len(tasks) {
		t.Fatalf("batches %q, want one of %d", got, len(tasks))
	}
	for _, tc := range []struct {
		id       string
		want     closer.Result
		wantErr  string // "", "retry" or "permanent"
		wantText string
		after    time.Duration
	}{
		{id: "closed", want: closer.Result{Outcome: outcome.Closed}},
		{id: "already", want: closer.Result{Outcome: outcome.AlreadyClosed}},
		{id: "paid", want: closer.Result{Outcome: outcome.Skipped, Detail: "PAID"}},
		{id: "conflict", want: closer.Result{Outcome: outcome.AlreadyClosed}},
		{id: "missing", want: closer.Result{Outcome: outcome.NotFound}},
		{id: "busy", wantErr: "retry", wantText: `503 Service Unavailable: "db busy"`, after: 7 * time.Second},
		{id: "busy-no-after", wantErr: "retry", wantText: "500 Internal Server Error"},
		{id: "bad", wantErr: "permanent", wantText: `400 Bad Request: "{\"field\":\"payload\"}"`},
		{id: "unknown", wantErr: "permanent", wantText: `outcome "exploded"`},
		{id: "empty", wantErr: "retry", wantText: "neither status nor outcome"},
		{id: "odd-status", wantErr: "retry", wantText: "status 1200"},
		{id: "detail-number", want: closer.Result{Outcome: outcome.Closed, Detail: "42"}},
	} {
		i := slices.IndexFunc(tasks, func(tk closer.Task) bool { return tk.ID == tc.id })
		got, err := res[i], errs[i]
		if errKind(err) != tc.wantErr || got != tc.want {
			t.Errorf("%s: Close = %+v, %v; want %+v, %q error", tc.id, got, err, tc.want, tc.wantErr)
			continue
		}
		if err == nil {
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, tc.wantText) || !strings.Contains(msg, fmt.Sprintf("task %q", tc.id)) ||
			!strings.Contains(msg, s.url) {
			t.Errorf("%s: error %q; want it to name the task, the batch URL and %q", tc.id, msg, tc.wantText)
		}
		if after, _ := closer.RetryAfterOf(err); after != tc.after {
			t.Errorf("%s: RetryAfterOf = %v, want %v", tc.id, after, tc.after)
		}
	}
}

// TestBatchFailure: an answer for the batch as a whole that is not 2xx
// fails each of its closes with the batch's error, retryable (honouring
// Retry-After) or permanent by its status; a 404 is about the endpoint,
// not the orders.
func TestBatchFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		answer   batchAnswer
		wantErr  string
		wantText string
		after    time.Duration
	}{
		{name: "503 with Retry-After", answer: batchAnswer{status: 503, headers: map[string]string{"Retry-After": "30"}, body: "overloaded"},
			wantErr: "retry", wantText: `503 Service Unavailable: "overloaded"`, after: 30 * time.Second},
		{name: "429", answer: batchAnswer{status: 429}, wantErr: "retry", wantText: "429 Too Many Requests"},
		{name: "502", answer: batchAnswer{status: 502}, wantErr: "retry", wantText: "502 Bad Gateway"},
		{name: "413", answer: batchAnswer{status: 413}, wantErr: "retry", wantText: "lower max_batch"},
		{name: "404", answer: batchAnswer{status: 404}, wantErr: "permanent", wantText: "no batch endpoint at batch_url"},
		{name: "400", answer: batchAnswer{status: 400, body: "bad json"}, wantErr: "permanent", wantText: `400 Bad Request: "bad json"`},
		{name: "409", answer: batchAnswer{status: 409}, wantErr: "permanent", wantText: "409 Conflict"},
		{name: "302", answer: batchAnswer{status: 302, headers: map[string]string{"Location": "/elsewhere"}}, wantErr: "permanent", wantText: "redirects are not followed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newBatchServer(t, func([]batchItem) batchAnswer { return tc.answer })
			c := newTestCloser(t, Config{BatchURL: s.url}, nil)
			tasks := []closer.Task{task("o-1", 1), task("o-2", 3), task("o-3", 1)}
			res, errs := closeTogether(t, c, s, tasks, nil, nil)
			if got := s.ids(); len(got) != 1 || len(got[0]) != 3 {
				t.Fatalf("batches %q, want one of three", got)
			}
			for i, err := range errs {
				if errKind(err) != tc.wantErr || res[i] != (closer.Result{}) {
					t.Errorf("%s: Close = %+v, %v; want a %s error", tasks[i].ID, res[i], err, tc.wantErr)
					continue
				}
				if msg := err.Error(); !strings.Contains(msg, tc.wantText) || !strings.Contains(msg, fmt.Sprintf("task %q", tasks[i].ID)) {
					t.Errorf("%s: error %q; want it to name the task and %q", tasks[i].ID, msg, tc.wantText)
				}
				if after, _ := closer.RetryAfterOf(err); after != tc.after {
					t.Errorf("%s: RetryAfterOf = %v, want %v", tasks[i].ID, after, tc.after)
				}
			}
		})
	}
}

// TestBatchMalformed: a 2xx answer that is not an array of objects, or is
// too long to read, fails every close of the batch with a retryable error.
func TestBatchMalformed(t *testing.T) {
	for _, tc := range []struct{ name, body, wantText string }{
		{"not JSON", "<html>ok</html>", "not a JSON array"},
		{"an object", `{"outcome":"closed"}`, "not a JSON array"},
		{"null", `null`, "not a JSON array"},
		{"empty", ``, "not a JSON array"},
		{"items not objects", `["closed","closed"]`, "not a JSON array"},
		{"truncated", `[{"outcome":"closed"},{"outc`, "not a JSON array"},
		{"too long", `[{"outcome":"closed","detail":"` + strings.Repeat("x", maxBatchAnswer) + `"},{"outcome":"closed"}]`, "longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newBatchServer(t, func([]batchItem) batchAnswer { return batchAnswer{body: tc.body} })
			c := newTestCloser(t, Config{BatchURL: s.url}, nil)
			_, errs := closeTogether(t, c, s, []closer.Task{task("o-1", 1), task("o-2", 1)}, nil, nil)
			for i, err := range errs {
				if errKind(err) != "retry" || !strings.Contains(err.Error(), "malformed answer: "+tc.wantText) {
					t.Errorf("close %d: error %v; want a retryable malformed answer: %s", i, err, tc.wantText)
				}
			}
		})
	}
}

// TestBatchAnswerIDs: the answer's items are matched to the closes by
// their "id", in any order; a close that no item names, or that two name,
// fails alone with a retryable error saying so, and its neighbours keep
// their answers. Matched by position, an answer in another order without
// ids gave each close another task's outcome.
func TestBatchAnswerIDs(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string
		want map[string]string // task id -> outcome, or the text of a retryable error
	}{
		{"in another order", `[{"id":"o-2","outcome":"skipped"},{"id":"o-1","outcome":"closed"}]`,
			map[string]string{"o-1": "closed", "o-2": "skipped"}},
		{"without ids", `[{"outcome":"closed"},{"outcome":"skipped"}]`, map[string]string{
			"o-1": `no item with id "o-1" (of its 2 items, 2 without an id: each item must name the id of its close)`,
			"o-2": `no item with id "o-2" (of its 2 items, 2 without an id`}},
		{"an id not in the batch", `[{"id":"o-1","outcome":"closed"},{"id":"o-9","outcome":"closed"}]`, map[string]string{
			"o-1": "closed", "o-2": `no item with id "o-2" (of its 2 items, 1 with an id not in the batch, such as "o-9"`}},
		{"too few", `[{"id":"o-2","outcome":"closed"}]`, map[string]string{"o-1": `no item with id "o-1"`, "o-2": "closed"}},
		{"an id twice", `[{"id":"o-1","status":200},{"id":"o-2","status":200},{"id":"o-1","status":503}]`,
			map[string]string{"o-1": `2 items with id "o-1"`, "o-2": "closed"}},
		{"none", `[]`, map[string]string{"o-1": `no item with id "o-1"`, "o-2": `no item with id "o-2"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := newBatchServer(t, func([]batchItem) batchAnswer { return batchAnswer{body: tc.body} })
			c := newTestCloser(t, Config{BatchURL: s.url}, nil)
			tasks := []closer.Task{task("o-1", 1), task("o-2", 1)}
			res, errs := closeTogether(t, c, s, tasks, nil, nil)
			if got := s.ids(); len(got) != 1 || len(got[0]) != 2 {
				t.Fatalf("batches %q, want one of two", got)
			}
			for i, tk := range tasks {
				want := tc.want[tk.ID]
				if outcome.Outcome(want).Final() {
					if errs[i] != nil || res[i].Outcome != outcome.Outcome(want) {
						t.Errorf("%s: Close = %+v, %v; want %s", tk.ID, res[i], errs[i], want)
					}
					continue
				}
				if errKind(errs[i]) != "retry" || !strings.Contains(errs[i].Error(), want) || !strings.Contains(errs[i].Error(), fmt.Sprintf("task %q", tk.ID)) {
					t.Errorf("%s: Close = %+v, %v; want a retryable error naming the task and saying %s", tk.ID, res[i], errs[i], want)
				}
			}
		})
	}
}

// TestBatchOneIDPerBatch: two closes of one task id queued together go
// out in two batches, so that the answer names each close by its id.
func TestBatchOneIDPerBatch(t *testing.T) {
	s := newBatchServer(t, func(items []batchItem) batchAnswer { return batchAnswer{body: answerAll(items, `"outcome":"closed"`)} })
	c := newTestCloser(t, Config{BatchURL: s.url}, nil)
	res, errs := closeTogether(t, c, s, []closer.Task{task("same", 1), task("other", 1), task("same", 2)}, nil, nil)
	for i := range res {
		if errs[i] != nil || res[i].Outcome != outcome.Closed {
			t.Errorf("close %d = %+v, %v", i, res[i], errs[i])
		}
	}
	got := s.ids()
	for _, b := range got {
		if n := len(slices.DeleteFunc(slices.Clone(b), func(id string) bool { return id != "same" })); n > 1 {
			t.Errorf("batches %q: task id same twice in one", got)
		}
	}
	if n := len(slices.Concat(got...)); n != 3 {
		t.Errorf("batches %q: %d closes sent, want 3", got, n)
	}
}

// TestBatchLimits: closes queued beyond max_batch go in further batches,
// none larger than max_batch.
func TestBatchLimits(t *testing.T) {
	s := newBatchServer(t, func(items []batchItem) batchAnswer {
		return batchAnswer{body: answerAll(items, `"status":204`)}
	})
	c := newTestCloser(t, Config{BatchURL: s.url, MaxBatch: 3}, nil)
	var tasks []closer.Task
	for i := range 10 {
		tasks = append(tasks, task(fmt.Sprint("o-", i), 1))
	}
	res, errs := closeTogether(t, c, s, tasks, nil, nil)
	for i := range tasks {
		if errs[i] != nil || res[i].Outcome != outcome.Closed {
			t.Errorf("close %d = %+v, %v", i, res[i], errs[i])
		}
	}
	total := 0
	for _, b := range s.ids() {
		total += len(b)
		if len(b) > 3 {
			t.Errorf("a batch of %d: %q; max_batch is 3", len(b), b)
		}
	}
	if total != len(tasks) {
		t.Errorf("%d closes sent, want %d", total, len(tasks))
	}
}

// TestBatchContextCanceled: a close whose context ends while it waits for
// its batch returns at once and is left out of the batch.
func TestBatchContextCanceled(t *testing.T) {
	s := newBatchServer(t, func(items []batchItem) batchAnswer { return batchAnswer{body: answerAll(items, `"outcome":"closed"`)} })
	c := newTestCloser(t, Config{BatchURL: s.url}, nil)
	ctx, cancel := context.WithCancel(t.Context())
	ctxs := []context.Context{ctx, t.Context()}
	res, errs := closeTogether(t, c, s, []closer.Task{task("gone", 1), task("kept", 1)}, ctxs, cancel)
	if !errors.Is(errs[0], context.Canceled) || errKind(errs[0]) != "retry" {
		t.Errorf("cancelled close: %v; want context.Canceled, retryable", errs[0])
	}
	if errs[1] != nil || res[1].Outcome != outcome.Closed {
		t.Errorf("other close = %+v, %v", res[1], errs[1])
	}
	if got := s.ids(); len(got) != 1 || !slices.Equal(got[0], []string{"kept"}) {
		t.Errorf("batches %q; want only the close still waiting", got)
	}
}

// TestBatchRefused: a task id that JSON cannot carry unchanged is a
// permanent error, and no request is sent; an unreachable endpoint is a
// retryable error.
func TestBatchRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c := newTestCloser(t, Config{BatchURL: "http://" + addr + "/close", Timeout: waitBound}, nil)
	for _, id := range []string{"", "o-\xff"} {
		if _, err := c.Close(t.Context(), task(id, 1)); errKind(err) != "permanent" {
			t.Errorf("Close(%q) error %v; want a permanent error", id, err)
		}
	}
	if _, err := c.Close(t.Context(), task("o-1", 1)); errKind(err) != "retry" || !strings.Contains(err.Error(), `task "o-1"`) {
		t.Errorf("Close to a closed port: %v; want a retryable error naming the task", err)
	}
}

// BenchmarkClose closes b.N tasks against a local endpoint that answers at
// once, one request per close (url) or in batches (batch_url), with 10 or
// 100 closes at once as the canceller's --max-in-flight allows, and
// reports closes/s and the requests per close.
func BenchmarkClose(b *testing.B) {
	var requests atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		var items []batchItem
		if r.URL.Path != "/batch" {
			_, _ = io.Copy(io.Discard, r.Body)
			w.WriteHeader(http.StatusOK)
			return
		}
		if err := json.NewDecoder(r.Body).Decode(&items); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		fmt.Fprint(w, answerAll(items, `"status":200`))
	}))
	defer ts.Close()
	for _, mode := range []string{"single", "batch"} {
		for _, workers := range []int{10, 100} {
			b.Run(fmt.Sprintf("%s_inflight_%d", mode, workers), func(b *testing.B) {
				cfg := Config{URL: ts.URL + "/close/{id}", MaxIdleConnsPerHost: workers}
				if mode == "batch" {
					cfg = Config{BatchURL: ts.URL + "/batch"}
				}
				c, err := New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = c.Stop() }()
				requests.Store(0)
				var next atomic.Int64
				var wg sync.WaitGroup
				b.ResetTimer()
				start := time.Now()
				for range workers {
					wg.Go(func() {
						for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
							if _, err := c.Close(context.Background(), task(fmt.Sprint("o-", i), 1)); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				wg.Wait()
				b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "closes/s")
				b.ReportMetric(float64(requests.Load())/float64(b.N), "requests/close")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}
