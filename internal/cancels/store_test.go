package cancels

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// base is the time the tests cancel at.
var base = time.UnixMilli(1_800_000_000_000)

// ms returns base plus n milliseconds.
func ms(n int64) time.Time { return base.Add(time.Duration(n) * time.Millisecond) }

// cancel is a cancellation of id at base+at ms, for the deadline due at
// base+due ms (every deadline when due is 0).
func cancel(id string, at, due int64) tiers.Cancellation {
	c := tiers.Cancellation{ID: id, At: ms(at)}
	if due != 0 {
		c.Due = ms(due)
	}
	return c
}

// open opens a store in a temporary directory and closes it at the end of
// the test.
func open(t testing.TB) *Store {
	t.Helper()
	s, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

// commit applies one batch of writes.
func commit(t testing.TB, s *Store, writes ...func(*Batch)) {
	t.Helper()
	b := s.NewBatch()
	for _, w := range writes {
		w(b)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

func put(c tiers.Cancellation, expires int64) func(*Batch) {
	return func(b *Batch) { b.Put(c, ms(expires)) }
}

func withdraw(id string) func(*Batch) { return func(b *Batch) { b.Withdraw(id) } }

func offset(p int32, next int64) func(*Batch) {
	return func(b *Batch) { b.SetOffset(p, next) }
}

// lookup returns the cancellation of id, or nil.
func lookup(t testing.TB, s *Store, id string) *tiers.Cancellation {
	t.Helper()
	c, ok, err := s.Lookup(id)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return nil
	}
	return &c
}

// checkHolds checks that s holds exactly want, and one expiry index entry
// per cancellation.
func checkHolds(t *testing.T, s *Store, want map[string]*tiers.Cancellation) {
	t.Helper()
	n := int64(0)
	for id, w := range want {
		got := lookup(t, s, id)
		switch {
		case w == nil && got != nil:
			t.Errorf("Lookup(%.20q) = %+v, want none", id, *got)
		case w != nil && got == nil:
			t.Errorf("Lookup(%.20q) = none, want %+v", id, *w)
		case w != nil && !same(*got, *w):
			t.Errorf("Lookup(%.20q) = %+v, want %+v", id, *got, *w)
		}
		if w != nil {
			n++
		}
	}
	if got := s.Len(); got != n {
		t.Errorf("Len() = %d, want %d", got, n)
	}
	if c, e := count(t, s, prefixCancel), count(t, s, prefixExpiry); c != n || e != n {
		t.Errorf("%d cancellation keys and %d expiry index keys, want %d of each", c, e, n)
	}
}

// same compares cancellations to the millisecond.
func same(a, b tiers.Cancellation) bool {
	return a.ID == b.ID && a.At.Equal(b.At) && a.Due.Equal(b.Due) && a.Withdrawn == b.Withdrawn
}

// count counts the keys of a kind.
func count(t *testing.T, s *Store, prefix byte) int64 {
	t.Helper()
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefix}, UpperBound: []byte{prefix + 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer it.Close()
	n := int64(0)
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n
}

func ptr(c tiers.Cancellation) *tiers.Cancellation { return &c }

func TestPutLookupWithdraw(t *testing.T) {
	long := strings.Repeat("\x00\xffé", 350) // ~1 KiB of arbitrary bytes
	tests := []struct {
		name    string
		batches [][]func(*Batch)
		want    map[string]*tiers.Cancellation
	}{
		{"put", [][]func(*Batch){{put(cancel("a", 1, 0), 100)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 1, 0)), "b": nil}},
		{"put with due", [][]func(*Batch){{put(cancel("a", 1, 60_000), 100)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 1, 60_000))}},
		{"due before at and at before 1970", [][]func(*Batch){{put(tiers.Cancellation{ID: "a", At: time.UnixMilli(-5), Due: time.UnixMilli(0)}, 100)}},
			map[string]*tiers.Cancellation{"a": {ID: "a", At: time.UnixMilli(-5), Due: time.UnixMilli(0)}}},
		{"arbitrary and empty ids", [][]func(*Batch){{put(cancel(long, 1, 0), 100), put(cancel("", 2, 0), 100), put(cancel("\x00", 3, 0), 100)}},
			map[string]*tiers.Cancellation{long: ptr(cancel(long, 1, 0)), "": ptr(cancel("", 2, 0)), "\x00": ptr(cancel("\x00", 3, 0)), long[:10]: nil}},
		{"a later batch replaces", [][]func(*Batch){{put(cancel("a", 1, 0), 100)}, {put(cancel("a", 2, 50), 200)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 50))}},
		{"the last put of a batch wins", [][]func(*Batch){{put(cancel("a", 1, 0), 100), put(cancel("a", 2, 0), 50), put(cancel("a", 3, 0), 300)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 3, 0))}},
		{"put then withdraw in a batch", [][]func(*Batch){{put(cancel("a", 1, 0), 100), withdraw("a")}},
			map[string]*tiers.Cancellation{"a": nil}},
		{"withdraw then put in a batch", [][]func(*Batch){{put(cancel("a", 1, 0), 100)}, {withdraw("a"), put(cancel("a", 2, 0), 100)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 0))}},
		{"withdraw in a later batch", [][]func(*Batch){{put(cancel("a", 1, 0), 100), put(cancel("b", 1, 0), 100)}, {withdraw("a")}},
			map[string]*tiers.Cancellation{"a": nil, "b": ptr(cancel("b", 1, 0))}},
		{"put again once the store emptied", [][]func(*Batch){{put(cancel("a", 1, 0), 100)}, {withdraw("a")}, {put(cancel("a", 2, 0), 100)}},
			map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 0))}},
		{"withdraw of nothing", [][]func(*Batch){{withdraw("a"), withdraw("a")}},
			map[string]*tiers.Cancellation{"a": nil}},
		{"put of a tombstone withdraws", [][]func(*Batch){{put(cancel("a", 1, 0), 100)}, {put(tiers.Cancellation{ID: "a", At: ms(2), Withdrawn: true}, 100)}},
			map[string]*tiers.Cancellation{"a": nil}},
		{"an empty batch", [][]func(*Batch){{}},
			map[string]*tiers.Cancellation{"a": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			for _, b := range tt.batches {
				commit(t, s, b...)
			}
			checkHolds(t, s, tt.want)
		})
	}
}

