package cancels

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// The store's directory and files are its owner's alone: they hold task
// ids, which may name customers' orders.
const (
	dirPerm  os.FileMode = 0o700
	filePerm os.FileMode = 0o600
)

// privateDir creates dir for a store, or takes away the access of others
// to an existing one (a directory created by hand, or by an older release
// with 0755).
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		return fmt.Errorf("cancels: create %s: %w", dir, err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cancels: %w", err)
	}
	if fi.Mode().Perm()&^dirPerm != 0 {
		if err := os.Chmod(dir, dirPerm); err != nil {
			// A volume whose directory the router does not own: its files
			// are still its owner's alone (privateFS).
			slog.Warn("cancels: the store's directory is open to others, and cannot be made private", "dir", dir, "mode", fi.Mode().Perm(), "err", err)
		}
	}
	return nil
}

// privateFS is the OS's file system with Pebble's files and directories
// created for their owner only (Pebble's own are 0666 and 0755, less the
// umask).
type privateFS struct{ vfs.FS }

func (fs privateFS) Create(name string, category vfs.DiskWriteCategory) (vfs.File, error) {
	f, err := fs.FS.Create(name, category)
	if err == nil {
		if cerr := os.Chmod(name, filePerm); cerr != nil {
			_ = f.Close()
			return nil, cerr
		}
	}
	return f, err
}

func (fs privateFS) MkdirAll(dir string, _ os.FileMode) error { return fs.FS.MkdirAll(dir, dirPerm) }

func (fs privateFS) Lock(name string) (io.Closer, error) {
	l, err := fs.FS.Lock(name)
	if err == nil {
		if cerr := os.Chmod(name, filePerm); cerr != nil {
			_ = l.Close()
			return nil, cerr
		}
	}
	return l, err
}

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
