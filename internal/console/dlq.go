package console

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/deadletter"
)

// dlqFilter are the filters of the dead-letter page; empty filters match
// every dead letter.
type dlqFilter struct {
	Reason string // the reason code, exactly
	Source string // the source topic, or topic[partition]@offset
	Task   string // the task id (the key), exactly
}

func filterOf(v url.Values) dlqFilter {
	return dlqFilter{Reason: strings.TrimSpace(v.Get("reason")), Source: strings.TrimSpace(v.Get("source")), Task: v.Get("task")}
}

// match reports whether d passes f.
func (f dlqFilter) match(d deadletter.DeadLetter) bool {
	if f.Reason != "" && d.Reason != f.Reason {
		return false
	}
	if f.Task != "" && d.Key != f.Task {
		return false
	}
	if f.Source != "" {
		if strings.Contains(f.Source, "[") {
			return d.Source == f.Source
		}
		topic, err := deadletter.SourceTopic(d.Source)
		return err == nil && topic == f.Source
	}
	return true
}

// pick is a dead letter chosen by the dry run, partition:offset.
type pick struct {
	Partition int32
	Offset    int64
}

func (p pick) String() string { return fmt.Sprintf("%d:%d", p.Partition, p.Offset) }

func parsePick(s string) (pick, bool) {
	a, b, ok := strings.Cut(s, ":")
	p, err1 := strconv.ParseInt(a, 10, 32)
	o, err2 := strconv.ParseInt(b, 10, 64)
	return pick{int32(p), o}, ok && err1 == nil && err2 == nil && p >= 0 && o >= 0
}

// dlqPage is the data of the dead-letter page.
type dlqPage struct {
	Topic     string
	Filter    dlqFilter
	Rows      []deadletter.DeadLetter
	Truncated bool
	MaxRows   int
	Notes     string
	Err       string
	// Replay is the outcome of a dry run or a replay.
	Replay *replayPage
}

// replayPage is what a dry run would do, or what a replay did.
type replayPage struct {
	DryRun   bool
	Lines    []replayLine
	Picks    []string // the dead letters a replay after the dry run takes
	Replayed int
	Skipped  int
	Err      string
}

// replayLine is what became, or would become, of one dead letter.
type replayLine struct {
	DL     deadletter.DeadLetter
	Topic  string // where it goes
	Reason string // why it is skipped
}

// scan returns the dead letters that match, at most Config.MaxRows, and
// whether there were more.
func (s *Server) scan(ctx context.Context, match func(deadletter.DeadLetter) bool) (rows []deadletter.DeadLetter, truncated bool, notes string, err error) {
	var b bytes.Buffer
	keep := func(d deadletter.DeadLetter) error {
		// The value is not shown: do not hold it.
		rows = append(rows, d)
		return nil
	}
	_, err = deadletter.Scan(ctx, s.kafka, &b, s.cfg.DeadLetterTopic, time.Time{}, s.cfg.MaxRows+1, match, keep)
	if len(rows) > s.cfg.MaxRows {
		rows, truncated = rows[:s.cfg.MaxRows], true
	}
	return rows, truncated, b.String(), err
}

// deadLetters is the page of the dead letters that pass the filters.
func (s *Server) deadLetters(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r.URL.Query())
	p := &dlqPage{Topic: s.cfg.DeadLetterTopic, Filter: f, MaxRows: s.cfg.MaxRows}
	rows, truncated, notes, err := s.scan(r.Context(), f.match)
	p.Rows, p.Truncated, p.Notes = rows, truncated, notes
	if err != nil {
		p.Err = err.Error()
	}
	s.render(w, r, "dlq", "Dead letters", p)
}

// replay is the dry run (mode dry-run) of a replay of the dead letters
// that pass the filters, or the replay (mode replay) of those the dry run
// picked that still pass them.
func (s *Server) replay(w http.ResponseWriter, r *http.Request) {
	f := filterOf(r.PostForm)
	dry := r.PostFormValue("mode") != "replay"
	picked := map[pick]bool{}
	for _, v := range r.PostForm["pick"] {
		if p, ok := parsePick(v); ok {
			picked[p] = true
		}
	}
	if !dry && len(picked) == 0 {
		s.fail(w, r, http.StatusBadRequest, "A replay replays the dead letters of its dry run: run the dry run first, then confirm it.")
		return
	}
	if len(picked) > s.cfg.MaxRows {
		s.fail(w, r, http.StatusBadRequest, fmt.Sprintf("At most %d dead letters are replayed at once.", s.cfg.MaxRows))
		return
	}
	match := f.match
	if !dry {
		match = func(d deadletter.DeadLetter) bool { return picked[pick{d.Partition, d.Offset}] && f.match(d) }
	}
	p := &dlqPage{Topic: s.cfg.DeadLetterTopic, Filter: f, MaxRows: s.cfg.MaxRows}
	rows, truncated, notes, err := s.scan(r.Context(), match)
	p.Rows, p.Truncated, p.Notes = rows, truncated, notes
	if err != nil {
		p.Err = err.Error()
		s.render(w, r, "dlq", "Dead letters", p)
		return
	}
	rule := deadletter.NewRule(s.cfg.Prefix, s.cfg.Tiers, s.cfg.Targets, "")
	rp := &replayPage{DryRun: dry}
	var recs []*kgo.Record
	now := s.clock.Now()
	for _, d := range rows {
		rec, err := deadletter.Replay(d, rule, now)
		if err != nil {
			rp.Skipped++
			rp.Lines = append(rp.Lines, replayLine{DL: d, Reason: err.Error()})
			continue
		}
		recs = append(recs, rec)
		rp.Lines = append(rp.Lines, replayLine{DL: d, Topic: rec.Topic})
		rp.Picks = append(rp.Picks, pick{d.Partition, d.Offset}.String())
	}
	if !dry && len(recs) > 0 {
		if err := s.producer.ProduceSync(r.Context(), recs...).FirstErr(); err != nil {
			rp.Err = fmt.Sprintf("replay: %v (some of the %d may have been produced)", err, len(recs))
			s.log.Warn("replay", "err", err)
		} else {
			rp.Replayed = len(recs)
			s.log.Info("replayed dead letters", "count", len(recs), "from", r.RemoteAddr)
		}
	}
	p.Replay = rp
	s.render(w, r, "dlq", "Dead letters", p)
}
