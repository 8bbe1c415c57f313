package console

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// Reschedules run in a transaction of their own.
const (
	// transactionalIDPrefix is the prefix of a reschedule's transactional
	// id; a random suffix follows (with ACLs, allow Write and Describe on
	// the prefix).
	transactionalIDPrefix = "hourglass-console-reschedule-"
	// transactionTimeout bounds how long a reschedule that died in its
	// transaction holds the readers of its partitions.
	transactionTimeout = 10 * time.Second
)

// actionResult is what an action did, shown on the task's page.
type actionResult struct {
	OK      bool
	Message string
}

// cancel records a cancellation of the task's deadlines (all of them, or
// the one due at the form's due time).
func (s *Server) cancel(w http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id")
	if msg := checkID(id); msg != "" {
		s.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	var due time.Time
	if v := strings.TrimSpace(r.PostFormValue("due")); v != "" {
		var err error
		if due, err = record.ParseDue(v); err != nil {
			s.fail(w, r, http.StatusBadRequest, "due: "+err.Error())
			return
		}
	}
	sch, err := tiers.NewScheduler(s.producer, s.cfg.Tiers, tiers.WithPrefix(s.cfg.Prefix),
		tiers.WithCancellationsTopic(s.cfg.CancellationsTopic), tiers.WithClock(s.clock.Now))
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	res := &actionResult{OK: true, Message: "Cancellation recorded: it stops every deadline of the task scheduled until now and due after now."}
	if !due.IsZero() {
		res.Message = "Cancellation recorded of the deadline due " + due.UTC().Format(time.RFC3339Nano) + "."
	}
	switch err := sch.Cancel(r.Context(), id, due); {
	case errors.Is(err, tiers.ErrLate):
		res = &actionResult{Message: "Cancellation recorded, but acknowledged after the deadline was due: it may have fired. " + err.Error()}
	case err != nil:
		res = &actionResult{Message: "Cancel failed: " + err.Error()}
	}
	s.log.Info("cancel", "id", id, "due", due, "ok", res.OK, "from", r.RemoteAddr)
	p := s.lookup(r.Context(), id)
	p.Result = res
	s.render(w, r, "task", "Task", p)
}

// reschedule cancels the task's deadlines (all, or the one due at the
// form's from) and schedules a new one, in one transaction.
func (s *Server) reschedule(w http.ResponseWriter, r *http.Request) {
	id := r.PostFormValue("id")
	if msg := checkID(id); msg != "" {
		s.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	task, from, msg := s.rescheduleForm(r, id)
	if msg != "" {
		s.fail(w, r, http.StatusBadRequest, msg)
		return
	}
	var b [8]byte
	rand.Read(b[:])
	txnID := transactionalIDPrefix + hex.EncodeToString(b[:])
	cl, err := kgo.NewClient(append(append([]kgo.Opt(nil), s.kafka...), kgo.TransactionalID(txnID), kgo.TransactionTimeout(transactionTimeout))...)
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, "kafka client: "+err.Error())
		return
	}
	defer cl.Close()
	sch, err := tiers.NewScheduler(cl, s.cfg.Tiers, tiers.WithPrefix(s.cfg.Prefix),
		tiers.WithCancellationsTopic(s.cfg.CancellationsTopic), tiers.WithClock(s.clock.Now))
	if err != nil {
		s.fail(w, r, http.StatusInternalServerError, err.Error())
		return
	}
	res := &actionResult{OK: true, Message: fmt.Sprintf("Rescheduled in transaction %s: due %s.", txnID, task.Due.UTC().Format(time.RFC3339Nano))}
	switch err := sch.Reschedule(r.Context(), task, from); {
	case errors.Is(err, tiers.ErrLate):
		res = &actionResult{Message: "Rescheduled: the new deadline stands, but the cancellation of the old one was acknowledged after it was due: it may have fired. " + err.Error()}
	case err != nil:
		res = &actionResult{Message: "Reschedule failed: " + err.Error()}
	}
	s.log.Info("reschedule", "id", id, "due", task.Due, "ok", res.OK, "from", r.RemoteAddr)
	p := s.lookup(r.Context(), id)
	p.Result = res
	s.render(w, r, "task", "Task", p)
}

// rescheduleForm reads the new deadline of the reschedule form: at (a
// time) or in (a duration from now), from, kind and target. It returns
// what is wrong with the form, or "".
func (s *Server) rescheduleForm(r *http.Request, id string) (tiers.Task, time.Time, string) {
	t := tiers.Task{ID: id, Kind: strings.TrimSpace(r.PostFormValue("kind")), Target: strings.TrimSpace(r.PostFormValue("target"))}
	at, in := strings.TrimSpace(r.PostFormValue("at")), strings.TrimSpace(r.PostFormValue("in"))
	switch {
	case at != "" && in != "":
		return t, time.Time{}, "Give the new due time or a delay, not both."
	case at != "":
		due, err := record.ParseDue(at)
		if err != nil {
			return t, time.Time{}, "at: " + err.Error()
		}
		t.Due = due
	case in != "":
		d, err := time.ParseDuration(in)
		if err != nil || d < 0 {
			return t, time.Time{}, fmt.Sprintf("in: %q is not a duration such as 45m or 2h30m", in)
		}
		t.Due = s.clock.Now().Add(d)
	default:
		return t, time.Time{}, "Give the new due time or a delay."
	}
	var from time.Time
	if v := strings.TrimSpace(r.PostFormValue("from")); v != "" {
		var err error
		if from, err = record.ParseDue(v); err != nil {
			return t, time.Time{}, "from: " + err.Error()
		}
	}
	if len(t.Kind) > 128 || strings.ContainsFunc(t.Kind, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return t, time.Time{}, "kind: at most 128 printable characters"
	}
	if t.Target != "" {
		if err := tiers.ValidTopic(t.Target); err != nil {
			return t, time.Time{}, "target: " + err.Error()
		}
		if s.ownTopic(t.Target) {
			return t, time.Time{}, "target: " + t.Target + " is one of the pipeline's own topics: the router never delivers to it"
		}
	}
	return t, from, ""
}

// ownTopic reports whether topic is one of the pipeline's own topics,
// which the router refuses as a target.
func (s *Server) ownTopic(topic string) bool {
	p := s.cfg.Prefix
	return strings.HasPrefix(topic, record.DelayTopicPrefix(p)) || topic == s.cfg.DeadLetterTopic ||
		topic == tiers.OutcomesTopic(p) || topic == s.cfg.CancellationsTopic
}

// checkID returns what is wrong with a task id from a form, or "".
func checkID(id string) string {
	switch {
	case id == "":
		return "No task id given."
	case len(id) > tiers.DefaultMaxKeyBytes:
		return fmt.Sprintf("A task id is at most %d bytes.", tiers.DefaultMaxKeyBytes)
	}
	return ""
}
