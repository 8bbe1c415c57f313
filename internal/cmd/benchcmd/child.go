package benchcmd

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func round(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// child is a service run as a process of this binary.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
	hwm  float64 // last VmHWM read, MB
	// ending is set when the bench stops or kills the process: its exit is
	// expected then.
	ending atomic.Bool
}

// errExited is the cause of a bench ended by a service that exited on its
// own (it crashed, or failed with an error).
var errExited = errors.New("exited on its own")

// spawn starts the service of args. If it exits without the bench stopping
// or killing it, died is called with an error wrapping errExited.
func spawn(ctx context.Context, stderr io.Writer, died func(error), args ...string) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Stdout, cmd.Stderr = stderr, stderr
	cmd.Env = append(os.Environ(), "GOMAXPROCS=2")
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("bench: start %s: %w", args[0], err)
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		if !c.ending.Load() && died != nil {
			died(fmt.Errorf("bench: the %s %w (%v); its output is above", args[0], errExited, err)) //nolint:errorlint // callers branch on errExited; the exit status is a detail
		}
		close(c.done)
	}()
	return c, nil
}

// stop sends SIGTERM and waits, then kills after a grace period.
func (c *child) stop() {
	c.peakRSS()
	c.ending.Store(true)
	_ = c.cmd.Process.Signal(syscall.SIGTERM) // fails only when it has exited, which done says
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case <-c.done:
	case <-t.C:
		_ = c.cmd.Process.Kill() // as Signal
		<-c.done
	}
}

// status reads a "Vm...:" line of /proc/<pid>/status in MB.
func (c *child) status(key string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return round(kb / 1024)
		}
	}
	return 0
}

func (c *child) rss() float64 { return c.status("VmRSS") }

func (c *child) peakRSS() float64 {
	if v := c.status("VmHWM"); v > 0 {
		c.hwm = v
	}
	return c.hwm
}

// cpu returns the user+system CPU seconds of the process so far, to the
// clock tick (10 ms).
func (c *child) cpu() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", c.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses: utime and
	// stime are fields 14 and 15 of the line, 12 and 13 after ")".
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // clock ticks; 100 per second on Linux
}

// procFigures are the peak RSS and CPU of the router and the canceller, in
// every JSON line of a run.
type procFigures struct {
	RouterPeakRSS float64 `json:"router_peak_rss_mb"`
	CancellerPeak float64 `json:"canceller_peak_rss_mb"`
	RouterCPU     float64 `json:"router_cpu_s"`
	CancellerCPU  float64 `json:"canceller_cpu_s"`
	// The CPU divided by the deadlines fired, in microseconds: what one
	// deadline costs, the idle time of the run included.
	RouterCPUPerDeadline    float64 `json:"router_cpu_us_per_deadline"`
	CancellerCPUPerDeadline float64 `json:"canceller_cpu_us_per_deadline"`
}

// procs returns the figures of the running router and canceller (the
// restarted ones after a kill), per deadline over fired deadlines.
func (r *rig) procs(fired int) procFigures {
	rt, cn := r.rt.Load(), r.cn.Load()
	f := procFigures{RouterPeakRSS: rt.peakRSS(), CancellerPeak: cn.peakRSS(), RouterCPU: round(rt.cpu()), CancellerCPU: round(cn.cpu())}
	f.RouterCPUPerDeadline, f.CancellerCPUPerDeadline = r.cpuPer(fired)
	return f
}

// cpuPer returns the CPU of the running router and canceller per one of n
// (deadlines fired, deadlines scheduled or cancellations read), in
// microseconds; zero when n is.
func (r *rig) cpuPer(n int) (router, canceller float64) {
	if n <= 0 {
		return 0, 0
	}
	return round(r.rt.Load().cpu() * 1e6 / float64(n)), round(r.cn.Load().cpu() * 1e6 / float64(n))
}
