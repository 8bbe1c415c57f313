package cancels

import (
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/testutil/poll"
)

// fillBatches commits batches of 1000 cancellations with long ids from
// goroutine-owned state until stop is set or a commit fails, and reports
// the error (nil once stopped).
func fillBatches(s *Store, from int, stop *atomic.Bool, errc chan<- error) {
	id := strings.Repeat("x", 200)
	for i := from; !stop.Load(); i += 1000 {
		b := s.NewBatch()
		for j := range 1000 {
			b.Put(cancel(id+strconv.Itoa(i+j), 1, 0), ms(1000))
		}
		b.SetOffset(0, int64(i+1000))
		if err := b.Commit(); err != nil {
			errc <- err
			return
		}
	}
	errc <- nil
}

// TestStoreDirRemovedWhileWriting: a store whose directory is removed
// under it (or whose volume is full) cannot flush what it is given. Its
// writes must fail with an error, so that the reader stops and the router
// with it, instead of blocking for ever in Pebble's write stall while the
// router holds every deadline (gated on a reader that never advances).
func TestStoreDirRemovedWhileWriting(t *testing.T) {
	quiet(t)
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	var stop atomic.Bool
	errc := make(chan error, 1)
	go fillBatches(s, 0, &stop, errc)
	var got error
	poll.Until(t, 20*time.Second, "a write to the store in a removed directory to fail", func() bool {
		select {
		case got = <-errc:
			return true
		default:
			return false
		}
	}, func() string { return "the writer is still blocked in Commit or still writing" })
	stop.Store(true)
	if got == nil {
		t.Fatal("the writer stopped without an error")
	}
	t.Logf("write failed as it should: %v", got)
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	poll.Until(t, 10*time.Second, "Close of a broken store to return", func() bool {
		select {
		case err := <-closed:
			t.Logf("Close of the broken store returned %v", err)
			return true
		default:
			return false
		}
	}, nil)
}

// TestStoreTableRemovedLookup: a lookup that finds a table of the store
// missing (its directory was removed, or the disk lost it) must return an
// error, which stops the router in order, and not panic the process.
func TestStoreTableRemovedLookup(t *testing.T) {
	quiet(t)
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, put(cancel("a", 1, 0), 100))
	if err := s.db.Flush(); err != nil { // "a" now lives in a table
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Lookup("a"); err == nil {
		t.Error("Lookup of a cancellation whose table is gone succeeded")
	} else {
		t.Logf("lookup failed as it should: %v", err)
	}
	s.Close()
}

// quiet drops the store's error logs for the test: a store that cannot
// flush may report each failed attempt.
func quiet(t *testing.T) {
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
}
