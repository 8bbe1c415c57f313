//go:build !linux

package clock

import (
	"errors"
	"time"
)

func newFDTimer(time.Duration) (PreciseTimer, error) {
	return nil, errors.New("clock: timerfd is Linux only")
}
