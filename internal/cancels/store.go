package cancels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// DefaultCacheBytes is Pebble's block cache when Options.CacheBytes is 0.
const DefaultCacheBytes int64 = 8 << 20

// The Pebble settings that keep the memory of a store flat; pebbleOptions
// says why each has its value.
const (
	memTableBytes   = 2 << 20
	maxOpenFiles    = 128
	bloomBitsPerKey = 10
	// blockBytes is the size of a table block: with the 368 bytes the block
	// cache allocates with each block (block.MetadataSize and the cache
	// entry's 32), a block fills the Go allocator's 8 KiB size class, whose
	// spans hold one object.
	blockBytes = 8192 - block.MetadataSize - 32
)

// sweepChunk is how many expiry index entries one batch of Sweep deletes, so
// that a long sweep holds the write lock only briefly at a time.
const sweepChunk = 1000

// Key layout. Every key starts with one byte naming its kind:
//
//	'c' id                  -> value (see appendValue): the cancellation of task id
//	'e' expiry(8, BE) id    -> empty: the expiry index, in expiry order
//	'm' name                -> metadata: "format" and "len" (varints), "topic" (the topic id)
//	'o' partition(4, BE)    -> varint: the next offset of a partition
//
// The expiry in the index is unix milliseconds with the sign bit flipped, so
// that the big-endian bytes sort as the signed numbers do.
const (
	prefixCancel = 'c'
	prefixExpiry = 'e'
	prefixOffset = 'o'
)

// formatVersion is the key and value layout above. A store of another
// format is refused at Open.
const formatVersion = 1

var (
	keyFormat = []byte("mformat")
	keyLen    = []byte("mlen")
	keyTopic  = []byte("mtopic") // the id of the topic read (see TopicID)

	errClosed  = errors.New("cancels: store is closed")
	errCorrupt = errors.New("corrupt value")
)

// Store holds cancellations on disk, one per task id (the latest, as in the
// compacted topic), each with the time after which it can no longer matter
// (its expiry), and the next offset of each partition of the topic read so
// far. It is safe for concurrent use: one writer (the Reader, through
// Batch.Commit, and whoever calls Sweep and Reset) and any number of readers
// (Lookup, Offsets, Len). Its methods return an error after Close.
type Store struct {
	dir  string
	temp bool // dir was created by Open and is removed by Close

	// mu guards db against Close: every method holds it for reading, Close
	// for writing.
	mu sync.RWMutex
	db *pebble.DB

	// wmu serialises the writes (Commit, Sweep, Reset): each reads what the
	// store holds before it decides what to write.
	wmu  sync.Mutex
	seen map[string]entry // under wmu: Commit's view of the ids of its batch

	n    atomic.Int64 // cancellations held
	keys sync.Pool    // *[]byte: key buffers of Lookup

	// failed holds the first error that broke the store (see fail); nil
	// while it is healthy.
	failed atomic.Pointer[error]
}

// entry is what Commit knows of a task id: whether it has a cancellation,
// and its expiry (unix ms).
type entry struct {
	expires int64
	exists  bool
}

// Options configures Open. The zero value is a store in a temporary
// directory with the default cache.
type Options struct {
	// Dir is the Pebble directory. Empty: a temporary directory that Close
	// removes (the store is rebuilt from the topic at every start).
	Dir string
	// CacheBytes is Pebble's block cache, which also accounts for the
	// memtables. Default (0): DefaultCacheBytes. Negative is an error.
	CacheBytes int64
}

// Open opens the store in o.Dir, creating it if needed, or in a new
// temporary directory.
func Open(o Options) (*Store, error) {
	if o.CacheBytes < 0 {
		return nil, fmt.Errorf("cancels: Options.CacheBytes is %d; want 0 (default %d) or more", o.CacheBytes, DefaultCacheBytes)
	}
	if o.CacheBytes == 0 {
		o.CacheBytes = DefaultCacheBytes
	}
	s := &Store{dir: o.Dir, seen: map[string]entry{}}
	s.keys.New = func() any { return new([]byte) }
	if s.dir != "" {
		if err := privateDir(s.dir); err != nil {
			return nil, err
		}
	} else {
		removeStale(os.TempDir())
		dir, err := os.MkdirTemp("", tempPrefix+strconv.Itoa(os.Getpid())+"-")
		if err != nil {
			return nil, fmt.Errorf("cancels: create a temporary directory: %w", err)
		}
		s.dir, s.temp = dir, true
	}
	cache := pebble.NewCache(o.CacheBytes)
	defer cache.Unref() // the DB holds its own reference
	db, err := pebble.Open(s.dir, pebbleOptions(cache, s.dir, s.fail))
	if err != nil {
		_ = s.removeTemp()                  // the error to report is Open's
		if errors.Is(err, syscall.EAGAIN) { // Linux's answer to a lock another process holds
			return nil, fmt.Errorf("cancels: %s is in use by another process: each router needs a directory of its own: %w", s.dir, err)
		}
		return nil, fmt.Errorf("cancels: open pebble in %s: %w", s.dir, err)
	}
	s.db = db
	if err := s.load(); err != nil {
		_ = db.Close()
		_ = s.removeTemp()
		return nil, err
	}
	return s, nil
}

