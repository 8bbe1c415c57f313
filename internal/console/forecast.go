package console

import (
	"context"
	"time"
)

// forecast is what falls due over the next Config.Forecast.
type forecast struct {
	From, To time.Time
	Err      string
	// Pending says the deadline index is not there yet.
	Pending bool
}

// buildForecast returns the forecast from now.
func (s *Server) buildForecast(_ context.Context, now time.Time) *forecast {
	return &forecast{From: now, To: now.Add(s.cfg.Forecast), Pending: true}
}
