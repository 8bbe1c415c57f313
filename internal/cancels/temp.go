package cancels

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// tempPrefix starts the name of a temporary store's directory, which goes
// on with the process id: hourglass-cancels-<pid>-<random>.
const tempPrefix = "hourglass-cancels-"

// removeStale removes the temporary stores in dir left by processes that
// are gone: killed, they never ran Close. A directory is removed only when
// the process its name gives no longer exists and nobody holds its Pebble
// lock, which a process in another PID namespace sharing dir would.
// Directories it cannot judge are left alone; failures are ignored, since
// the next start tries again.
func removeStale(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), tempPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid <= 0 || processExists(pid) {
			continue
		}
		path := filepath.Join(dir, e.Name())
		lock, err := pebble.LockDirectory(path, vfs.Default)
		if err != nil {
			continue // held: its store is open somewhere
		}
		os.RemoveAll(path)
		lock.Close()
	}
}

// processExists reports whether a process with id pid exists (signal 0
// checks without sending anything; EPERM means it exists under another
// user).
func processExists(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