// pebbleOptions tunes Pebble for a flat footprint: the store may hold
// millions of cancellations, and its memory must not grow with them. fail is
// told of the errors that break the store: a flush or compaction that
// failed (the directory was removed, the volume is full or read-only), or a
// table found missing or corrupt.
func pebbleOptions(cache *pebble.Cache, dir string, fail func(error)) *pebble.Options {
	o := &pebble.Options{
		FS:     privateFS{vfs.Default},
		Logger: pebbleLogger{dir: dir},
		// Pebble's defaults log every retry of a failed flush, without end,
		// and panic on a corrupt or missing table. The store is a copy of
		// the topic: it fails instead (see Store.fail), its writes return
		// the error, and the router stops in order; a restart rebuilds it.
		EventListener: &pebble.EventListener{
			BackgroundError: fail,
			DataCorruption:  func(info pebble.DataCorruptionInfo) { fail(info.Details) },
		},
		// The block cache bounds the memory of blocks read, and Pebble
		// reserves the memtables out of it too.
		Cache: cache,
		// Half Pebble's default memtable: the live one and the one Pebble
		// keeps for reuse take half the default cache, and smaller ones
		// cost writes more flushes and compactions (docs/benchmarks.md).
		MemTableSize: memTableBytes,
		// Bounds the file cache of open tables (default 1000). Tables grow
		// from 2 MiB in L0 up to 16 MiB and more at the bottom, so 128 hold
		// some 100 million cancellations; past that, lookups reopen tables.
		MaxOpenFiles: maxOpenFiles,
		// No write-ahead log: the topic is the source of truth, and each
		// batch carries the offsets of the records it holds. A crash loses
		// the batches not yet flushed to sstables, whole and in order, so
		// the offsets that survive say where to read again. Close flushes.
		DisableWAL:         true,
		FormatMajorVersion: pebble.FormatNewest,
	}
	// Bloom filters on every level: most lookups are of tasks that were
	// never cancelled, and a filter answers them without reading a block.
	// Blocks of blockBytes, one to a span of the Go allocator, so that the
	// blocks the cache evicts free their spans and a full cache does not
	// fragment the heap (docs/benchmarks.md).
	for i := range o.Levels {
		o.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		o.Levels[i].BlockSize = blockBytes
		o.Levels[i].IndexBlockSize = blockBytes
	}
	return o
}

// pebbleLogger passes Pebble's errors to slog.Default() and drops its
// informational lines (a few for every open, flush and compaction).
type pebbleLogger struct{ dir string }

func (pebbleLogger) Infof(string, ...any) {}

func (l pebbleLogger) Errorf(format string, args ...any) {
	slog.Error("cancels: pebble: "+fmt.Sprintf(format, args...), "dir", l.dir)
}

// Fatalf reports a broken invariant of Pebble, which must not go on.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	panic(fmt.Sprintf("cancels: pebble in %s: "+format, append([]any{l.dir}, args...)...))
}

// load checks the format of the store, writing it into a new one, and reads
// how many cancellations it holds.
func (s *Store) load() error {
	format, ok, err := s.getVarint(keyFormat)
	if err != nil {
		return fmt.Errorf("cancels: read the format of %s: %w", s.dir, err)
	}
	if !ok {
		if err := s.db.Set(keyFormat, binary.AppendVarint(nil, formatVersion), pebble.NoSync); err != nil {
			return fmt.Errorf("cancels: write the format of %s: %w", s.dir, err)
		}
	} else if format != formatVersion {
		return fmt.Errorf("cancels: %s holds a store of format %d, not %d: remove it, and the store is rebuilt from the topic", s.dir, format, formatVersion)
	}
	n, _, err := s.getVarint(keyLen)
	if err != nil {
		return fmt.Errorf("cancels: read the length of %s: %w", s.dir, err)
	}
	s.n.Store(n)
	return nil
}

// getVarint reads a varint value.
func (s *Store) getVarint(key []byte) (int64, bool, error) {
	v, closer, err := s.db.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer closer.Close()
	x, n := binary.Varint(v)
	if n <= 0 || n != len(v) {
		return 0, false, errCorrupt
	}
	return x, true, nil
}

// removeTemp removes a temporary directory.
func (s *Store) removeTemp() error {
	if !s.temp {
		return nil
	}
	if err := os.RemoveAll(s.dir); err != nil {
		return fmt.Errorf("cancels: remove %s: %w", s.dir, err)
	}
	return nil
}

