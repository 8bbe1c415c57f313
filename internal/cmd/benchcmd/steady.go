package benchcmd

import "time"

// Over a whole run, CPU per deadline also counts the seconds before the
// first delays run out and after the scheduling ends, when fewer deadlines
// fire than are scheduled while the router still wakes for every batch
// window. The steady figures are those of the stretch of the scheduling in
// which deadlines fired at --rate: CPU per deadline at that rate.

// steadyShare is the share of --rate at which a second counts as steady,
// and minSteady the fewest such seconds in a row that give figures.
const (
	steadyShare = 0.95
	minSteady   = 5
)

// steadyResult is "steady" in a throughput run's JSON line.
type steadyResult struct {
	FromS                   float64 `json:"from_s"` // seconds from the start of the scheduling
	ToS                     float64 `json:"to_s"`
	Fired                   int     `json:"fired"`
	Rate                    float64 `json:"rate"` // deadlines fired per second
	RouterCPUPerDeadline    float64 `json:"router_cpu_us_per_deadline"`
	CancellerCPUPerDeadline float64 `json:"canceller_cpu_us_per_deadline"`
}

// steady samples, once a progress second of the scheduling, how many
// deadlines have fired and the CPU of the router and the canceller so far.
type steady struct {
	rate    int
	start   time.Time
	samples []steadySample
}

type steadySample struct {
	at                time.Time
	fired             int
	rt, cn            *child // a stretch ends where --kill replaced one
	router, canceller float64
}

func (s *steady) sample(at time.Time, fired int, rt, cn *child) {
	s.samples = append(s.samples, steadySample{at: at, fired: fired, rt: rt, cn: cn, router: rt.cpu(), canceller: cn.cpu()})
}

// result returns the figures of the longest stretch of steady seconds, or
// nil when there are fewer than minSteady in a row.
func (s *steady) result() *steadyResult {
	best, bestLen := 0, 0
	for i := 0; i < len(s.samples)-1; {
		j := i
		for j+1 < len(s.samples) && s.steadyStep(j) {
			j++
		}
		if j-i > bestLen {
			best, bestLen = i, j-i
		}
		i = j + 1
	}
	if bestLen < minSteady {
		return nil
	}
	a, b := s.samples[best], s.samples[best+bestLen]
	n, secs := b.fired-a.fired, b.at.Sub(a.at).Seconds()
	return &steadyResult{
		FromS: round(a.at.Sub(s.start).Seconds()), ToS: round(b.at.Sub(s.start).Seconds()),
		Fired: n, Rate: round(float64(n) / secs),
		RouterCPUPerDeadline:    round((b.router - a.router) * 1e6 / float64(n)),
		CancellerCPUPerDeadline: round((b.canceller - a.canceller) * 1e6 / float64(n)),
	}
}

// steadyStep reports whether deadlines fired at --rate from sample i to
// the next, with the same processes.
func (s *steady) steadyStep(i int) bool {
	a, b := s.samples[i], s.samples[i+1]
	secs := b.at.Sub(a.at).Seconds()
	return a.rt == b.rt && a.cn == b.cn && secs > 0 &&
		float64(b.fired-a.fired) >= steadyShare*float64(s.rate)*secs
}
