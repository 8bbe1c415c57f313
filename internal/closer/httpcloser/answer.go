package httpcloser

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/outcome"
)

// answerOutcome reads a JSON answer {"outcome": "...", "detail": "..."}. It
// returns the zero Result for a body that is not such an object, and an
// error for an outcome that is not final.
func answerOutcome(body []byte) (closer.Result, error) {
	body = bytes.TrimSpace(body)
	if len(body) == 0 || body[0] != '{' {
		return closer.Result{}, nil
	}
	var a struct {
		Outcome *string         `json:"outcome"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &a) != nil {
		// Not an object as a whole, or longer than what was read of it
		// (maxBody): its members up to there still name the outcome.
		a.Outcome, a.Detail = scanOutcome(body)
	}
	if a.Outcome == nil {
		return closer.Result{}, nil
	}
	o := outcome.Outcome(*a.Outcome)
	if !o.Final() {
		return closer.Result{}, fmt.Errorf("the answer's outcome %q is not one of %s, %s, %s, %s",
			clip(*a.Outcome, maxDetail), outcome.Closed, outcome.AlreadyClosed, outcome.Skipped, outcome.NotFound)
	}
	// A number or an object as detail: keep its text.
	return closer.Result{Outcome: o, Detail: clip(jsonText(a.Detail), maxDetail)}, nil
}

// scanOutcome reads the members "outcome" (a string) and "detail" of a
// JSON object whose end may be missing, as far as its members can be read:
// an answer longer than maxBody is cut, and its outcome is usually at its
// start.
func scanOutcome(body []byte) (o *string, detail json.RawMessage) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, nil
	}
	for dec.More() {
		tok, err := dec.Token()
		key, ok := tok.(string)
		if err != nil || !ok {
			break
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			break
		}
		switch {
		case strings.EqualFold(key, "outcome"):
			var s string
			if json.Unmarshal(v, &s) == nil {
				o = &s
			}
		case strings.EqualFold(key, "detail"):
			detail = v
		}
	}
	return o, detail
}
