package httpcloser

import (
	"errors"
	"fmt"
	"mime"
	"net/textproto"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/outcome"
)

// Defaults of Config.
const (
	DefaultMethod              = "POST"
	DefaultBody                = BodyPayload
	DefaultContentType         = "application/json"
	DefaultTimeout             = 5 * time.Second
	DefaultConflictOutcome     = outcome.AlreadyClosed
	DefaultMaxIdleConnsPerHost = 100
	DefaultMaxBatch            = 100
)

// Values of Config.Body.
const (
	// BodyPayload sends the task payload unchanged as the request body.
	BodyPayload = "payload"
	// BodyNone sends no body and no Content-Type.
	BodyNone = "none"
)

// Placeholders of Config.URL.
const (
	PlaceholderID   = "{id}"   // the task id, escaped
	PlaceholderKind = "{kind}" // the task kind, escaped
)

// secretTTL is how long a resolved secret is used before it is resolved
// again, so that a rotated secret file is picked up without reading it on
// every request.
const secretTTL = 10 * time.Second

// Config is the configuration of an http closer, decoded from the closers
// file:
//
//	http:
//	  url: https://orders.internal/api/orders/{id}/confirm
//	  bearer_token: {file: /var/run/secrets/orders/token}
//
// Zero fields take the defaults named on them (see WithDefaults); URL or
// BatchURL is required.
type Config struct {
	// URL is the address of the close, a template: {id} is replaced by the
	// task id and {kind} by the task kind, each escaped for where it stands
	// (path escaping before the '?', query escaping after it). A task whose
	// id or kind would make a "." or ".." path segment (".." itself, or
	// "../x" once a proxy decodes the escaped '/') is refused with a
	// permanent error, since servers and proxies that resolve dot segments
	// would send it to another path; in the query any id is sent. A path
	// with a dot segment of its own is refused here. The scheme is
	// http or https; credentials in the URL are refused (use BearerToken or
	// BasicAuth), and the URL appears in errors and logs, so it must hold no
	// secret. Required unless BatchURL is set.
	URL string `yaml:"url"`
	// BatchURL, instead of URL, closes in batches: the closes ready at the
	// same moment are POSTed together as one JSON array to this address,
	// which answers for each (see the package documentation for what it
	// must accept and answer). No placeholders; otherwise checked like URL.
	// Method and ContentType apply to URL only. Default "": one request
	// per close, to URL.
	BatchURL string `yaml:"batch_url"`
	// MaxBatch bounds the closes in one request to BatchURL (a batch is
	// also cut before its body passes 4 MiB); between 1 and 10000. Default
	// DefaultMaxBatch (100).
	MaxBatch int `yaml:"max_batch"`
	// Method is the HTTP method: POST, PUT, PATCH or DELETE. GET, HEAD and
	// other safe methods are refused: a close changes state. Default
	// DefaultMethod (POST).
	Method string `yaml:"method"`
	// Headers are extra request headers. Their values are not secrets (they
	// appear in the configuration). Headers that the closer sets itself
	// (Authorization, Content-Type, Idempotency-Key, User-Agent, Hourglass-*)
	// and hop-by-hop headers are refused. Default none.
	Headers map[string]string `yaml:"headers"`
	// Body is what the request carries: "payload", the task payload as it
	// was scheduled, or "none". Default DefaultBody ("payload").
	Body string `yaml:"body"`
	// ContentType is the Content-Type of a payload body. Default
	// DefaultContentType (application/json).
	ContentType string `yaml:"content_type"`
	// Timeout bounds one request, from dialing to the end of the answer;
	// the close's context bounds it too. Default DefaultTimeout (5s).
	Timeout time.Duration `yaml:"timeout"`
	// BearerToken is sent as "Authorization: Bearer <token>". It is
	// resolved again at most every 10s, so a rotated secret file is picked
	// up. At most one of BearerToken and BasicAuth. Default none.
	BearerToken credential.Secret `yaml:"bearer_token"`
	// BasicAuth is sent as HTTP basic authentication. Default none.
	BasicAuth BasicAuth `yaml:"basic_auth"`
	// TLS are the TLS client settings of an https URL: CA file, client
	// certificate, server name. Default: the system roots, no client
	// certificate.
	TLS credential.TLS `yaml:"tls"`
	// ConflictOutcome is the outcome of a 409 Conflict answer:
	// already_closed or skipped. Default DefaultConflictOutcome
	// (already_closed).
	ConflictOutcome outcome.Outcome `yaml:"conflict_outcome"`
	// MaxIdleConnsPerHost bounds the keep-alive connections kept open to
	// the server; set it to at least the canceller's concurrency. Default
	// DefaultMaxIdleConnsPerHost (100, the canceller's default
	// --max-in-flight for an http closer without batch_url).
	MaxIdleConnsPerHost int `yaml:"max_idle_conns_per_host"`
}

