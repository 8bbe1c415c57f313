package console

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/term"
)

// contentSecurityPolicy allows the console's own origin only: no inline
// script, no inline style, nothing from elsewhere, no framing.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// routes returns the console's handler: the pages and actions behind the
// security headers, the cross-origin check of the standard library, the
// token check and the request timeout.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	mux.HandleFunc("GET /{$}", s.overview)
	mux.HandleFunc("GET /task", s.task)
	mux.HandleFunc("GET /dlq", s.deadLetters)
	mux.HandleFunc("GET /login", func(w http.ResponseWriter, r *http.Request) { s.render(w, r, "login", "Log in", loginPage{}) })
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("POST /logout", s.logout)
	mux.Handle("POST /dlq/replay", s.action(s.replay))
	mux.Handle("POST /task/cancel", s.action(s.cancel))
	mux.Handle("POST /task/reschedule", s.action(s.reschedule))

	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, r, http.StatusForbidden, "Refused: a state-changing request from another origin (cross-site request forgery protection). Use the console's own forms.")
	}))
	var h http.Handler = mux
	h = s.limitBody(h)
	h = s.timeout(h)
	h = s.requireAuth(h)
	h = cop.Handler(h)
	return securityHeaders(h)
}

// securityHeaders sets the headers of every response.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		if !strings.HasPrefix(r.URL.Path, "/static/") {
			h.Set("Cache-Control", "no-store")
		}
		next.ServeHTTP(w, r)
	})
}

// timeout bounds the work of each request by Config.RequestTimeout.
func (s *Server) timeout(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// limitBody bounds the body of every request.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		next.ServeHTTP(w, r)
	})
}

// readOnlyMessage is the answer to an action of a read-only console.
const readOnlyMessage = "This console is read-only: replay, cancel and reschedule are refused. " +
	"Actions are enabled when the console is started with them allowed (hourglass console --allow-actions)."

// action wraps an action's handler: refused in a read-only console, and
// refused without the form's per-browser token.
func (s *Server) action(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.cfg.AllowActions {
			s.fail(w, r, http.StatusForbidden, readOnlyMessage)
			return
		}
		if err := r.ParseForm(); err != nil {
			s.fail(w, r, http.StatusBadRequest, "Bad form: "+err.Error())
			return
		}
		if !s.csrfOK(r) {
			s.fail(w, r, http.StatusForbidden, "Refused: the form's security token is missing or stale (cross-site request forgery protection). Reload the page and try again.")
			return
		}
		h(w, r)
	})
}

// layout is the data of every page.
type layout struct {
	Title    string
	Nav      string // the page, for the navigation bar
	Actions  bool   // actions are allowed
	Token    bool   // the console has a token: show log out
	LoggedIn bool
	CSRF     string
	Body     any
}

// pages are the parsed templates, one per page, each with the layout.
type pages map[string]*template.Template

var funcs = template.FuncMap{
	// q shows a string from a record: as it is when every rune is
	// graphic, else as a Go string literal; html/template escapes it.
	"q":         term.Quote,
	"ms":        formatMs,
	"dur":       formatDurationMs,
	"thousands": thousands,
	"rfc3339":   func(t time.Time) string { return t.UTC().Format(time.RFC3339) },
}

func parsePages() (pages, error) {
	names, err := fs.Glob(assets, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := pages{}
	for _, n := range names {
		base := strings.TrimSuffix(strings.TrimPrefix(n, "templates/"), ".html")
		if base == "layout" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(assets, "templates/layout.html", n)
		if err != nil {
			return nil, fmt.Errorf("console: template %s: %w", n, err)
		}
		p[base] = t
	}
	return p, nil
}

// render writes page with body, whole or not at all: a template error is
// a 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, page, title string, body any) {
	t, ok := s.pages[page]
	if !ok {
		http.Error(w, "no page "+page, http.StatusInternalServerError)
		return
	}
	data := layout{Title: title, Nav: page, Actions: s.cfg.AllowActions, Token: s.token != nil, CSRF: s.csrfToken(w, r), Body: body}
	data.LoggedIn = data.Token && s.authenticated(r)
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		s.log.Error("render", "page", page, "err", err)
		http.Error(w, "render "+page+": "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write(b.Bytes())
}

// errorPage is the data of a refusal or failure.
type errorPage struct {
	Code    int
	Status  string
	Message string
}

// fail answers r with code and message, as a page.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, code int, message string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	s.render(statusWritten{w}, r, "error", http.StatusText(code), errorPage{Code: code, Status: http.StatusText(code), Message: message})
}

// statusWritten is a ResponseWriter whose status was written already.
type statusWritten struct{ http.ResponseWriter }

func (statusWritten) WriteHeader(int) {}

// formatMs formats unix milliseconds in UTC to the millisecond; 0 is
// unknown.
func formatMs(ms int64) string {
	if ms == 0 {
		return "-"
	}
	t := time.UnixMilli(ms).UTC()
	if t.Year() < 1 || t.Year() > 9999 {
		return strconv.FormatInt(ms, 10)
	}
	return t.Format("2006-01-02 15:04:05.000")
}

// formatDurationMs formats milliseconds as a duration.
func formatDurationMs(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).String()
}

// thousands formats n with thin separators: 1,234,567.
func thousands(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
