package httpcloser

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
)

// Request headers sent with every close.
const (
	// HeaderIdempotencyKey is "hourglass:<kind>:<id>": the same for every
	// attempt and every duplicate delivery of a task, so that the service
	// can recognise a repeated close.
	HeaderIdempotencyKey = "Idempotency-Key"
	// HeaderKind is the task kind.
	HeaderKind = "Hourglass-Kind"
	// HeaderDue is the due time of the task, unix milliseconds.
	HeaderDue = "Hourglass-Due"
	// HeaderAttempt is the close attempt, from 1.
	HeaderAttempt = "Hourglass-Attempt"
	// UserAgent is the User-Agent of every request.
	UserAgent = "hourglass"
)

// Limits on what is read from an answer.
const (
	maxBody       = 64 << 10 // bytes of an answer body read
	maxExcerpt    = 200      // bytes of an error body quoted in the error
	maxDetail     = 200      // bytes of an answer's detail kept in the Result
	maxRetryAfter = time.Hour
)

// Closer closes a task with an HTTP request; see the package documentation
// for the request it sends and how it reads the answer. It is safe for
// concurrent use. Create it with New.
type Closer struct {
	cfg       Config
	method    string
	url       urlTemplate
	transport *http.Transport
	client    *http.Client
	clock     clock.Clock
	bearer    *cachedSecret // nil without bearer_token
	password  *cachedSecret // nil without basic_auth
	batch     *batcher      // nil without batch_url
}

var (
	_ closer.Closer  = (*Closer)(nil)
	_ closer.Stopper = (*Closer)(nil)
)

// New returns the closer cfg describes, after applying its defaults. It
// returns every problem Validate finds, joined.
func New(cfg Config) (*Closer, error) { return newCloser(cfg, clock.Real{}) }

func newCloser(cfg Config, clk clock.Clock) (*Closer, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("http closer: %w", err)
	}
	var tmpl urlTemplate
	if cfg.URL != "" {
		var err error
		if tmpl, err = parseTemplate(cfg.URL); err != nil { // Validate parsed it already
			return nil, fmt.Errorf("http closer: url: %w", err)
		}
	}
	tlsConf, err := cfg.TLS.Config()
	if err != nil {
		return nil, fmt.Errorf("http closer: %w", err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = cfg.MaxIdleConnsPerHost
	tr.MaxIdleConns = max(tr.MaxIdleConns, cfg.MaxIdleConnsPerHost)
	if tlsConf != nil {
		tr.TLSClientConfig = tlsConf
	}
	c := &Closer{
		cfg:       cfg,
		method:    strings.ToUpper(cfg.Method),
		url:       tmpl,
		transport: tr,
		client: &http.Client{
			Transport: tr,
			// Redirects are not followed: a POST redirected with 301 or 302
			// would turn into a GET, and credentials must not follow the
			// request elsewhere. A 3xx answer is a permanent error.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		clock: clk,
	}
	if !cfg.BearerToken.IsZero() {
		c.bearer = &cachedSecret{secret: cfg.BearerToken, clock: clk}
	}
	if !cfg.BasicAuth.IsZero() {
		c.password = &cachedSecret{secret: cfg.BasicAuth.Password, clock: clk}
	}
	if cfg.BatchURL != "" {
		c.batch = &batcher{run: c.runBatch, max: cfg.MaxBatch}
	}
	return c, nil
}

// Stop closes the idle connections. A Close after Stop opens new ones.
func (c *Closer) Stop() error {
	c.transport.CloseIdleConnections()
	return nil
}

// Batches reports whether c posts the closes ready at the same moment as
// one request: with batch_url (closer.Batcher). Without it, each close is
// a request of its own.
func (c *Closer) Batches() bool { return c.cfg.BatchURL != "" }

// Close sends the close request of t and maps the answer to a Result:
// 2xx is Closed, 409 the configured conflict outcome, 404 NotFound, unless a
// JSON body names another outcome. 408, 425, 429, 5xx answers, network
// errors and timeouts are retryable errors (marked with closer.RetryAfter
// when the answer has a Retry-After header); any other answer is a
// closer.Permanent error. A task whose id or kind would put a dot segment
// into the URL path (see dotSegment) is a closer.Permanent error, and no
// request is sent. With Config.BatchURL the close goes in a batch instead
// (see the package documentation).
func (c *Closer) Close(ctx context.Context, t closer.Task) (closer.Result, error) {
	if c.batch != nil {
		return c.closeBatched(ctx, t)
	}
	target := c.url.expand(t.ID, t.Kind)
	where := fmt.Sprintf("http close task %q: %s %s", t.ID, c.method, target)
	if t.ID == "" {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: the task has no id", where))
	}
	idem := "hourglass:" + t.Kind + ":" + t.ID
	if !validHeaderValue(idem) {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: the task id or kind has a control character, which cannot be sent in %s", where, HeaderIdempotencyKey))
	}
	if seg, ok := dotSegment(target); ok {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: refused: the task id or kind puts the dot segment %q into the URL path "+
			"(%%2F and '\\' count as separators, as some proxies decode them), which servers and proxies resolve to another path", where, seg))
	}
	auth, err := c.authorization(false)
	if err != nil {
		return closer.Result{}, fmt.Errorf("%s: %w", where, err)
	}
	res, status, err := c.do(ctx, t, target, where, idem, auth)
	if status == http.StatusUnauthorized && auth != "" {
		// The secret may have been rotated since it was last read: read it
		// again, and try once more if it changed.
		if fresh, ferr := c.authorization(true); ferr == nil && fresh != auth {
			res, _, err = c.do(ctx, t, target, where, idem, fresh)
		}
	}
	return res, err
}