// fail records err as what broke the store, if nothing did before, and
// logs it once. From then on writes (Batch.Commit, Sweep, Reset) return it
// instead of waiting for ever in Pebble's write stall: Pebble keeps trying a
// flush that failed, and stops taking writes once its memtables are full.
func (s *Store) fail(err error) {
	if err == nil || !s.failed.CompareAndSwap(nil, &err) {
		return
	}
	slog.Error("cancels: the store of cancellations cannot be written or read; the router stops, and a restart rebuilds the store from the topic",
		"dir", s.dir, "err", err)
}

// Err returns the error that broke the store, or nil.
func (s *Store) Err() error {
	if p := s.failed.Load(); p != nil {
		return *p
	}
	return nil
}

// broken returns Err wrapped for a write that was refused, or nil.
func (s *Store) broken() error {
	if err := s.Err(); err != nil {
		return fmt.Errorf("cancels: the store in %s is broken: %w", s.dir, err)
	}
	return nil
}

// Close flushes a persistent store (there is no write-ahead log) and closes
// it, or closes and removes a temporary one. Further calls return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.db == nil {
		return nil
	}
	var err error
	// A broken store is not flushed: the flush would fail again, or wait
	// for ever for one that does. The topic is the source of truth.
	if !s.temp && s.Err() == nil {
		if ferr := s.db.Flush(); ferr != nil {
			err = fmt.Errorf("cancels: flush %s: %w", s.dir, ferr)
		}
	}
	if cerr := s.db.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("cancels: close %s: %w", s.dir, cerr))
	}
	s.db = nil
	return errors.Join(err, s.removeTemp())
}

// Lookup returns the cancellation of task id, if the store holds one. A
// committed batch is seen at once; an empty store answers without reading.
// The returned ID is id itself.
func (s *Store) Lookup(id string) (tiers.Cancellation, bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return tiers.Cancellation{}, false, errClosed
	}
	if s.n.Load() == 0 {
		return tiers.Cancellation{}, false, nil
	}
	kp := s.keys.Get().(*[]byte)
	*kp = cancelKey((*kp)[:0], id)
	v, closer, err := s.db.Get(*kp)
	s.keys.Put(kp)
	if errors.Is(err, pebble.ErrNotFound) {
		return tiers.Cancellation{}, false, nil
	}
	if err != nil {
		s.fail(err)
		return tiers.Cancellation{}, false, fmt.Errorf("cancels: look up %q: %w", id, err)
	}
	c, _, err := decodeValue(v)
	closer.Close()
	if err != nil {
		return tiers.Cancellation{}, false, fmt.Errorf("cancels: look up %q: %w", id, err)
	}
	c.ID = id
	return c, true, nil
}

// Len returns how many cancellations the store holds. It is exact once the
// batches, sweeps and resets that ran before it have returned.
func (s *Store) Len() int64 { return s.n.Load() }

// Offsets returns the next offset of each partition set by SetOffset: where
// to go on reading the topic. It is empty for a new store.
func (s *Store) Offsets() (map[int32]int64, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, errClosed
	}
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: []byte{prefixOffset}, UpperBound: []byte{prefixOffset + 1}})
	if err != nil {
		return nil, fmt.Errorf("cancels: read offsets: %w", err)
	}
	defer it.Close() // its error, if any, is it.Error's
	offsets := map[int32]int64{}
	for valid := it.First(); valid; valid = it.Next() {
		k := it.Key()
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, fmt.Errorf("cancels: read offsets: %w", err)
		}
		next, n := binary.Varint(v)
		if len(k) != 5 || n <= 0 || n != len(v) {
			return nil, fmt.Errorf("cancels: read offsets: key %x: %w", k, errCorrupt)
		}
		offsets[int32(binary.BigEndian.Uint32(k[1:]))] = next
	}
	if err := it.Error(); err != nil {
		return nil, fmt.Errorf("cancels: read offsets: %w", err)
	}
	return offsets, nil
}

// TopicID returns the id of the topic the store was read from, set by
// SetTopicID, or nil.
func (s *Store) TopicID() ([]byte, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.db == nil {
		return nil, errClosed
	}
	v, closer, err := s.db.Get(keyTopic)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cancels: read the topic id: %w", err)
	}
	defer closer.Close()
	return append([]byte(nil), v...), nil
}

// SetTopicID records the id of the topic the store is read from, so that
// a topic deleted and created again, whose offsets start over, is told
// from it.
func (s *Store) SetTopicID(id []byte) error {
	return s.write(func() error {
		if err := s.db.Set(keyTopic, id, pebble.NoSync); err != nil {
			return fmt.Errorf("cancels: write the topic id: %w", err)
		}
		return nil
	})
}