func TestSweep(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]func(*Batch)
		at      int64 // sweep before base+at ms
		deleted int
		want    map[string]*tiers.Cancellation
	}{
		{"before, at and after the sweep", [][]func(*Batch){{put(cancel("a", 1, 0), 99), put(cancel("b", 1, 0), 100), put(cancel("c", 1, 0), 101)}},
			100, 1, map[string]*tiers.Cancellation{"a": nil, "b": ptr(cancel("b", 1, 0)), "c": ptr(cancel("c", 1, 0))}},
		{"nothing expired", [][]func(*Batch){{put(cancel("a", 1, 0), 200)}},
			100, 0, map[string]*tiers.Cancellation{"a": ptr(cancel("a", 1, 0))}},
		{"a replacement that expires later stays", [][]func(*Batch){{put(cancel("a", 1, 0), 50)}, {put(cancel("a", 2, 0), 200)}},
			100, 0, map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 0))}},
		{"a replacement that expires earlier goes", [][]func(*Batch){{put(cancel("a", 1, 0), 200), put(cancel("a", 2, 0), 50)}},
			100, 1, map[string]*tiers.Cancellation{"a": nil}},
		{"a withdrawn one is not counted", [][]func(*Batch){{put(cancel("a", 1, 0), 50)}, {withdraw("a")}},
			100, 0, map[string]*tiers.Cancellation{"a": nil}},
		{"expiries before 1970", [][]func(*Batch){{func(b *Batch) { b.Put(cancel("a", 1, 0), time.UnixMilli(-10)) }}},
			100, 1, map[string]*tiers.Cancellation{"a": nil}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			for _, b := range tt.batches {
				commit(t, s, b...)
			}
			n, err := s.Sweep(ms(tt.at))
			if err != nil || n != tt.deleted {
				t.Errorf("Sweep() = %d, %v, want %d", n, err, tt.deleted)
			}
			checkHolds(t, s, tt.want)
		})
	}
}

