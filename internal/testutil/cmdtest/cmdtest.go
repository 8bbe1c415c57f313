package cmdtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/service"
)

// Run calls cmd with args and a context that bounds it, returning what it
// wrote and its error.
func Run(t *testing.T, cmd service.Command, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errOut bytes.Buffer
	err = cmd(ctx, args, &out, &errOut)
	return out.String(), errOut.String(), err
}

// BadConfigCase is a command line and environment that Cmd must refuse;
// Want are substrings of the error. It is an alias of an unnamed struct so
// that test tables may list cases without field names.
type BadConfigCase = struct {
	Name string
	Cmd  service.Command
	Args []string
	Env  map[string]string
	Want []string
}

// CheckBadConfig runs each case: its command must fail with a
// service.UsageError whose text contains every Want; checkStdout looks at
// what it printed.
func CheckBadConfig(t *testing.T, tests []BadConfigCase, checkStdout func(t *testing.T, stdout string)) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.Name, func(t *testing.T) {
			for k, v := range tt.Env {
				t.Setenv(k, v)
			}
			stdout, _, err := Run(t, tt.Cmd, tt.Args...)
			var ue service.UsageError
			if !errors.As(err, &ue) {
				t.Fatalf("error %T %v, want a service.UsageError", err, err)
			}
			for _, w := range tt.Want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			checkStdout(t, stdout)
		})
	}
}
