package httpcloser

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// answerItem is the answer of a batch endpoint for one close.
type answerItem struct {
	ID         *string         `json:"id"`          // the task id of the close it answers; required
	Status     int             `json:"status"`      // an HTTP status code, mapped as for a single close
	Outcome    *string         `json:"outcome"`     // as in a single close's answer; alone, it means status 200
	Detail     json.RawMessage `json:"detail"`      // as in a single close's answer
	Error      json.RawMessage `json:"error"`       // quoted in the close's error
	RetryAfter *float64        `json:"retry_after"` // seconds, for a retryable status
}

// itemResult maps the answer for one close of a batch to its result, as a
// single close's answer with that status and body would be: 2xx is Closed,
// 409 the conflict outcome, 404 NotFound, unless "outcome" names another;
// 408, 425, 429 and 5xx are retryable (after "retry_after" seconds when
// given); any other status is permanent. An answer with neither status nor
// outcome, or a status out of range, is a retryable error.
func (c *Closer) itemResult(a answerItem) (closer.Result, error) {
	code := a.Status
	if code == 0 && a.Outcome != nil {
		code = http.StatusOK
	}
	status := strconv.Itoa(code) + " " + http.StatusText(code)
	if msg := jsonText(a.Error); msg != "" {
		status += ": " + strconv.Quote(clip(msg, maxExcerpt))
	}
	o := outcome.Closed
	switch {
	case code == 0:
		return closer.Result{}, errors.New("the answer has neither status nor outcome")
	case code < 100 || code > 599:
		return closer.Result{}, fmt.Errorf("the answer's status %d is not an HTTP status code", code)
	case code >= 200 && code <= 299:
	case code == http.StatusConflict:
		o = c.cfg.ConflictOutcome
	case code == http.StatusNotFound:
		return closer.Result{Outcome: outcome.NotFound}, nil
	case code == http.StatusRequestTimeout, code == http.StatusTooEarly, code == http.StatusTooManyRequests, code >= 500:
		err := errors.New(status)
		if ra := a.RetryAfter; ra != nil && *ra > 0 {
			d := maxRetryAfter
			if *ra < maxRetryAfter.Seconds() {
				d = time.Duration(*ra * float64(time.Second))
			}
			err = closer.RetryAfter(err, d)
		}
		return closer.Result{}, err
	default:
		return closer.Result{}, closer.Permanent(errors.New(status))
	}
	if a.Outcome != nil {
		if got := outcome.Outcome(*a.Outcome); got.Final() {
			o = got
		} else {
			return closer.Result{}, closer.Permanent(fmt.Errorf("the answer's outcome %q is not one of %s, %s, %s, %s",
				clip(*a.Outcome, maxDetail), outcome.Closed, outcome.AlreadyClosed, outcome.Skipped, outcome.NotFound))
		}
	}
	return closer.Result{Outcome: o, Detail: clip(jsonText(a.Detail), maxDetail)}, nil
}

// matchAnswers reads a 2xx batch answer: a JSON array of objects, each
// naming in "id" the task of the close it answers, in any order. It
// returns the answer of each close of qs, or why the close has none: no
// item names its task, or several do. Positions say nothing: an endpoint
// that answered in another order without ids would have each close take
// another task's outcome, a failed close counted as done. An answer that
// is not such an array, or is over maxBatchAnswer, is an error of the
// whole batch.
func matchAnswers(data []byte, qs []*queued) ([]answerItem, []error, error) {
	if len(data) > maxBatchAnswer {
		return nil, nil, fmt.Errorf("longer than %d bytes", maxBatchAnswer)
	}
	var items []answerItem
	if err := json.Unmarshal(data, &items); err != nil || items == nil {
		return nil, nil, fmt.Errorf("not a JSON array of objects%s", excerpt(data))
	}
	at := make(map[string]int, len(qs)) // task id -> index in qs
	for i, q := range qs {
		at[q.t.ID] = i
	}
	answers, named := make([]answerItem, len(qs)), make([]int, len(qs))
	var noID, unknown int
	var unknownID string
	for _, a := range items {
		i, ok := -1, false
		if a.ID != nil {
			i, ok = at[*a.ID]
		}
		switch {
		case a.ID == nil:
			noID++
		case !ok:
			unknown, unknownID = unknown+1, *a.ID
		default:
			answers[i] = a
			named[i]++
		}
	}
	errs := make([]error, len(qs))
	for i, q := range qs {
		switch {
		case named[i] == 0:
			errs[i] = fmt.Errorf("the batch answer has no item with id %q%s", clip(q.t.ID, maxDetail), strays(len(items), noID, unknown, unknownID))
		case named[i] > 1:
			errs[i] = fmt.Errorf("the batch answer has %d items with id %q", named[i], clip(q.t.ID, maxDetail))
		}
	}
	return answers, errs, nil
}

// strays describes the items of an answer of n that name no close of the
// batch: without an id, or with one not in the batch.
func strays(n, noID, unknown int, unknownID string) string {
	var parts []string
	if noID > 0 {
		parts = append(parts, fmt.Sprintf("%d without an id", noID))
	}
	if unknown > 0 {
		parts = append(parts, fmt.Sprintf("%d with an id not in the batch, such as %q", unknown, clip(unknownID, maxDetail)))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf(" (of its %d items, %s: each item must name the id of its close)", n, strings.Join(parts, " and "))
}