// do sends one request and reads its answer. status is 0 when no answer
// came.
func (c *Closer) do(ctx context.Context, t closer.Task, target, where, idem, auth string) (closer.Result, int, error) {
	rctx, cancel := context.WithTimeout(ctx, c.cfg.Timeout)
	defer cancel()
	var body io.Reader
	if c.cfg.Body == BodyPayload {
		body = bytes.NewReader(t.Payload)
	}
	req, err := http.NewRequestWithContext(rctx, c.method, target, body)
	if err != nil {
		return closer.Result{}, 0, closer.Permanent(fmt.Errorf("%s: %w", where, err))
	}
	h := req.Header
	for k, v := range c.cfg.Headers {
		h.Set(k, v)
	}
	if c.cfg.Body == BodyPayload {
		h.Set("Content-Type", c.cfg.ContentType)
	}
	if auth != "" {
		h.Set("Authorization", auth)
	}
	h.Set("User-Agent", UserAgent)
	h.Set(HeaderIdempotencyKey, idem)
	if t.Kind != "" {
		h.Set(HeaderKind, t.Kind)
	}
	if !t.Meta.Due.IsZero() {
		h.Set(HeaderDue, strconv.FormatInt(t.Meta.Due.UnixMilli(), 10))
	}
	h.Set(HeaderAttempt, strconv.Itoa(t.Attempt))

	resp, err := c.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // it repeats the method and URL
		}
		switch {
		case ctx.Err() != nil:
			return closer.Result{}, 0, fmt.Errorf("%s: %w", where, ctx.Err())
		case rctx.Err() != nil:
			return closer.Result{}, 0, fmt.Errorf("%s: no answer within the timeout %v: %w", where, c.cfg.Timeout, rctx.Err())
		}
		return closer.Result{}, 0, fmt.Errorf("%s: %w", where, err)
	}
	data, readErr := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	res, err := c.mapAnswer(resp, data, readErr)
	if err != nil {
		err = fmt.Errorf("%s: %w", where, err)
		if d, ok := retryAfterOf(resp, c.clock.Now()); ok && !closer.IsPermanent(err) {
			err = closer.RetryAfter(err, d)
		}
	}
	return res, resp.StatusCode, err
}