// TestSweepChunks sweeps more than one chunk, with cancellations that stay
// between the expired ones.
func TestSweepChunks(t *testing.T) {
	s := open(t)
	b := s.NewBatch()
	want := map[string]*tiers.Cancellation{}
	expired := 0
	for i := range 3*sweepChunk + 7 {
		id := "order-" + strconv.Itoa(i)
		c := cancel(id, 1, 0)
		exp := int64(i % 100) // 0..99: those below 50 go
		b.Put(c, ms(exp))
		want[id] = nil
		if exp >= 50 {
			want[id] = &c
		} else {
			expired++
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ms(50))
	if err != nil || n != expired {
		t.Errorf("Sweep() = %d, %v, want %d", n, err, expired)
	}
	checkHolds(t, s, want)
}

// TestSweepStaleIndexEntry puts an index entry beside the current one of a
// task, as an older version of the store could leave: Sweep drops it but
// keeps the cancellation, whose expiry is later.
func TestSweepStaleIndexEntry(t *testing.T) {
	s := open(t)
	commit(t, s, put(cancel("a", 2, 0), 200))
	if err := s.db.Set(expiryKey(nil, ms(50).UnixMilli(), "a"), nil, pebble.NoSync); err != nil {
		t.Fatal(err)
	}
	n, err := s.Sweep(ms(100))
	if err != nil || n != 0 {
		t.Errorf("Sweep() = %d, %v, want 0", n, err)
	}
	checkHolds(t, s, map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 0))})
	if n, err := s.Sweep(ms(201)); err != nil || n != 1 {
		t.Errorf("Sweep() after the expiry = %d, %v, want 1", n, err)
	}
}

func TestOffsets(t *testing.T) {
	tests := []struct {
		name    string
		batches [][]func(*Batch)
		want    map[int32]int64
	}{
		{"none", nil, map[int32]int64{}},
		{"partitions", [][]func(*Batch){{offset(0, 10), offset(1, 0), offset(1<<31-1, 1<<62)}},
			map[int32]int64{0: 10, 1: 0, 1<<31 - 1: 1 << 62}},
		{"the last of a batch wins", [][]func(*Batch){{offset(0, 10), offset(0, 5)}}, map[int32]int64{0: 5}},
		{"a later batch replaces", [][]func(*Batch){{offset(0, 10), offset(1, 3)}, {offset(0, 20)}}, map[int32]int64{0: 20, 1: 3}},
		{"beside cancellations", [][]func(*Batch){{put(cancel("a", 1, 0), 100), offset(2, 1), withdraw("a")}}, map[int32]int64{2: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := open(t)
			for _, b := range tt.batches {
				commit(t, s, b...)
			}
			checkOffsets(t, s, tt.want)
		})
	}
}

func checkOffsets(t *testing.T, s *Store, want map[int32]int64) {
	t.Helper()
	got, err := s.Offsets()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("Offsets() = %v, want %v", got, want)
	}
	for p, w := range want {
		if g, ok := got[p]; !ok || g != w {
			t.Errorf("Offsets() = %v, want %v", got, want)
		}
	}
}

func TestReset(t *testing.T) {
	s := open(t)
	commit(t, s, put(cancel("a", 1, 0), 100), put(cancel("b", 1, 0), 100), offset(0, 7))
	if err := s.Reset(); err != nil {
		t.Fatal(err)
	}
	checkHolds(t, s, map[string]*tiers.Cancellation{"a": nil, "b": nil})
	checkOffsets(t, s, map[int32]int64{})
	commit(t, s, put(cancel("a", 2, 0), 100), offset(1, 3))
	checkHolds(t, s, map[string]*tiers.Cancellation{"a": ptr(cancel("a", 2, 0)), "b": nil})
	checkOffsets(t, s, map[int32]int64{1: 3})
}

