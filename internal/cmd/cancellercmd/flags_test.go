package cancellercmd

import (
	"errors"
	"testing"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/field"
)

// TestEveryFieldNamed: every problem of a canceller.Config that is wrong in
// every field it can be names a flag, none a Go field.
func TestEveryFieldNamed(t *testing.T) {
	for _, c := range []canceller.Config{
		{InstanceID: "a b", Topics: []string{"a b"}, MaxInFlight: -1, RateLimit: -1},
		{ShutdownTimeout: 1, CloseTimeout: 2, RetryBackoff: 2, RetryBackoffMax: 1},
	} {
		err := cancellerFields.Flags(c.Validate(), nil)
		if err == nil {
			t.Fatal("no problems")
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			t.Errorf("a problem names the field %s, not its flag:\n%v", fe.Field, err)
		}
	}
}
