package console

import (
	"net/http"
	"time"

	"github.com/hourglass/hourglass/internal/report"
)

// overviewPage is the data of the overview.
type overviewPage struct {
	Now       time.Time
	Window    time.Duration
	Report    *report.Report
	ReportErr string
	Forecast  *forecast // nil when the report failed
}

// overview is the page of the deadlines to come and the outcomes of the
// recent window: a report of the window with its forecast.
func (s *Server) overview(w http.ResponseWriter, r *http.Request) {
	now := s.clock.Now()
	p := overviewPage{Now: now, Window: s.cfg.Window}
	rep, err := report.Build(r.Context(), s.store, report.Options{
		From: now.Add(-s.cfg.Window), To: now, LateThreshold: s.cfg.LateThreshold,
		Limit: min(s.cfg.MaxRows, 50), Now: now, Forecast: s.cfg.Forecast,
	})
	if err != nil {
		s.log.Warn("overview: report", "err", err)
		p.ReportErr = err.Error()
	} else {
		p.Report, p.Forecast = rep, newForecast(rep.Forecast, s.cfg.MaxRows)
	}
	s.render(w, r, "overview", "Overview", p)
}
