//go:build !unix

package procs

import (
	"errors"
	"time"
)

// ProcessCPU returns an error: the process's CPU time is read on Unix
// systems only, and the scaler then leaves GOMAXPROCS where it is.
func ProcessCPU() (time.Duration, error) {
	return 0, errors.New("procs: the CPU time of the process is not read on this system")
}