// mapAnswer maps an answer to a result or an error; readErr is the error of
// reading its body.
func (c *Closer) mapAnswer(resp *http.Response, body []byte, readErr error) (closer.Result, error) {
	code := resp.StatusCode
	var o outcome.Outcome
	switch {
	case code >= 200 && code <= 299:
		o = outcome.Closed
	case code == http.StatusConflict:
		o = c.cfg.ConflictOutcome
	case code == http.StatusNotFound:
		return closer.Result{Outcome: outcome.NotFound}, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		return closer.Result{}, fmt.Errorf("%s%s", resp.Status, excerpt(body))
	case code >= 300 && code <= 399:
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s to %q: redirects are not followed; set url to the final address%s",
			resp.Status, resp.Header.Get("Location"), excerpt(body)))
	default:
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s%s", resp.Status, excerpt(body)))
	}
	if readErr != nil {
		// The body may name another outcome; ask again rather than guess.
		return closer.Result{}, fmt.Errorf("%s: reading the answer: %w", resp.Status, readErr)
	}
	res, err := answerOutcome(body)
	if err != nil {
		return closer.Result{}, closer.Permanent(fmt.Errorf("%s: %w", resp.Status, err))
	}
	if res.Outcome == "" {
		res.Outcome = o
	}
	return res, nil
}

// retryAfterOf reads the Retry-After header of a retryable answer, in
// seconds or as an HTTP date, capped at maxRetryAfter. ok is false without
// a usable positive delay.
func retryAfterOf(resp *http.Response, now time.Time) (d time.Duration, ok bool) {
	v := strings.TrimSpace(resp.Header.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseUint(v, 10, 64); err == nil {
		if secs >= uint64(maxRetryAfter/time.Second) {
			return maxRetryAfter, true
		}
		d = time.Duration(secs) * time.Second
	} else if at, err := http.ParseTime(v); err == nil {
		d = min(at.Sub(now), maxRetryAfter)
	} else if digits(v) { // too many digits for a uint64
		return maxRetryAfter, true
	}
	return d, d > 0
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// excerpt returns ": " and the quoted start of an error body, or "".
func excerpt(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return ""
	}
	return ": " + strconv.Quote(clip(string(body), maxExcerpt))
}

// clip cuts s to at most n bytes on a rune boundary, marking a cut with
// "...", and replaces invalid UTF-8.
func clip(s string, n int) string {
	if len(s) > n {
		cut := n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// authorization returns the Authorization header value, or "" without
// credentials; force reads the secret again.
func (c *Closer) authorization(force bool) (string, error) {
	var v string
	switch {
	case c.bearer != nil:
		tok, err := c.bearer.get(force)
		if err != nil {
			return "", fmt.Errorf("bearer_token %s: %w", c.cfg.BearerToken, err)
		}
		v = "Bearer " + tok
	case c.password != nil:
		pass, err := c.password.get(force)
		if err != nil {
			return "", fmt.Errorf("basic_auth.password %s: %w", c.cfg.BasicAuth.Password, err)
		}
		v = "Basic " + base64.StdEncoding.EncodeToString([]byte(c.cfg.BasicAuth.Username+":"+pass))
	default:
		return "", nil
	}
	if !validHeaderValue(v) {
		return "", errors.New("the credential has a control character and cannot be sent")
	}
	return v, nil
}

// cachedSecret resolves a secret at most every secretTTL.
type cachedSecret struct {
	secret credential.Secret
	clock  clock.Clock

	mu    sync.Mutex
	value string
	read  time.Time // zero until the first successful read
}

// get returns the secret, read again when it is older than secretTTL or
// force is set. A failed read is returned and not cached.
func (s *cachedSecret) get(force bool) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	if !force && !s.read.IsZero() && now.Sub(s.read) < secretTTL {
		return s.value, nil
	}
	v, err := s.secret.Resolve()
	if err != nil {
		return "", err
	}
	if v == "" {
		return "", errors.New("the secret is empty")
	}
	s.value, s.read = v, now
	return v, nil
}
