package console

import (
	"errors"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Defaults of Config.
const (
	// DefaultListen is the address the console listens on: loopback only.
	DefaultListen = "127.0.0.1:8089"
	// DefaultWindow is how far back the overview's outcomes and lateness
	// reach.
	DefaultWindow = time.Hour
	// DefaultForecast is how far ahead the overview's forecast reaches.
	DefaultForecast = 3 * time.Hour
	// DefaultMaxRows bounds the rows of every table of a page.
	DefaultMaxRows = 200
	// DefaultRequestTimeout bounds the work of one request, its queries
	// and produces.
	DefaultRequestTimeout = 20 * time.Second
	// DefaultShutdownTimeout bounds the wait for requests in flight at
	// shutdown.
	DefaultShutdownTimeout = 10 * time.Second
	// DefaultLateThreshold: a final close attempt later than this counts as
	// late on the overview.
	DefaultLateThreshold = time.Second
)

// maxRowsLimit is the most Config.MaxRows may be: a page is for reading.
const maxRowsLimit = 10_000

// ServerTLS are the console's own TLS settings. The zero value serves
// plain HTTP.
type ServerTLS struct {
	// CertFile and KeyFile are the PEM certificate and key the console
	// serves HTTPS with; both or neither.
	CertFile string
	KeyFile  string
	// ClientCAFile, when set, is a PEM file of the CAs whose client
	// certificates the console requires of every connection; it needs
	// CertFile and KeyFile.
	ClientCAFile string
}

// Config configures the console. Zero fields take the defaults named on
// them (see WithDefaults).
type Config struct {
	// Listen is the TCP address to listen on; default DefaultListen
	// (127.0.0.1:8089). An address that is not loopback needs TokenFile or
	// TLS.ClientCAFile when AllowActions is set.
	Listen string
	// AllowActions enables replay, cancel and reschedule; default false:
	// read-only.
	AllowActions bool
	// TokenFile is a file holding the access token (a trailing newline is
	// trimmed; at least 16 bytes); default none. When set, every page
	// needs it.
	TokenFile string
	// TLS serves HTTPS, and with a client CA requires client
	// certificates; default plain HTTP.
	TLS ServerTLS

	// Prefix is the prefix of the pipeline's topic names; default
	// tiers.DefaultPrefix.
	Prefix string
	// Tiers are the router's delay tiers; default tiers.DefaultTable().
	Tiers tiers.Table
	// Targets are the target topics the canceller consumes; default
	// <Prefix>cancel. A dead letter from one of them replays there.
	Targets []string
	// DeadLetterTopic is the dead-letter topic; default <Prefix>dlq.
	DeadLetterTopic string
	// CancellationsTopic is the compacted topic of cancellations; default
	// <Prefix>cancellations.
	CancellationsTopic string

	// Window is how far back the overview's outcomes reach; default
	// DefaultWindow (1h).
	Window time.Duration
	// Forecast is how far ahead the overview's forecast reaches; default
	// DefaultForecast (3h).
	Forecast time.Duration
	// LateThreshold: a final attempt later than this is late; default
	// DefaultLateThreshold (1s).
	LateThreshold time.Duration
	// MaxRows bounds every table of a page; default DefaultMaxRows (200),
	// at most 10,000.
	MaxRows int
	// RequestTimeout bounds one request's work; default
	// DefaultRequestTimeout (20s).
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the wait for requests in flight when the
	// console stops; default DefaultShutdownTimeout (10s).
	ShutdownTimeout time.Duration
}

// WithDefaults returns c with every zero field that has a default set to it.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	if c.Prefix == "" {
		c.Prefix = tiers.DefaultPrefix
	}
	if c.Tiers.Len() == 0 {
		c.Tiers = tiers.DefaultTable()
	}
	if len(c.Targets) == 0 {
		c.Targets = []string{tiers.CancelTopic(c.Prefix)}
	}
	if c.DeadLetterTopic == "" {
		c.DeadLetterTopic = tiers.DeadLetterTopic(c.Prefix)
	}
	if c.CancellationsTopic == "" {
		c.CancellationsTopic = tiers.CancellationsTopic(c.Prefix)
	}
	setDefault(&c.Window, DefaultWindow)
	setDefault(&c.Forecast, DefaultForecast)
	setDefault(&c.LateThreshold, DefaultLateThreshold)
	setDefault(&c.RequestTimeout, DefaultRequestTimeout)
	setDefault(&c.ShutdownTimeout, DefaultShutdownTimeout)
	if c.MaxRows == 0 {
		c.MaxRows = DefaultMaxRows
	}
	return c
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d == 0 {
		*d = def
	}
}

