package closer

import (
	"context"
	"log/slog"

	"github.com/hourglass/hourglass/internal/outcome"
)

// Log is a closer that closes nothing: it logs each task at info level and
// reports Closed. It is the default, for trying the pipeline out and for
// targets whose real close happens downstream of the cancel topic.
type Log struct {
	Logger *slog.Logger // nil logs to slog.Default()
}

// Batches reports true: a log line costs no request.
func (Log) Batches() bool { return true }

// Close logs t and reports Closed.
func (l Log) Close(ctx context.Context, t Task) (Result, error) {
	lg := l.Logger
	if lg == nil {
		lg = slog.Default()
	}
	lg.LogAttrs(ctx, slog.LevelInfo, "close",
		slog.String("task", t.ID), slog.String("kind", t.Kind),
		slog.Time("due", t.Meta.Due), slog.Int("attempt", t.Attempt))
	return Result{Outcome: outcome.Closed}, nil
}
