package schedulecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const cancelUsage = `hourglass cancel calls off deadlines of a task: it produces a record keyed by
the task id to the cancellations topic (<prefix>cancellations), as
tiers.Scheduler.Cancel does in a service.

Without --due it calls off every deadline of the task scheduled until now;
with --due only the one due then. A cancellation the broker acknowledged
before the deadline was due guarantees that the deadline never reaches its
target. One acknowledged at or after the due time is recorded, but the
deadline may have fired: the command says so and exits 1; hourglass status ID
tells what happened. The latest cancellation of a task replaces the earlier
ones. --withdraw withdraws the task's cancellation (a tombstone): the
deadlines it has not dropped yet fire again when due.

Usage: hourglass cancel --id ID [--due TIME | --withdraw] [flags]

Examples:
  hourglass cancel --id order-42
  hourglass cancel --id order-42 --due 2026-05-14T12:30:00Z
  hourglass cancel --id order-42 --due 1778761800000
  hourglass cancel --id order-42 --withdraw

` + cli.FlagsHeading + "\n"

// Cancel is the `hourglass cancel` command.
func Cancel(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c        common
		rawDue   string
		due      time.Time
		withdraw bool
	)
	fs := cli.NewFlagSet("cancel", cancelUsage)
	fs.SetOutput(stderr)
	c.register(fs, "hourglass-cancel")
	c.registerCancellations(fs)
	fs.StringVar(&rawDue, "due", "", "", "only the deadline due at this `time`: RFC 3339 or unix milliseconds (default: every deadline of the task)")
	fs.BoolVar(&withdraw, "withdraw", "", false, "withdraw the task's cancellation instead")
	err := c.parse(fs, args, func(errs *cli.Problems) {
		if rawDue == "" {
			return
		}
		var err error
		if due, err = record.ParseDue(rawDue); err != nil {
			errs.Add("due", "%v", err)
		} else if withdraw {
			errs.Add("due", "give --due or --withdraw, not both: a withdrawal is of the task's cancellation, whatever it names")
		}
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	topic := c.cancellationsTopic()
	cl, parts, err := c.client(ctx, []string{topic})
	if err != nil {
		return err
	}
	defer cl.Close()
	at := where(topic, c.id, parts)
	if withdraw {
		return withdrawCancellation(ctx, cl, topic, c.id, at, stdout)
	}
	var clock recordingClock
	s, err := tiers.NewScheduler(cl, c.table, tiers.WithPrefix(c.prefix), tiers.WithCancellationsTopic(topic), tiers.WithClock(clock.now))
	if err != nil {
		return err
	}
	err = s.Cancel(ctx, c.id, due)
	if err != nil && !errors.Is(err, tiers.ErrLate) {
		return err
	}
	for _, l := range cancelledLines(c.id, at, due, clock.first(), clock.last()) {
		fmt.Fprintln(stdout, l)
	}
	if err != nil {
		return lateError("cancelled: recorded", c.id, err)
	}
	return nil
}

// cancelledLines say what the cancellation of id, made at made and
// acknowledged at acked, calls off; at is where it is. The command does not
// look for the task's deadlines (that is a scan of every delay topic:
// hourglass status), so the lines say what the record stops if there is
// such a deadline, not that there was one.
func cancelledLines(id, at string, due, made, acked time.Time) []string {
	if due.IsZero() {
		return []string{
			fmt.Sprintf("cancellation of %s recorded: %s, acknowledged at %s", term.Quote(id), at, stamp(acked)),
			fmt.Sprintf("it stops every deadline of %s scheduled until %s and due after %s; one due earlier may have fired. "+
				"This command does not look for deadlines: hourglass status %s lists them", term.Quote(id), stamp(made), stamp(acked), term.Quote(id)),
		}
	}
	return []string{fmt.Sprintf("cancellation of the deadline of %s due %s recorded: %s, acknowledged at %s, %s",
		term.Quote(id), stamp(due), at, stamp(acked), relative(acked, due))}
}

// relative says when acked was against due.
func relative(acked, due time.Time) string {
	d := due.Sub(acked)
	if d > 0 {
		// In time, however close: less than half a millisecond, rounded
		// to one, would read 0s.
		if r := d.Round(time.Millisecond); r > 0 {
			d = r
		}
		return d.String() + " before the due time: such a deadline does not reach its target"
	}
	return (-d).Round(time.Millisecond).String() + " after the due time"
}

// lateError is the error of a cancellation acknowledged after its
// deadline was due; it wraps err, which wraps tiers.ErrLate. lead says
// what was done.
func lateError(lead, id string, err error) error {
	return fmt.Errorf("%s %s, but acknowledged after the deadline was due; it may have fired: see hourglass status %s\n(%w)",
		term.Quote(id), lead, term.Quote(id), err)
}

// withdrawCancellation produces the tombstone of id's cancellation to
// topic.
func withdrawCancellation(ctx context.Context, cl *kgo.Client, topic, id, at string, w io.Writer) error {
	r, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: id, At: time.Now(), Withdrawn: true})
	if err != nil {
		return err
	}
	r.Topic = topic
	if err := cl.ProduceSync(ctx, r).FirstErr(); err != nil {
		return fmt.Errorf("withdraw the cancellation of %s: %w", id, err)
	}
	fmt.Fprintf(w, "withdrew the cancellation of %s: %s at %s; deadlines it dropped stay dropped\n", term.Quote(id), at, stamp(r.Timestamp))
	return nil
}

// recordingClock is time.Now that remembers its first reading, the time a
// Scheduler gives the cancellation, and its last, the time it judges the
// acknowledgement by.
type recordingClock struct {
	mu     sync.Mutex
	t0, t1 time.Time
}

func (c *recordingClock) now() time.Time {
	t := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.t0.IsZero() {
		c.t0 = t
	}
	c.t1 = t
	return t
}

func (c *recordingClock) last() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t1
}

func (c *recordingClock) first() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t0
}