// Loopback reports whether c.Listen names a loopback address (127.0.0.0/8,
// ::1 or localhost): only this machine can connect.
func (c Config) Loopback() bool {
	host, _, err := net.SplitHostPort(c.Listen)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Authenticated reports whether c makes clients prove who they are: a
// token or client certificates.
func (c Config) Authenticated() bool { return c.TokenFile != "" || c.TLS.ClientCAFile != "" }

// Validate reports every problem with c, each a *field.Error naming the
// field. Call it after WithDefaults: a zero field is reported.
func (c Config) Validate() error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if host, port, err := net.SplitHostPort(c.Listen); err != nil {
		bad("Listen", "%q: want host:port", c.Listen)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || (n == 0 && port != "0") {
		bad("Listen", "%q: bad port %q", c.Listen, port)
	} else if host == "" {
		bad("Listen", "%q: name the host to listen on (127.0.0.1 for this machine only, 0.0.0.0 for every interface)", c.Listen)
	}
	if c.AllowActions && !c.Loopback() && !c.Authenticated() {
		bad("AllowActions", "the console listens on %s, beyond loopback: actions need %s or %s",
			c.Listen, field.Ref("TokenFile"), field.Ref("TLS.ClientCAFile"))
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		if c.TLS.CertFile == "" {
			bad("TLS.KeyFile", "set without %s", field.Ref("TLS.CertFile"))
		} else {
			bad("TLS.CertFile", "set without %s", field.Ref("TLS.KeyFile"))
		}
	}
	if c.TLS.ClientCAFile != "" && c.TLS.CertFile == "" {
		bad("TLS.ClientCAFile", "needs %s and %s: client certificates are asked for in a TLS handshake", field.Ref("TLS.CertFile"), field.Ref("TLS.KeyFile"))
	}
	for _, t := range []struct{ f, topic string }{
		{"DeadLetterTopic", c.DeadLetterTopic}, {"CancellationsTopic", c.CancellationsTopic}, {"Prefix", tiers.CancelTopic(c.Prefix)},
	} {
		if err := tiers.ValidTopic(t.topic); err != nil {
			bad(t.f, "%v", err)
		}
	}
	for _, t := range c.Targets {
		if err := tiers.ValidTopic(t); err != nil {
			bad("Targets", "%v", err)
		} else if t == c.DeadLetterTopic {
			bad("Targets", "%s is the dead-letter topic", t)
		}
	}
	if c.Tiers.Len() == 0 {
		bad("Tiers", "no tiers")
	}
	for _, d := range []struct {
		f string
		v time.Duration
	}{
		{"Window", c.Window}, {"Forecast", c.Forecast},
		{"RequestTimeout", c.RequestTimeout}, {"ShutdownTimeout", c.ShutdownTimeout},
	} {
		if d.v <= 0 {
			bad(d.f, "%v: must be positive", d.v)
		}
	}
	if c.LateThreshold < 0 {
		bad("LateThreshold", "%v: must not be negative", c.LateThreshold)
	}
	if c.MaxRows <= 0 || c.MaxRows > maxRowsLimit {
		bad("MaxRows", "%d: want 1 to %d", c.MaxRows, maxRowsLimit)
	}
	return errors.Join(errs...)
}
