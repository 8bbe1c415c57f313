// Command benchab compares the pipeline benchmark of two builds of
// Hourglass: it builds `hourglass` at a base revision and from the working
// tree (or a second revision), runs `hourglass bench` with the same flags
// alternately, base first, for several pairs, and prints each run's figures,
// the medians of each side and their ratio (new / base). Alternating pairs
// spread a machine's drift over both sides.
//
//	go run ./scripts/benchab --base 7143f47 [--new REV] [--pairs 3] [-- bench flags]
//
// The bench flags default to --orders 200000 --rate 50000 --delays mix. The
// last line of the output is the summary as one JSON object.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

var defaultArgs = []string{"--orders", "200000", "--rate", "50000", "--delays", "mix"}

// defaultKeys are the figures compared, as dotted paths into the bench's
// JSON line; figures a build does not report are left out.
const defaultKeys = "lateness_ms.p50,lateness_ms.p99,lateness_ms.max,fire_rate_peak," +
	"router_cpu_s,canceller_cpu_s,router_cpu_us_per_deadline,canceller_cpu_us_per_deadline," +
	"steady.router_cpu_us_per_deadline,steady.canceller_cpu_us_per_deadline," +
	"router_peak_rss_mb,canceller_peak_rss_mb,lost,early"

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "benchab:", err)
		}
		os.Exit(2)
	}
}

type config struct {
	base, new string
	pairs     int
	keys      []string
	timeout   time.Duration
	args      []string
}

func parse(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("benchab", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	var keys string
	fs.StringVar(&c.base, "base", "", "the base revision (commit, tag or branch); required")
	fs.StringVar(&c.new, "new", "", "the new revision; default: the working tree")
	fs.IntVar(&c.pairs, "pairs", 3, "how many base/new pairs to run (1 to 20)")
	fs.StringVar(&keys, "keys", defaultKeys, "the figures to compare: dotted paths into the bench's JSON line, comma-separated")
	fs.DurationVar(&c.timeout, "timeout", 15*time.Minute, "the longest one bench run may take")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: go run ./scripts/benchab --base REV [--new REV] [--pairs N] [-- bench flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	c.args = fs.Args()
	if len(c.args) == 0 {
		c.args = defaultArgs
	}
	c.keys = strings.Split(keys, ",")
	switch {
	case c.base == "":
		return c, errors.New("--base is required")
	case c.pairs < 1 || c.pairs > 20:
		return c, fmt.Errorf("--pairs %d: want 1 to 20", c.pairs)
	case c.timeout <= 0:
		return c, fmt.Errorf("--timeout %v: want a positive duration", c.timeout)
	}
	return c, nil
}

func run(args []string, stdout, stderr io.Writer) error {
	c, err := parse(args, stderr)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "benchab-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bins := map[string]string{"base": filepath.Join(dir, "hourglass-base"), "new": filepath.Join(dir, "hourglass-new")}
	fmt.Fprintf(stderr, "benchab: building base %s\n", c.base)
	if err := build(c.base, bins["base"], dir); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "benchab: building new %s\n", or(c.new, "(working tree)"))
	if err := build(c.new, bins["new"], dir); err != nil {
		return err
	}
	// A run that fails (an order lost, a bound exceeded, a crash) does not
	// end the comparison: its figures count when it printed them, and the
	// failures are reported after the summary.
	runs := map[string][]map[string]float64{}
	var failed []error
	for i := range c.pairs {
		for _, side := range []string{"base", "new"} {
			fmt.Fprintf(stderr, "benchab: pair %d/%d, %s: hourglass bench %s\n", i+1, c.pairs, side, strings.Join(c.args, " "))
			figs, line, err := bench(bins[side], c.args, c.timeout, stderr)
			if err != nil {
				err = fmt.Errorf("pair %d, %s: %w", i+1, side, err)
				fmt.Fprintf(stderr, "benchab: %v\n", err)
				failed = append(failed, err)
			}
			if figs != nil {
				fmt.Fprintf(stdout, "%s %d: %s\n", side, i+1, line)
				runs[side] = append(runs[side], figs)
			}
		}
	}
	if err := summarize(stdout, c, runs); err != nil {
		return err
	}
	if len(failed) > 0 {
		return fmt.Errorf("%d of %d runs failed: %w", len(failed), 2*c.pairs, errors.Join(failed...))
	}
	return nil
}

// build builds cmd/hourglass at rev (the working tree when rev is empty)
// into out, through a temporary git worktree under dir.
func build(rev, out, dir string) error {
	src := "."
	if rev != "" {
		src = filepath.Join(dir, "src-"+filepath.Base(out))
		if b, err := exec.Command("git", "worktree", "add", "--detach", src, rev).CombinedOutput(); err != nil {
			return fmt.Errorf("git worktree add %s: %w: %s", rev, err, b)
		}
		defer func() { _ = exec.Command("git", "worktree", "remove", "--force", src).Run() }() // a leftover worktree is removed by git worktree prune
	}
	cmd := exec.Command("go", "build", "-o", out, "./cmd/hourglass")
	cmd.Dir = src
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build at %s: %w: %s", or(rev, "the working tree"), err, b)
	}
	return nil
}