// TestReopen closes a store in a directory and opens it again: its
// cancellations, offsets and length are there.
func TestReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir, CacheBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, put(cancel("a", 1, 0), 100), put(cancel("b", 1, 30), 100), put(cancel("c", 1, 0), 50), offset(0, 3), offset(4, 9))
	commit(t, s, withdraw("b"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		t.Fatalf("Close removed a store's own directory: %v", err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkHolds(t, s, map[string]*tiers.Cancellation{"a": ptr(cancel("a", 1, 0)), "b": nil, "c": ptr(cancel("c", 1, 0))})
	checkOffsets(t, s, map[int32]int64{0: 3, 4: 9})
	if n, err := s.Sweep(ms(60)); err != nil || n != 1 || s.Len() != 1 {
		t.Errorf("Sweep() after reopening = %d, %v, Len %d, want 1 and Len 1", n, err, s.Len())
	}
}

func TestOpenRejects(t *testing.T) {
	if _, err := Open(Options{CacheBytes: -1}); err == nil || !strings.Contains(err.Error(), "CacheBytes") {
		t.Errorf("Open with CacheBytes -1: %v, want an error naming CacheBytes", err)
	}
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.db.Set(keyFormat, []byte{4}, pebble.NoSync); err != nil { // varint 2
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(Options{Dir: dir}); err == nil || !strings.Contains(err.Error(), "format 2") {
		t.Errorf("Open of a store of format 2: %v, want an error naming the format", err)
	}
}

// TestClose closes a store in a temporary directory: the directory is
// removed, and the methods return errors.
func TestClose(t *testing.T) {
	s, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, s, put(cancel("a", 1, 0), 100))
	dir := s.dir
	if _, err := os.Stat(dir); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after Close, stat %s: %v, want it gone", dir, err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, _, err := s.Lookup("a"); !errors.Is(err, errClosed) {
		t.Errorf("Lookup after Close: %v", err)
	}
	if err := s.NewBatch().Commit(); !errors.Is(err, errClosed) {
		t.Errorf("Commit after Close: %v", err)
	}
	if _, err := s.Sweep(base); !errors.Is(err, errClosed) {
		t.Errorf("Sweep after Close: %v", err)
	}
	if _, err := s.Offsets(); !errors.Is(err, errClosed) {
		t.Errorf("Offsets after Close: %v", err)
	}
	if err := s.Reset(); !errors.Is(err, errClosed) {
		t.Errorf("Reset after Close: %v", err)
	}
}

// TestLookupDuringCommit looks a task up from several goroutines while
// batches replace its cancellation: every lookup sees a whole batch, never
// an older one than the last seen, and the writer sees its own batch as
// soon as Commit returns.
func TestLookupDuringCommit(t *testing.T) {
	s := open(t)
	const batches = 100
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			last := int64(-1)
			for {
				select {
				case <-done:
					return
				default:
				}
				c, ok, err := s.Lookup("hot")
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				at := c.At.Sub(base).Milliseconds()
				if at < last || c.Due.Sub(base).Milliseconds() != at+1000 {
					t.Errorf("Lookup saw %+v after batch %d", c, last)
					return
				}
				last = at
				if _, ok, err := s.Lookup("cold-" + strconv.Itoa(int(at)*20+19)); !ok || err != nil {
					t.Errorf("Lookup saw the hot task of batch %d but not the last cold one: %v", at, err)
					return
				}
			}
		})
	}
	for i := range int64(batches) {
		b := s.NewBatch()
		for j := range 20 {
			b.Put(cancel("cold-"+strconv.Itoa(int(i)*20+j), i, 0), ms(100))
		}
		b.Put(cancel("hot", i, i+1000), ms(100))
		b.SetOffset(0, i)
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		if c := lookup(t, s, "hot"); c == nil || !same(*c, cancel("hot", i, i+1000)) {
			t.Fatalf("after batch %d committed, Lookup = %+v", i, c)
		}
	}
	close(done)
	wg.Wait()
	if got, want := s.Len(), int64(batches*20+1); got != want {
		t.Errorf("Len() = %d, want %d", got, want)
	}
}

