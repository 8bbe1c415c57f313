package routercmd

import (
	"errors"
	"testing"

	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/router"
)

// TestEveryFieldNamed: every problem of a router.Config that is wrong in
// every field it can be names a flag, none a Go field.
func TestEveryFieldNamed(t *testing.T) {
	c := router.Config{InstanceID: "a b", AllowedTargets: []string{"["}, BatchWindow: -1}
	err := routerFields.Flags(c.Validate(), nil)
	if err == nil {
		t.Fatal("no problems")
	}
	var fe *field.Error
	if errors.As(err, &fe) {
		t.Errorf("a problem names the field %s, not its flag:\n%v", fe.Field, err)
	}
}
