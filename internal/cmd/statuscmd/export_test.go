package statuscmd

import "time"

// SetProgress sets when a read reports its progress (see farRecords) and
// returns how to restore it. Tests that call it must not run in parallel.
func SetProgress(far int64, every time.Duration) (restore func()) {
	oldFar, oldEvery := farRecords, progressEvery
	farRecords, progressEvery = far, every
	return func() { farRecords, progressEvery = oldFar, oldEvery }
}

// SetMaxEvents sets how many records of the task status keeps and returns
// how to restore it. Tests that call it must not run in parallel.
func SetMaxEvents(n int) (restore func()) {
	old := maxEvents
	maxEvents = n
	return func() { maxEvents = old }
}