func TestValueCodec(t *testing.T) {
	for _, c := range []tiers.Cancellation{cancel("", 1, 0), cancel("", 1, 1), cancel("", 1, -1e9), {At: time.UnixMilli(-1 << 50), Due: time.UnixMilli(1 << 50)}} {
		for _, exp := range []time.Time{ms(0), ms(1 << 40), time.UnixMilli(-1 << 50)} {
			v := appendValue(nil, c, exp)
			got, gotExp, err := decodeValue(v)
			if err != nil || !same(got, c) || gotExp != exp.UnixMilli() {
				t.Errorf("decodeValue(appendValue(%+v, %v)) = %+v, %d, %v", c, exp, got, gotExp, err)
			}
			for i := range len(v) {
				if _, _, err := decodeValue(v[:i]); err == nil {
					t.Errorf("decodeValue(%x), cut from %x, found no error", v[:i], v)
				}
			}
		}
	}
	if _, _, err := decodeValue([]byte{2, 0, 0}); err == nil {
		t.Error("decodeValue with an unknown flag found no error")
	}
}

// TestOpenRemovesStaleTemp: a temporary store is left behind when its
// process is killed (Close never runs); the next Open of a temporary store
// removes those of processes that are gone, and keeps those of processes
// that live (this one) and those whose lock is held.
func TestOpenRemovesStaleTemp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	// A process that has exited: its id is free (reused this soon only by
	// chance, which keeps its directory: the safe side).
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(tmp, tempPrefix+strconv.Itoa(gone.Process.Pid)+"-1")
	live := filepath.Join(tmp, tempPrefix+strconv.Itoa(os.Getpid())+"-1")
	other := filepath.Join(tmp, "unrelated")
	for _, d := range []string{stale, live, other} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	// A stale name whose store is open (another PID namespace sharing the
	// directory looks like this): its lock is held.
	heldDir := filepath.Join(tmp, tempPrefix+strconv.Itoa(gone.Process.Pid)+"-2")
	held, err := Open(Options{Dir: heldDir})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()

	s, err := Open(Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("the store of a process that is gone is still there (%v)", err)
	}
	for _, d := range []string{live, other, heldDir, s.dir} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s was removed: %v", d, err)
		}
	}
}

// TestOpenDirInUse: a store on a directory another process has open (two
// routers given one --cancellations-dir) fails with an error that says so.
func TestOpenDirInUse(t *testing.T) {
	if dir := os.Getenv("HOURGLASS_TEST_HOLD_STORE"); dir != "" {
		// The other process: open the store, say so, and hold it until
		// stdin closes.
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Println("open")
		_, _ = io.Copy(io.Discard, os.Stdin) // returns when the test closes stdin
		s.Close()
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestOpenDirInUse$")
	cmd.Env = append(os.Environ(), "HOURGLASS_TEST_HOLD_STORE="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }() // it exits when stdin closes; its status says nothing more
	defer stdin.Close()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("the other process did not open the store: %q, %v", line, err)
	}
	s, err := Open(Options{Dir: dir})
	if err == nil {
		s.Close()
		t.Fatal("a second store opened a directory in use")
	}
	if !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("error %q does not say the directory is in use", err)
	}
}

// TestStorePrivate: a persistent store's directory and files are its
// owner's alone, whether Open creates the directory or finds it open to
// others: they hold task ids.
func TestStorePrivate(t *testing.T) {
	for _, existing := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "store")
		if existing {
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		s, err := Open(Options{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		b := s.NewBatch()
		b.Put(tiers.Cancellation{ID: "order-1", At: time.Now()}, time.Now().Add(time.Hour))
		b.SetOffset(0, 1)
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil { // flushes a table
			t.Fatal(err)
		}
		err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			fi, err := d.Info()
			if err != nil {
				return err
			}
			if fi.Mode().Perm()&0o077 != 0 {
				t.Errorf("existing directory %v: %s has mode %v, open to others", existing, path, fi.Mode().Perm())
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}
