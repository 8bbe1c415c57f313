package cli

import (
	"errors"
	"testing"

	"github.com/hourglass/hourglass/internal/field"
)

// TestExplain: library problems name their flags, with the flags their
// messages mention, other problems pass as they are, and each problem is
// reported once, one a line.
func TestExplain(t *testing.T) {
	fs := NewFlagSet("canceller", "")
	var closeTimeout, shutdownTimeout, limit string
	fs.StringVar(&closeTimeout, "close-timeout", Env("close-timeout"), "", "")
	fs.StringVar(&shutdownTimeout, "shutdown-timeout", Env("shutdown-timeout"), "", "")
	fs.StringVar(&limit, "max-key-bytes", Env("max-key-bytes"), "", "")
	fields := Fields{"CloseTimeout": "close-timeout", "ShutdownTimeout": "shutdown-timeout"}.With(Fields{"Limits.KeyBytes": "max-key-bytes"})

	lib := errors.Join(
		field.Errorf("ShutdownTimeout", "1s is less than %s 5s", field.Ref("CloseTimeout")),
		field.In("Limits", field.Errorf("KeyBytes", "0: must be at least 1")),
		field.Errorf("Unmapped", "left as it is"),
	)
	var p Problems
	p.Join(nil)
	p.Add("shutdown-timeout", "1s is less than --close-timeout 5s")
	p.Join(fields.Flags(lib, nil))
	p.IntRange("max-key-bytes", 5, 1, 4)
	p.Join(errors.New("not about a flag"))

	want := "--shutdown-timeout (HOURGLASS_SHUTDOWN_TIMEOUT): 1s is less than --close-timeout 5s\n" +
		"--max-key-bytes (HOURGLASS_MAX_KEY_BYTES): 0: must be at least 1\n" +
		"Unmapped: left as it is\n" +
		"--max-key-bytes (HOURGLASS_MAX_KEY_BYTES): 5: want 1 to 4\n" +
		"not about a flag"
	if got := fs.Explain(p.Err()); got == nil || got.Error() != want {
		t.Errorf("Explain:\n%v\nwant:\n%s", got, want)
	}
	if fs.Explain(Problems{}.Err()) != nil {
		t.Error("Explain of no problems is not nil")
	}

	named := fields.Flags(field.Errorf("ShutdownTimeout", "less than %s", field.Ref("CloseTimeout")), fs.Name)
	if got, want := fs.Explain(named).Error(), "--shutdown-timeout (HOURGLASS_SHUTDOWN_TIMEOUT): less than --close-timeout (HOURGLASS_CLOSE_TIMEOUT)"; got != want {
		t.Errorf("Explain with refs named by fs.Name:\n%s\nwant:\n%s", got, want)
	}
}
