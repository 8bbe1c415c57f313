package consumer

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/kafka"
)

// FetchFailingAfter is how long a member's fetches may fail without a break
// before Member.FetchFailing reports them: longer than a broker's restart or
// a leader's move (which franz-go rides out without an error), and several
// of the backoff's longest pauses (kafka.FetchBackoffMax), so that one error
// never counts.
const FetchFailingAfter = 30 * time.Second

// fetchErrorSlack is how long after a partition's backoff ends its next
// fetch may take to answer: it may wait for a fetch in flight, up to kgo's
// default FetchMaxWait of 5s. No error by then means the fetch worked.
const fetchErrorSlack = 2 * kafka.FetchBackoffMax

// groupSession keys the errors of the group's session (kgo.ErrGroupSession:
// the member could not join or stay in its group), which name no partition.
var groupSession = tp{partition: -1}

// failures keeps the runs of fetch errors of a member, per partition and for
// its group session. A partition's run ends when the partition returns
// records, or when no error follows its backoff (its fetch then worked); the
// group session's when the member is assigned partitions again (a join that
// worked) or records arrive. Its methods are safe for concurrent use.
type failures struct {
	n    atomic.Int32 // len(runs), read without the lock by succeeded
	mu   sync.Mutex
	runs map[tp]*failRun
}

// failRun is one run of errors of a partition or of the group session.
type failRun struct {
	since time.Time // the run's first error
	until time.Time // the run ends unless an error comes by then; zero: only a success ends it
	err   error     // the latest error
}

// failed notes an error of k at now; wait is how long the backoff pauses k.
func (f *failures) failed(k tp, now time.Time, wait time.Duration, err error) {
	until := now.Add(wait + fetchErrorSlack)
	if errors.As(err, new(*kgo.ErrGroupSession)) {
		k, until = groupSession, time.Time{}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.runs == nil {
		f.runs = make(map[tp]*failRun)
	}
	switch r, ok := f.runs[k]; {
	case !ok || r.over(now):
		f.runs[k] = &failRun{since: now, until: until, err: err}
		f.n.Store(int32(len(f.runs)))
	case r.until.IsZero():
		r.err = err
	default:
		r.err, r.until = err, maxTime(r.until, until)
	}
}

// over reports whether the run ended before now without a success: no error
// came by its until.
func (r *failRun) over(now time.Time) bool { return !r.until.IsZero() && now.After(r.until) }

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// succeeded ends the runs of k, which returned records, and of the group
// session, which works if records arrive.
func (f *failures) succeeded(k tp) {
	if f.n.Load() == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.runs, k)
	delete(f.runs, groupSession)
	f.n.Store(int32(len(f.runs)))
}

// assigned ends the run of the group session: the member joined its group.
func (f *failures) assigned() { f.succeeded(groupSession) }

// forget drops the runs of partitions revoked or lost.
func (f *failures) forget(parts map[string][]int32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for topic, ps := range parts {
		for _, p := range ps {
			delete(f.runs, tp{topic, p})
		}
	}
	f.n.Store(int32(len(f.runs)))
}

// longest returns the run still going at now that began first, and its key;
// ok is false when none is.
func (f *failures) longest(now time.Time) (k tp, r failRun, ok bool) {
	if f.n.Load() == 0 {
		return tp{}, failRun{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for key, run := range f.runs {
		if run.over(now) {
			delete(f.runs, key)
			continue
		}
		if !ok || run.since.Before(r.since) {
			k, r, ok = key, *run, true
		}
	}
	f.n.Store(int32(len(f.runs)))
	return k, r, ok
}

// FetchFailingFor returns how long the member's fetches have failed without
// a break: the longest run of errors still going, of one partition or of
// its group session; 0 when none is.
func (m *Member) FetchFailingFor() time.Duration {
	now := m.cfg.Clock.Now()
	if _, r, ok := m.fails.longest(now); ok {
		return now.Sub(r.since)
	}
	return 0
}

// FetchFailing returns an error naming what has failed, for how long and
// with which error, once the member's fetches have failed without a break
// for FetchFailingAfter (see FetchFailingFor); nil otherwise. A service is
// not ready meanwhile: what it should read waits.
func (m *Member) FetchFailing() error {
	now := m.cfg.Clock.Now()
	k, r, ok := m.fails.longest(now)
	if !ok || now.Sub(r.since) < FetchFailingAfter {
		return nil
	}
	what := fmt.Sprintf("fetches of %s[%d]", k.topic, k.partition)
	switch {
	case k == groupSession:
		what = "the session of group " + m.cfg.Group.Name
	case k.partition < 0:
		what = "fetches of " + k.topic
	case k.topic == "":
		what = "fetches"
	}
	return fmt.Errorf("%s failed without a break for %v: %w", what, now.Sub(r.since).Round(time.Second), r.err)
}