// bench runs one bench and returns the numeric figures of its last JSON
// line, flattened to dotted paths, and the line itself. A bench that
// failed after printing its line (exit status 1: an order lost, a bound
// exceeded) returns its figures and the error.
func bench(bin string, args []string, timeout time.Duration, stderr io.Writer) (map[string]float64, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append([]string{"bench"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, stderr
	runErr := cmd.Run()
	if runErr != nil {
		runErr = fmt.Errorf("hourglass bench: %w", runErr)
	}
	figs, line, err := lastLine(out.String())
	if err != nil {
		return nil, "", errors.Join(runErr, err)
	}
	return figs, line, runErr
}

// lastLine returns the numeric figures of the last line of out, a JSON
// object, flattened to dotted paths, and the line.
func lastLine(out string) (map[string]float64, string, error) {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	line := lines[len(lines)-1]
	var v map[string]any
	if err := json.Unmarshal([]byte(line), &v); err != nil {
		return nil, "", fmt.Errorf("the bench's last line is not JSON: %q", line)
	}
	figs := map[string]float64{}
	flatten("", v, figs)
	return figs, line, nil
}

func flatten(prefix string, v any, out map[string]float64) {
	switch v := v.(type) {
	case float64:
		out[prefix] = v
	case map[string]any:
		for k, x := range v {
			if prefix != "" {
				k = prefix + "." + k
			}
			flatten(k, x, out)
		}
	}
}

// summary is the last line of the output.
type summary struct {
	Base   string                        `json:"base"`
	New    string                        `json:"new"`
	Pairs  int                           `json:"pairs"`
	Args   []string                      `json:"bench_args"`
	Median map[string]map[string]float64 `json:"median"` // side -> key -> median
	Ratio  map[string]float64            `json:"ratio"`  // key -> new/base
}

func summarize(w io.Writer, c config, runs map[string][]map[string]float64) error {
	s := summary{Base: c.base, New: or(c.new, "working tree"), Pairs: c.pairs, Args: c.args,
		Median: map[string]map[string]float64{"base": {}, "new": {}}, Ratio: map[string]float64{}}
	fmt.Fprintf(w, "\n%-32s %12s %12s %8s\n", "figure (median)", "base", "new", "new/base")
	for _, k := range c.keys {
		b, okB := median(runs["base"], k)
		n, okN := median(runs["new"], k)
		if !okB && !okN {
			continue
		}
		ratio := "-"
		if okB {
			s.Median["base"][k] = b
		}
		if okN {
			s.Median["new"][k] = n
		}
		if okB && okN && b != 0 {
			s.Ratio[k] = n / b
			ratio = fmt.Sprintf("%.2f", n/b)
		}
		fmt.Fprintf(w, "%-32s %12s %12s %8s\n", k, num(b, okB), num(n, okN), ratio)
	}
	line, err := json.Marshal(s)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%s\n", line)
	return nil
}

// median returns the median of key over runs, and false when no run has it.
func median(runs []map[string]float64, key string) (float64, bool) {
	var vs []float64
	for _, r := range runs {
		if v, ok := r[key]; ok {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return 0, false
	}
	slices.Sort(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2], true
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2, true
}

func num(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return fmt.Sprintf("%.6g", v)
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
