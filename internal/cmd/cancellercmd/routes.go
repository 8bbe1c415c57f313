package cancellercmd

import (
	"golang.org/x/time/rate"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/closer/closerfile"
)

// routes returns the canceller's route of each kind of cs: its closer,
// and a rate limiter of its own when the closers file gives the kind a
// rate_limit.
func routes(cs *closerfile.Closers) map[string]canceller.Route {
	out := make(map[string]canceller.Route, len(cs.ByKind))
	for kind, k := range cs.ByKind {
		r := canceller.Route{Closer: k.Closer}
		if k.RateLimit > 0 {
			r.Limit = rate.NewLimiter(rate.Limit(k.RateLimit), k.RateBurst)
		}
		out[kind] = r
	}
	return out
}
