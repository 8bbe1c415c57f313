package schedulecmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/term"
	"github.com/hourglass/hourglass/pkg/tiers"
)

const scheduleUsage = `hourglass schedule produces one deadline: a record keyed by the task id in the
delay topic of its delay, as tiers.Scheduler.Schedule does in a service. It
prints the topic and partition and the due time; hourglass status ID shows
where the task is afterwards. A due time in the past fires at once.

Usage: hourglass schedule --id ID (--in DURATION | --at TIME) [--kind KIND]
                          [--target TOPIC] [--payload STRING|@FILE] [flags]

Examples:
  hourglass schedule --id order-42 --in 30m
  hourglass schedule --id order-42 --at 2026-05-14T12:30:00Z --payload '{"order":42}'
  hourglass schedule --id reminder-7 --in 1h --kind reminder --target sms.send --payload @sms.json

` + cli.FlagsHeading + "\n"

// Schedule is the `hourglass schedule` command.
func Schedule(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		c    common
		f    taskFlags
		task tiers.Task
	)
	now := time.Now()
	fs := cli.NewFlagSet("schedule", scheduleUsage)
	fs.SetOutput(stderr)
	c.register(fs, "hourglass-schedule")
	f.register(fs)
	if err := c.parse(fs, args, func(errs *cli.Problems) { task = f.task(fs, c.id, c.prefix, now, errs) }); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	// One instant for the whole command, so that the topic printed is
	// the topic the record goes to.
	clock := func() time.Time { return now }
	rec, err := tiers.BuildRecord(c.prefix, c.table, now, task)
	if err != nil {
		return err
	}
	need := []string{rec.Topic}
	if task.Target != "" {
		need = append(need, task.Target)
	}
	cl, parts, err := c.client(ctx, need)
	if err != nil {
		return err
	}
	defer cl.Close()
	s, err := tiers.NewScheduler(cl, c.table, tiers.WithPrefix(c.prefix), tiers.WithClock(clock))
	if err != nil {
		return err
	}
	if err := s.Schedule(ctx, task); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "scheduled %s in %s: due %s (%s)\n",
		term.Quote(task.ID), where(rec.Topic, task.ID, parts), stamp(task.Due), untilText(task.Due, time.Now()))
	return nil
}
