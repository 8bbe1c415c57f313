package field_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/hourglass/hourglass/internal/field"
)

func TestMessage(t *testing.T) {
	err := field.Errorf("RetryMax", "%v is less than %v %v", "1s", field.Ref("RetryMin"), "1m")
	var fe *field.Error
	if !errors.As(err, &fe) {
		t.Fatalf("Errorf returned %T, want *field.Error", err)
	}
	for _, tt := range []struct {
		name func(string) string
		want string
	}{
		{nil, "1s is less than RetryMin 1m"},
		{func(f string) string { return "--" + f }, "1s is less than --RetryMin 1m"},
	} {
		if got := fe.Message(tt.name); got != tt.want {
			t.Errorf("Message = %q, want %q", got, tt.want)
		}
	}
	if got, want := err.Error(), "RetryMax: 1s is less than RetryMin 1m"; got != want {
		t.Errorf("Error = %q, want %q", got, want)
	}
}

// TestIn: the fields of a part's problems, and the fields their messages
// mention, are named as fields of the part, through nested joins; other
// errors are left as they are.
func TestIn(t *testing.T) {
	plain := errors.New("not about a field")
	err := field.In("Limits", errors.Join(
		field.Errorf("KeyBytes", "0: must be at least 1"),
		errors.Join(field.Errorf("ValueBytes", "too large with %v", field.Ref("KeyBytes")), plain),
	))
	want := "Limits.KeyBytes: 0: must be at least 1\nLimits.ValueBytes: too large with Limits.KeyBytes\nnot about a field"
	if err.Error() != want {
		t.Errorf("In:\n%v\nwant:\n%s", err, want)
	}
	if !errors.Is(err, plain) {
		t.Error("In lost the error that is not about a field")
	}
	if field.In("Limits", nil) != nil {
		t.Error("In(nil) is not nil")
	}
}

func TestOmit(t *testing.T) {
	err := errors.Join(field.Errorf("Tiers", "no tiers"), errors.Join(field.Errorf("Prefix", "must not be empty"), field.Errorf("Tiers", "again")))
	if got, want := fmt.Sprint(field.Omit(err, "Tiers")), "Prefix: must not be empty"; got != want {
		t.Errorf("Omit = %q, want %q", got, want)
	}
	if field.Omit(field.Errorf("Tiers", "no tiers"), "Tiers") != nil {
		t.Error("Omit of the only problem is not nil")
	}
}

func ExampleErrorf() {
	err := errors.Join(
		field.Errorf("MaxDelay", "%v: must be positive", 0),
		field.Errorf("ShutdownTimeout", "%v is less than %v %v", "1s", field.Ref("CloseTimeout"), "5s"),
	)
	fmt.Println(err)
	// Output:
	// MaxDelay: 0: must be positive
	// ShutdownTimeout: 1s is less than CloseTimeout 5s
}
