package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"net/http"
	"strings"
	"time"

	"golang.org/x/time/rate"
)

// Cookies of the console. Both are HttpOnly and SameSite=Strict, and
// Secure over TLS.
const (
	// sessionCookie proves the token was given on the login form: an HMAC
	// of a fixed text under the token, so that the token itself is never
	// stored in the browser.
	sessionCookie = "hourglass_console_session"
	// csrfCookie is the per-browser token every form repeats.
	csrfCookie = "hourglass_console_csrf"
	// csrfField is the form field that repeats csrfCookie.
	csrfField = "csrf"
	// sessionMaxAge is how long a login lasts.
	sessionMaxAge = 12 * time.Hour
)

// sessionValue is the session cookie's value under token.
func sessionValue(token []byte) string {
	m := hmac.New(sha256.New, token)
	m.Write([]byte("hourglass console session v1"))
	return hex.EncodeToString(m.Sum(nil))
}

// equal compares a and b in constant time, whatever their lengths.
func equal(a, b []byte) bool {
	ha, hb := sha256.Sum256(a), sha256.Sum256(b)
	return subtle.ConstantTimeCompare(ha[:], hb[:]) == 1
}

// bearer reports whether r carries the token as a bearer header.
func (s *Server) bearer(r *http.Request) bool {
	h, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && s.token != nil && equal([]byte(strings.TrimSpace(h)), s.token)
}

// authenticated reports whether r may see the console: no token is
// configured, or r carries it (bearer header or session cookie). Client
// certificates, when required, were checked in the TLS handshake.
func (s *Server) authenticated(r *http.Request) bool {
	if s.token == nil || s.bearer(r) {
		return true
	}
	c, err := r.Cookie(sessionCookie)
	return err == nil && equal([]byte(c.Value), []byte(sessionValue(s.token)))
}

// requireAuth sends the requests that are not authenticated to the login
// form (pages) or refuses them with 401 (POSTs and other clients); the
// login form and the stylesheet are open.
func (s *Server) requireAuth(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.authenticated(r) || r.URL.Path == "/login" || r.URL.Path == "/healthz" || strings.HasPrefix(r.URL.Path, "/static/") {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/login", http.StatusSeeOther)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="hourglass console"`)
		s.fail(w, r, http.StatusUnauthorized, "This console needs its access token: log in at /login, or send it as an Authorization: Bearer header.")
	})
}

// csrfToken returns r's per-browser token, setting its cookie on w when r
// has none.
func (s *Server) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) == 64 {
		return c.Value
	}
	var b [32]byte
	rand.Read(b[:])
	v := hex.EncodeToString(b[:])
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: v, Path: "/", HttpOnly: true, Secure: s.tls != nil, SameSite: http.SameSiteStrictMode})
	return v
}

// csrfOK reports whether the form of r repeats its per-browser token. A
// request with the bearer token needs none: a browser never sends that
// header to another origin on its own.
func (s *Server) csrfOK(r *http.Request) bool {
	if s.bearer(r) {
		return true
	}
	c, err := r.Cookie(csrfCookie)
	if err != nil || c.Value == "" {
		return false
	}
	return equal([]byte(r.PostFormValue(csrfField)), []byte(c.Value))
}

// loginLimiter bounds the login attempts of the whole console, so that the
// token cannot be guessed at the speed of the network.
type loginLimiter struct{ l *rate.Limiter }

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{rate.NewLimiter(rate.Every(200*time.Millisecond), 10)}
}

func (l *loginLimiter) allow() bool { return l.l.Allow() }

// login checks the token of the login form and sets the session cookie.
func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	if s.token == nil {
		http.Redirect(w, r, "/", http.StatusSeeOther)
		return
	}
	if !s.csrfOK(r) {
		s.fail(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the login page and try again.")
		return
	}
	if !s.logins.allow() {
		s.fail(w, r, http.StatusTooManyRequests, "Too many login attempts: wait a moment.")
		return
	}
	if !equal([]byte(r.PostFormValue("token")), s.token) {
		w.WriteHeader(http.StatusUnauthorized)
		s.render(w, r, "login", "Log in", loginPage{Wrong: true})
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: sessionValue(s.token), Path: "/", MaxAge: int(sessionMaxAge / time.Second),
		HttpOnly: true, Secure: s.tls != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/", http.StatusSeeOther)
}

// logout clears the session cookie.
func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	if !s.csrfOK(r) {
		s.fail(w, r, http.StatusForbidden, "The form's security token is missing or stale: reload the page and try again.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: s.tls != nil, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

// loginPage is the data of the login form.
type loginPage struct{ Wrong bool }
