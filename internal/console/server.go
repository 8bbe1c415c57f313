package console

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"embed"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/clock"
	"github.com/hourglass/hourglass/internal/field"
)

// Bounds of the HTTP server.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 64 << 10
	// maxFormBytes bounds the body of a POST: a form of a few fields, and
	// at most MaxRows picks of dead letters.
	maxFormBytes = 1 << 20
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options are what the console works with besides its Config.
type Options struct {
	// Kafka are the client options of the pipeline's cluster (seeds, TLS,
	// SASL); required. The console reads the dead-letter topic and, with
	// actions, produces replays, cancellations and reschedules.
	Kafka []kgo.Opt
	// Store is the ClickHouse store of outcomes and the deadline index;
	// required.
	Store *chstore.Store
	// Clock is the console's clock; default the wall clock.
	Clock clock.Clock
	// Logger logs requests that failed; default none.
	Logger *slog.Logger
}

// Server is the console. Create one with New, run it with Run or Serve.
type Server struct {
	cfg      Config
	kafka    []kgo.Opt
	store    *chstore.Store
	clock    clock.Clock
	log      *slog.Logger
	token    []byte      // the access token; nil without Config.TokenFile
	tls      *tls.Config // nil for plain HTTP
	producer *kgo.Client // replays and cancellations; nil when read-only
	pages    pages
	handler  http.Handler
	logins   *loginLimiter
}

// New returns the console of cfg, completed with WithDefaults and
// validated. It reads the token and TLS files; it connects to nothing yet.
func New(cfg Config, o Options) (*Server, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if o.Store == nil || len(o.Kafka) == 0 {
		return nil, errors.New("console: Options.Store and Options.Kafka are required")
	}
	s := &Server{cfg: cfg, kafka: o.Kafka, store: o.Store, clock: o.Clock, log: o.Logger, logins: newLoginLimiter()}
	if s.clock == nil {
		s.clock = clock.Real{}
	}
	if s.log == nil {
		s.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	var err error
	if cfg.TokenFile != "" {
		if s.token, err = readToken(cfg.TokenFile); err != nil {
			return nil, err
		}
	}
	if cfg.TLS.CertFile != "" {
		if s.tls, err = serverTLS(cfg.TLS); err != nil {
			return nil, err
		}
	}
	if s.pages, err = parsePages(); err != nil {
		return nil, err
	}
	if cfg.AllowActions {
		if s.producer, err = kgo.NewClient(o.Kafka...); err != nil {
			return nil, fmt.Errorf("console: kafka client: %w", err)
		}
	}
	s.handler = s.routes()
	return s, nil
}

// CheckFiles validates cfg, completed with WithDefaults, and reads its
// token and TLS files, as New does; it connects to nothing. Its errors
// are *field.Error values naming the field.
func CheckFiles(cfg Config) error {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return err
	}
	var errs []error
	if cfg.TokenFile != "" {
		_, err := readToken(cfg.TokenFile)
		errs = append(errs, err)
	}
	if cfg.TLS.CertFile != "" {
		_, err := serverTLS(cfg.TLS)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// minTokenBytes is the shortest token accepted: a guessable token is no
// token.
const minTokenBytes = 16

// readToken reads the token of file, without a trailing newline.
func readToken(file string) ([]byte, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, field.Errorf("TokenFile", "%v", err)
	}
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	if len(b) < minTokenBytes {
		return nil, field.Errorf("TokenFile", "%s holds %d bytes, want at least %d", file, len(b), minTokenBytes)
	}
	return b, nil
}

// serverTLS returns the TLS configuration of t: its certificate and, with a
// client CA, verified client certificates required.
func serverTLS(t ServerTLS) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
	if err != nil {
		return nil, field.Errorf("TLS.CertFile", "%v", err)
	}
	c := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if t.ClientCAFile != "" {
		pem, err := os.ReadFile(t.ClientCAFile)
		if err != nil {
			return nil, field.Errorf("TLS.ClientCAFile", "%v", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, field.Errorf("TLS.ClientCAFile", "%s holds no PEM certificate", t.ClientCAFile)
		}
		c.ClientCAs, c.ClientAuth = pool, tls.RequireAndVerifyClientCert
	}
	return c, nil
}

// Config returns the console's configuration, defaults applied.
func (s *Server) Config() Config { return s.cfg }

// Handler returns the console's HTTP handler, every check included.
func (s *Server) Handler() http.Handler { return s.handler }

// Run listens on Config.Listen and serves until ctx ends (see Serve).
func (s *Server) Run(ctx context.Context) error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		s.Close()
		return fmt.Errorf("console: %w", err)
	}
	return s.Serve(ctx, ln)
}

// Serve serves on ln until ctx ends, then shuts down: it stops accepting,
// waits up to Config.ShutdownTimeout for the requests in flight (each
// bounded by Config.RequestTimeout), closes the rest, and closes the Kafka
// client. It closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	defer s.Close()
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		// A response takes at most the request's work and its writing.
		WriteTimeout:   s.cfg.RequestTimeout + 10*time.Second,
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
		ErrorLog:       slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		BaseContext:    func(net.Listener) context.Context { return context.WithoutCancel(ctx) },
	}
	if s.tls != nil {
		srv.TLSConfig = s.tls
		ln = tls.NewListener(ln, s.tls)
	}
	s.log.Info("console listening", "addr", ln.Addr().String(), "actions", s.cfg.AllowActions, "tls", s.tls != nil)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("console: %w", err)
	case <-ctx.Done():
	}
	// Stop accepting and let the requests in flight finish; past the
	// deadline, close their connections.
	sctx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	err := srv.Shutdown(sctx)
	if err != nil {
		_ = srv.Close()
	}
	if serr := <-done; !errors.Is(serr, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", serr)
	}
	if err != nil {
		return fmt.Errorf("console: shutdown: %w", err)
	}
	return nil
}

// Close closes the Kafka client. Serve calls it when it returns.
func (s *Server) Close() {
	if s.producer != nil {
		s.producer.Close()
	}
}
