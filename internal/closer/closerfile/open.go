package closerfile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/closer/httpcloser"
	"github.com/hourglass/hourglass/internal/closer/kafkacloser"
	"github.com/hourglass/hourglass/internal/closer/sqlcloser"
)

// Closers are the open closers of a File.
type Closers struct {
	// ByKind holds the closer of each kind of the file, with the limits
	// the file sets on its closes.
	ByKind map[string]Kind
	open   []closer.Stopper
}

// Kind is the open closer of one task kind and the limits the closers file
// sets on its closes, which the caller applies.
type Kind struct {
	Closer closer.Closer
	// RateLimit bounds the kind's closes per second; 0 means no limit of
	// its own (Entry.RateLimit).
	RateLimit float64
	// RateBurst is the bucket size of RateLimit (Entry.RateBurst).
	RateBurst int
}

// Open opens the closer of every kind (database pools are pinged, so a
// wrong DSN fails here). kafka are the connection options of the
// cluster for kafka closers. On error, what was opened is stopped.
func (f File) Open(ctx context.Context, kafka []kgo.Opt, log *slog.Logger) (*Closers, error) {
	cs := &Closers{ByKind: make(map[string]Kind, len(f.Closers))}
	for _, kind := range f.Kinds() {
		c, err := f.open(ctx, kind, kafka, log)
		if err != nil {
			_ = cs.Stop()
			return nil, err
		}
		e := f.Closers[kind]
		cs.ByKind[kind] = Kind{Closer: c, RateLimit: e.RateLimit, RateBurst: e.RateBurst}
		if s, ok := c.(closer.Stopper); ok {
			cs.open = append(cs.open, s)
		}
	}
	return cs, nil
}

// OpenSQL opens the sql closer of kind, for reconcile.
func (f File) OpenSQL(ctx context.Context, kind string) (*sqlcloser.Closer, error) {
	e, ok := f.Closers[kind]
	if !ok {
		return nil, fmt.Errorf("closers: no kind %q (have %s)", kind, strings.Join(f.Kinds(), ", "))
	}
	if e.SQL == nil {
		return nil, fmt.Errorf("closers.%s: a %s closer; reconcile needs an sql closer", kind, e.Type())
	}
	c, err := sqlcloser.New(ctx, *e.SQL)
	if err != nil {
		return nil, fmt.Errorf("closers.%s.sql: %w", kind, err)
	}
	return c, nil
}

// open opens the closer of kind; kafka and log are Open's.
func (f File) open(ctx context.Context, kind string, kafka []kgo.Opt, log *slog.Logger) (closer.Closer, error) {
	e := f.Closers[kind]
	var (
		c   closer.Closer
		err error
	)
	switch {
	case e.SQL != nil:
		c, err = sqlcloser.New(ctx, *e.SQL)
	case e.HTTP != nil:
		c, err = httpcloser.New(*e.HTTP)
	case e.Kafka != nil:
		c, err = kafkacloser.New(*e.Kafka, kafka)
	default:
		c = closer.Log{Logger: log.With("kind", kind)}
	}
	if err != nil {
		return nil, fmt.Errorf("closers.%s.%s: %w", kind, e.Type(), err)
	}
	return c, nil
}

// Stop stops every closer that holds resources; call it after the last
// close.
func (cs *Closers) Stop() error {
	var errs []error
	for _, s := range cs.open {
		errs = append(errs, s.Stop())
	}
	return errors.Join(errs...)
}
