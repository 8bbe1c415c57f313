package benchcmd

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// cancellationStep is one sample of the cancellations memory run.
type cancellationStep struct {
	Cancellations int     `json:"cancellations"`
	RouterRSS     float64 `json:"router_rss_mb"`
}

// heldMetric is the router's gauge of the cancellations in its store.
const heldMetric = "hourglass_router_cancellations"

// benchCancellations produces cancellations of deadlines due far ahead and
// samples the router's RSS once its store holds each step's count.
func (r *rig) benchCancellations(ctx context.Context, stdout, stderr io.Writer) error {
	c := r.c
	var steps []cancellationStep
	made := 0
	due := time.Now().Add(c.pendingDelay)
	fmt.Fprintf(stderr, "bench: the router serves its metrics at http://%s/metrics\n", r.routerHTTP)
	for _, step := range c.cancelSteps {
		n, err := pace(ctx, step-made, c.rate, stderr, nil, nil, func(i int) {
			rec, err := tiers.BuildCancellation(tiers.DefaultPrefix, tiers.Cancellation{ID: "cancelled-" + strconv.Itoa(made+i), At: time.Now(), Due: due})
			if err != nil {
				panic(err) // an id and times always build
			}
			r.prod.Produce(ctx, rec, nil)
		})
		made += n
		if err != nil {
			return err
		}
		if err := r.prod.Flush(ctx); err != nil {
			return fmt.Errorf("bench: flush: %w", err)
		}
		if err := r.waitHeld(ctx, made, stderr); err != nil {
			return err
		}
		rss, err := settledRSS(ctx, r.rt.Load())
		if err != nil {
			return err
		}
		steps = append(steps, cancellationStep{Cancellations: made, RouterRSS: rss})
		fmt.Fprintf(stderr, "bench: %d cancellations held, router RSS %.1f MB\n", made, rss)
	}
	growth := steps[len(steps)-1].RouterRSS - steps[0].RouterRSS
	rtCPU, cnCPU := r.cpuPer(made)
	err := printLine(ctx, stdout, struct {
		Mode      string             `json:"mode"`
		Due       string             `json:"due_in"`
		Steps     []cancellationStep `json:"steps"`
		GrowthMB  float64            `json:"router_rss_growth_mb"`
		PeakRSSMB float64            `json:"router_peak_rss_mb"`
		RouterCPU float64            `json:"router_cpu_s"`
		CancelCPU float64            `json:"canceller_cpu_s"`
		// Per cancellation read: no deadline fires.
		RouterPer float64 `json:"router_cpu_us_per_cancellation"`
		CancelPer float64 `json:"canceller_cpu_us_per_cancellation"`
	}{"cancellations", c.pendingDelay.String(), steps, round(growth), r.rt.Load().peakRSS(),
		round(r.rt.Load().cpu()), round(r.cn.Load().cpu()), rtCPU, cnCPU})
	if err != nil {
		return err
	}
	if c.maxGrowthMB > 0 && growth > c.maxGrowthMB {
		return fmt.Errorf("bench: router RSS grew %.1f MB from %d to %d cancellations, more than --max-growth-mb %.0f",
			growth, steps[0].Cancellations, steps[len(steps)-1].Cancellations, c.maxGrowthMB)
	}
	return nil
}

// waitHeld waits until the router's store holds n cancellations, reading
// its metrics every 200 ms, bounded by ctx (--timeout).
func (r *rig) waitHeld(ctx context.Context, n int, stderr io.Writer) error {
	last := time.Now()
	for {
		held, err := scrape(ctx, "http://"+r.routerHTTP+"/metrics", heldMetric)
		if err == nil && held >= float64(n) {
			return nil
		}
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(stderr, "bench: the router holds %.0f of %d cancellations (%v)\n", held, n, err)
		}
		t := time.NewTimer(200 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("bench: the router never held %d cancellations: %w", n, ctx.Err())
		case <-t.C:
		}
	}
}

// scrape returns the value of the unlabelled series name at url.
func scrape(ctx context.Context, url, name string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	return 0, fmt.Errorf("no series %s at %s", name, url)
}

// freeAddr returns a loopback address with a port free now.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}
