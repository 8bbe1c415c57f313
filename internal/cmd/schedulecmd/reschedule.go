package schedulecmd

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/record"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// DefaultTransactionalIDPrefix is the default of
// --transactional-id-prefix: each reschedule runs its transaction under
// the prefix and a random suffix.
const DefaultTransactionalIDPrefix = "hourglass-reschedule-"

// TransactionTimeout is the transaction timeout of a reschedule (franz-go's
// default is 40s): a run killed inside its transaction holds the readers
// of committed records of the two partitions until the broker aborts it,
// at its first sweep of timed-out transactions after this (Kafka sweeps
// every 10s by default).
const TransactionTimeout = 10 * time.Second

const rescheduleUsage = `hourglass reschedule moves a task's deadline: in one Kafka transaction it
cancels the task's deadlines scheduled until now (every one, or with --from
only the one due then) and schedules the new one, as
tiers.Scheduler.Reschedule does on a transactional client. A reader of
committed records, such as the router, sees both records or neither. The
new deadline carries what its flags give: the old one's payload, kind and
target are not copied.

Each run has its own transactional id: --transactional-id-prefix and a
random suffix (with ACLs, allow Write and Describe on the prefix). A run
killed inside its transaction holds the readers of the two partitions until
the broker aborts it: a Kafka broker aborts transactions past their timeout
(10 s here) in a sweep every
transaction.abort.timed.out.transaction.cleanup.interval.ms (10 s by
default), so for up to about 20 s after the run's first record.

As with hourglass cancel, a cancellation of --from acknowledged at or after
that due time may come too late: the new deadline stands, but the old one
may have fired; the command says so and exits 1.

Usage: hourglass reschedule --id ID (--in DURATION | --at TIME) [--from TIME]
                            [--kind KIND] [--target TOPIC] [--payload STRING|@FILE] [flags]

Examples:
  hourglass reschedule --id order-42 --in 45m
  hourglass reschedule --id order-42 --at 2026-05-14T13:00:00Z --from 2026-05-14T12:30:00Z --payload '{"order":42}'

` + cli.FlagsHeading + "\n"

// rescheduleArgs are the parsed flags of reschedule.
type rescheduleArgs struct {
	common
	task      tiers.Task
	from      time.Time
	txnPrefix string
}

// parseReschedule parses and validates the command line of reschedule.
func parseReschedule(args []string, stderr io.Writer) (*rescheduleArgs, error) {
	var (
		a       rescheduleArgs
		f       taskFlags
		rawFrom string
	)
	now := time.Now()
	fs := cli.NewFlagSet("reschedule", rescheduleUsage)
	fs.SetOutput(stderr)
	a.register(fs, "hourglass-reschedule")
	a.registerCancellations(fs)
	f.register(fs)
	fs.StringVar(&rawFrom, "from", "", "", "only cancel the deadline due at this `time`: RFC 3339 or unix milliseconds (default: every deadline of the task)")
	fs.StringVar(&a.txnPrefix, "transactional-id-prefix", cli.Env("transactional-id-prefix"), DefaultTransactionalIDPrefix, "`prefix` of the run's transactional id")
	err := a.parse(fs, args, func(errs *cli.Problems) {
		a.task = f.task(fs, a.id, a.prefix, now, errs)
		if a.txnPrefix == "" {
			errs.Add("transactional-id-prefix", "must not be empty")
		}
		if rawFrom != "" {
			var err error
			if a.from, err = record.ParseDue(rawFrom); err != nil {
				errs.Add("from", "%v", err)
			}
		}
	})
	return &a, err
}

// Reschedule is the `hourglass reschedule` command.
func Reschedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	a, err := parseReschedule(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, a.timeout)
	defer cancel()
	txnID := a.txnPrefix + randomSuffix()
	cancellations := a.cancellationsTopic()
	need := append([]string{cancellations}, a.table.Topics(a.prefix)...)
	if a.task.Target != "" {
		need = append(need, a.task.Target)
	}
	cl, parts, err := a.client(ctx, need, kgo.TransactionalID(txnID), kgo.TransactionTimeout(TransactionTimeout))
	if err != nil {
		return err
	}
	defer cl.Close()
	var clock recordingClock
	s, err := tiers.NewScheduler(cl, a.table, tiers.WithPrefix(a.prefix), tiers.WithCancellationsTopic(cancellations), tiers.WithClock(clock.now))
	if err != nil {
		return err
	}
	err = s.Reschedule(ctx, a.task, a.from)
	if err != nil && !errors.Is(err, tiers.ErrLate) {
		return err
	}
	// The record Reschedule produced: scheduled 1 ms after the
	// cancellation, so that the cancellation does not cover it.
	rec, berr := tiers.BuildRecord(a.prefix, a.table, clock.first().Add(time.Millisecond), a.task)
	if berr != nil {
		return berr
	}
	fmt.Fprintf(stdout, "rescheduled %s in transaction %s:\n", term.Quote(a.id), txnID)
	for _, l := range cancelledLines(a.id, where(cancellations, a.id, parts), a.from, clock.first(), clock.last()) {
		fmt.Fprintln(stdout, "  "+l)
	}
	fmt.Fprintf(stdout, "  scheduled %s: due %s (%s)\n", where(rec.Topic, a.id, parts), stamp(a.task.Due), untilText(a.task.Due, time.Now()))
	if err != nil {
		return lateError("rescheduled: the new deadline stands and the cancellation of the old one is recorded", a.id, err)
	}
	return nil
}

// randomSuffix returns 16 random hex digits.
func randomSuffix() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
