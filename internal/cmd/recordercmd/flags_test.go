package recordercmd

import (
	"errors"
	"testing"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/recorder"
)

// TestEveryFieldNamed: every problem of a recorder.Config that is wrong in
// every field it can be names a flag, none a Go field.
func TestEveryFieldNamed(t *testing.T) {
	for _, c := range []recorder.Config{{}, {RetryMin: 2, RetryMax: 1}} {
		err := recorderFields.Flags(c.Validate(), nil)
		if err == nil {
			t.Fatal("no problems")
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			t.Errorf("a problem names the field %s, not its flag:\n%v", fe.Field, err)
		}
	}
}
