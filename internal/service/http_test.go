package service

import (
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReadyz: /readyz answers 200 while ready returns nil, and 503 with
// ready's error, which says why, while it does not.
func TestReadyz(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		err      error
		wantCode int
		wantBody string
	}{
		{name: "ready", wantCode: http.StatusOK, wantBody: "ready\n"},
		{
			name:     "not ready",
			err:      errors.New("fetch: fetches of hourglass.delay.1m[3] failed without a break for 45s: UNKNOWN_SERVER_ERROR"),
			wantCode: http.StatusServiceUnavailable,
			wantBody: "not ready: fetch: fetches of hourglass.delay.1m[3] failed without a break for 45s: UNKNOWN_SERVER_ERROR\n",
		},
	}
	for _, tt := range tests {
		h := mux(func() error { return tt.err }, prometheus.NewRegistry(), false, slog.New(slog.DiscardHandler))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", http.NoBody))
		if rec.Code != tt.wantCode || rec.Body.String() != tt.wantBody {
			t.Errorf("%s: /readyz answered %d %q, want %d %q", tt.name, rec.Code, rec.Body.String(), tt.wantCode, tt.wantBody)
		}
	}
}
