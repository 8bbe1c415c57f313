// Command wakecost measures what it costs a Go process on this machine to
// wake up from idle, make a few round trips over loopback TCP and go idle
// again: the floor under the CPU the router and the canceller spend per
// deadline at low rates, where each batch window wakes them a few times
// whatever it carries. Figures per deadline from different machines, or
// from one machine on different days, compare only next to this one.
//
//	go run ./scripts/wakecost [--interval 5ms] [--wakes 1000] [--round-trips 1,3] [--procs 1,2]
//
// For each number of round trips per wake and each GOMAXPROCS it starts
// itself as a client process with that GOMAXPROCS, against an echo server
// on 127.0.0.1 in this process. The client wakes on a ticker every
// --interval, makes the round trips one after the other (100 bytes each
// way) and goes idle again, --wakes times; then it reports its own CPU
// (user + system, from getrusage) and context switches per wake-up, and
// the median time from a tick to the client's wake-up. Each case prints
// one JSON line.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// msgSize is the size of each request and each response.
const msgSize = 100

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "wakecost:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	interval   time.Duration
	wakes      int
	roundTrips []int
	procs      []int
	client     string // the server's address: run as the client
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("wakecost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var rts, procs string
	fs.DurationVar(&c.interval, "interval", 5*time.Millisecond, "time between wake-ups (the router's batch window is 5ms)")
	fs.IntVar(&c.wakes, "wakes", 1000, "wake-ups measured per case")
	fs.StringVar(&rts, "round-trips", "1,3", "round trips per wake-up, comma-separated")
	fs.StringVar(&procs, "procs", "1,2", "GOMAXPROCS of the client, comma-separated")
	fs.StringVar(&c.client, "client", "", "run as the client of the echo server at this address (internal)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var err error
	if c.roundTrips, err = positiveInts(rts); err != nil {
		return c, fmt.Errorf("--round-trips: %w", err)
	}
	if c.procs, err = positiveInts(procs); err != nil {
		return c, fmt.Errorf("--procs: %w", err)
	}
	switch {
	case c.interval < 100*time.Microsecond || c.interval > time.Second:
		return c, fmt.Errorf("--interval %v: must be from 100µs to 1s", c.interval)
	case c.wakes < 10 || c.wakes > 100_000:
		return c, fmt.Errorf("--wakes %d: must be from 10 to 100000", c.wakes)
	case c.client != "" && len(c.roundTrips) != 1:
		return c, errors.New("--client takes one --round-trips")
	}
	return c, nil
}

// limit bounds one case: twice its ticks, and a minute more.
func (c config) limit() time.Duration {
	return time.Duration(c.wakes)*c.interval*2 + time.Minute
}

func positiveInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 100 {
			return nil, fmt.Errorf("%q is not a whole number from 1 to 100", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// result is one case's JSON line.
type result struct {
	GoMaxProcs      int     `json:"gomaxprocs"`
	IntervalMs      float64 `json:"interval_ms"`
	RoundTrips      int     `json:"round_trips_per_wake"`
	Wakes           int     `json:"wakes"`
	CPUUsPerWake    float64 `json:"cpu_us_per_wake"`
	SwitchesPerWake float64 `json:"context_switches_per_wake"`
	LateUsP50       float64 `json:"wake_late_us_p50"`
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	if c.client != "" {
		return client(c, stdout)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer ln.Close()
	go echo(ln)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	for _, k := range c.roundTrips {
		for _, p := range c.procs {
			line, err := child(self, c, ln.Addr().String(), k, p, stderr)
			if err != nil {
				return err
			}
			fmt.Fprintln(stdout, line)
		}
	}
	return nil
}

// child runs one case in a client process and returns its JSON line.
func child(self string, c config, addr string, k, procs int, stderr io.Writer) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), c.limit())
	defer cancel()
	cmd := exec.CommandContext(ctx, self, "--client", addr, "--interval", c.interval.String(),
		"--wakes", strconv.Itoa(c.wakes), "--round-trips", strconv.Itoa(k))
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+strconv.Itoa(procs))
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("client with GOMAXPROCS=%d and %d round trips: %w", procs, k, err)
	}
	return strings.TrimSpace(string(out)), nil
}

// echo answers every connection's messages until the listener closes.
func echo(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			defer conn.Close()
			buf := make([]byte, msgSize)
			for {
				if _, err := io.ReadFull(conn, buf); err != nil {
					return
				}
				if _, err := conn.Write(buf); err != nil {
					return
				}
			}
		}()
	}
}

// client measures c.wakes wake-ups of c.roundTrips[0] round trips each.
func client(c config, stdout io.Writer) error {
	conn, err := net.Dial("tcp", c.client)
	if err != nil {
		return err
	}
	defer conn.Close()
	// One deadline bounds the whole run, so that no wake-up arms a timer
	// of its own.
	if err := conn.SetDeadline(time.Now().Add(c.limit())); err != nil {
		return err
	}
	k := c.roundTrips[0]
	buf := make([]byte, msgSize)
	// One wake-up to warm up the connection, outside the figures.
	if err := roundTrips(conn, buf, k); err != nil {
		return err
	}
	late := make([]time.Duration, 0, c.wakes)
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	before, err := usage()
	if err != nil {
		return err
	}
	for range c.wakes {
		at := <-tick.C
		late = append(late, time.Since(at))
		if err := roundTrips(conn, buf, k); err != nil {
			return err
		}
	}
	after, err := usage()
	if err != nil {
		return err
	}
	slices.Sort(late)
	n := float64(c.wakes)
	return json.NewEncoder(stdout).Encode(result{
		GoMaxProcs: runtime.GOMAXPROCS(0), IntervalMs: float64(c.interval) / float64(time.Millisecond),
		RoundTrips: k, Wakes: c.wakes,
		CPUUsPerWake:    round1(float64(after.cpu-before.cpu) / float64(time.Microsecond) / n),
		SwitchesPerWake: round1(float64(after.switches-before.switches) / n),
		LateUsP50:       round1(float64(late[len(late)/2]) / float64(time.Microsecond)),
	})
}

func roundTrips(conn net.Conn, buf []byte, k int) error {
	for range k {
		if _, err := conn.Write(buf); err != nil {
			return err
		}
		if _, err := io.ReadFull(conn, buf); err != nil {
			return err
		}
	}
	return nil
}

type rusage struct {
	cpu      time.Duration
	switches int64
}

// usage returns this process's CPU time and context switches (voluntary
// and involuntary) so far.
func usage() (rusage, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return rusage{}, fmt.Errorf("getrusage: %w", err)
	}
	return rusage{
		cpu:      time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		switches: ru.Nvcsw + ru.Nivcsw,
	}, nil
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }
