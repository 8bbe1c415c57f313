package cancels

import (
	"fmt"
	"log/slog"
)

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
