package httpcloser

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// answerItem is the answer of a batch endpoint for one close.
type answerItem struct {
	ID         *string         `json:"id"`          // the task id, optional; checked when given
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