// BasicAuth is HTTP basic authentication. The zero value sends none.
type BasicAuth struct {
	// Username is the user name; it must not contain ':'.
	Username string `yaml:"username"`
	// Password is the password. It is resolved again at most every 10s, so
	// a rotated secret file is picked up.
	Password credential.Secret `yaml:"password"`
}

// IsZero reports whether no field is set.
func (b BasicAuth) IsZero() bool { return b == BasicAuth{} }

// WithDefaults returns c with every zero field set to its default.
func (c Config) WithDefaults() Config {
	if c.Method == "" {
		c.Method = DefaultMethod
	}
	if c.Body == "" {
		c.Body = DefaultBody
	}
	if c.ContentType == "" {
		c.ContentType = DefaultContentType
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ConflictOutcome == "" {
		c.ConflictOutcome = DefaultConflictOutcome
	}
	if c.MaxIdleConnsPerHost == 0 {
		c.MaxIdleConnsPerHost = DefaultMaxIdleConnsPerHost
	}
	if c.MaxBatch == 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	return c
}

// Methods a close may use, in the order error messages list them.
var methods = []string{"POST", "PUT", "PATCH", "DELETE"}

// reservedHeaders are set by the closer or by the HTTP client; Headers may
// not set them. Keys are canonical.
var reservedHeaders = []string{
	"Authorization", "Connection", "Content-Length", "Content-Type", "Host",
	"Idempotency-Key", "Keep-Alive", "Proxy-Authorization", "Te", "Trailer",
	"Transfer-Encoding", "Upgrade", "User-Agent",
}

// Validate reports every problem with c, as closer.Problems, each message
// starting with the YAML key. It does not apply defaults: a zero field that
// has a default is reported, so call it after WithDefaults. It resolves the
// secrets, so an unset environment variable or a missing file is reported
// here.
func (c Config) Validate() error {
	var p closer.Problems
	c.checkRequest(&p)
	c.checkBatch(&p)
	c.checkAuth(&p)
	p.AddNamed(c.TLS.Validate()...) // its messages start with tls.
	switch c.ConflictOutcome {
	case outcome.AlreadyClosed, outcome.Skipped:
	default:
		p.Add("conflict_outcome", "%q: want %q or %q", c.ConflictOutcome, outcome.AlreadyClosed, outcome.Skipped)
	}
	if c.MaxIdleConnsPerHost < 1 {
		p.Add("max_idle_conns_per_host", "%d: must be at least 1", c.MaxIdleConnsPerHost)
	}
	return p.Err()
}

// checkRequest checks what the request is made of: url, method, headers,
// body, content_type and timeout.
func (c Config) checkRequest(p *closer.Problems) {
	if c.URL == "" && c.BatchURL == "" {
		p.Add("url", "required (or batch_url)")
	} else if _, err := parseTemplate(c.URL); c.URL != "" && err != nil {
		p.Add("url", "%v", err)
	}
	if !slices.Contains(methods, strings.ToUpper(c.Method)) {
		if c.Method == "" {
			p.Add("method", "must not be empty")
		} else {
			p.Add("method", "%q: want one of %s (a close changes state)", c.Method, strings.Join(methods, ", "))
		}
	}
	names := make([]string, 0, len(c.Headers))
	for name := range c.Headers {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := checkHeader(name, c.Headers[name]); err != nil {
			p.Add("headers", "%v", err)
		}
	}
	switch c.Body {
	case BodyPayload, BodyNone:
	default:
		p.Add("body", "%q: want %q or %q", c.Body, BodyPayload, BodyNone)
	}
	if c.Body != BodyNone {
		if mt, _, err := mime.ParseMediaType(c.ContentType); err != nil || !strings.Contains(mt, "/") {
			p.Add("content_type", "%q is not a media type such as application/json", c.ContentType)
		} else if strings.ContainsAny(c.ContentType, "\r\n") {
			p.Add("content_type", "%q has a line break", c.ContentType)
		}
	}
	if c.Timeout <= 0 {
		p.Add("timeout", "%v: must be positive", c.Timeout)
	}
}

// checkAuth checks bearer_token and basic_auth: each well formed, at most
// one set.
func (c Config) checkAuth(p *closer.Problems) {
	if !c.BearerToken.IsZero() {
		if err := c.BearerToken.Validate(); err != nil {
			p.Add("bearer_token", "%v", err)
		}
		if !c.BasicAuth.IsZero() {
			p.Add("bearer_token", "set together with basic_auth: give one")
		}
	}
	if !c.BasicAuth.IsZero() {
		switch {
		case c.BasicAuth.Username == "":
			p.Add("basic_auth.username", "required")
		case strings.ContainsAny(c.BasicAuth.Username, ":\r\n"):
			p.Add("basic_auth.username", "must not contain ':' or a line break")
		}
		if c.BasicAuth.Password.IsZero() {
			p.Add("basic_auth.password", "required (env, file or value)")
		} else if err := c.BasicAuth.Password.Validate(); err != nil {
			p.Add("basic_auth.password", "%v", err)
		}
	}
}

// checkHeader reports a header name that is not an HTTP token, a value that
// cannot be sent, or a header the closer sets itself.
func checkHeader(name, value string) error {
	if !isToken(name) {
		return fmt.Errorf("%q is not a header name", name)
	}
	canon := textproto.CanonicalMIMEHeaderKey(name)
	if slices.Contains(reservedHeaders, canon) || strings.HasPrefix(canon, "Hourglass-") {
		return fmt.Errorf("%s is set by the closer; it cannot be configured here", canon)
	}
	if !validHeaderValue(value) {
		return fmt.Errorf("%s: the value has a control character", canon)
	}
	return nil
}

// urlTemplate is a parsed Config.URL: the part before the query and the
// query (with its '?'), which escape placeholders differently.
type urlTemplate struct {
	path, query string
}

// sampleID exercises the escaping of ids with reserved characters when a
// template is checked.
const sampleID = "sample/id ?#%&="

// parseTemplate checks raw as a URL template: only known placeholders, and
// with them replaced, an http or https URL with a host and no credentials.
func parseTemplate(raw string) (urlTemplate, error) {
	var t urlTemplate
	if i := strings.IndexByte(raw, '?'); i >= 0 {
		t.path, t.query = raw[:i], raw[i:]
	} else {
		t.path = raw
	}
	rest := strings.NewReplacer(PlaceholderID, "", PlaceholderKind, "").Replace(raw)
	if i := strings.IndexAny(rest, "{}"); i >= 0 {
		return t, fmt.Errorf("%q has %q outside a placeholder: the placeholders are %s and %s", raw, rest[i], PlaceholderID, PlaceholderKind)
	}
	u, err := url.Parse(t.expand(sampleID, "sample-kind"))
	if err != nil {
		return t, fmt.Errorf("%q with a sample id is not a URL: %w", raw, errors.Unwrap(err))
	}
	if seg, ok := dotSegmentOf(u); ok {
		return t, fmt.Errorf("%q has the dot segment %q in its path, which servers and proxies resolve; write the path it stands for", raw, seg)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return t, fmt.Errorf("%q: the scheme must be http or https", raw)
	case u.Host == "":
		return t, fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return t, fmt.Errorf("%q holds credentials; use bearer_token or basic_auth", u.Redacted())
	case u.Fragment != "":
		return t, fmt.Errorf("%q has a fragment, which is never sent", raw)
	}
	return t, nil
}

// expand returns the URL of a task.
func (t urlTemplate) expand(id, kind string) string {
	s := strings.NewReplacer(PlaceholderID, url.PathEscape(id), PlaceholderKind, url.PathEscape(kind)).Replace(t.path)
	if t.query != "" {
		s += strings.NewReplacer(PlaceholderID, url.QueryEscape(id), PlaceholderKind, url.QueryEscape(kind)).Replace(t.query)
	}
	return s
}

// dotSegment reports the first segment of target's path that servers and
// proxies resolve as a dot segment: "." or "..", in the path decoded once
// and split at '/' and '\'. Decoded, because some proxies decode %2F and
// %2E before they resolve dot segments (nginx does), so that an id "../x",
// sent as "..%2Fx", still climbs a level; '\', because some servers take
// it for '/'. An id "%2e%2e" is sent as "%252e%252e": one decoding gives
// "%2e%2e", no dot segment. A target that does not parse has none: the
// request cannot be made, and says so.
func dotSegment(target string) (string, bool) {
	u, err := url.Parse(target)
	if err != nil {
		return "", false
	}
	return dotSegmentOf(u)
}

// dotSegmentOf is dotSegment of a parsed URL.
func dotSegmentOf(u *url.URL) (string, bool) {
	// u.Path is the path decoded once.
	for _, seg := range strings.FieldsFunc(u.Path, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return seg, true
		}
	}
	return "", false
}

// isToken reports whether s is an HTTP token (RFC 9110 section 5.6.2).
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			continue
		}
		if !strings.ContainsRune("!#$%&'*+-.^_`|~", rune(c)) {
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s can be sent as a header value: no
// control characters other than tab.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}
