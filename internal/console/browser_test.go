package console_test

import (
	"context"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

var consolePNG = flag.String("console-png", "", "write screenshots of the console's pages into this `directory` (make console-png: docs/console)")

// browser is a headless Chromium of the test.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// newBrowser starts a headless Chromium with a fresh profile (a directory
// chromedp makes and removes once the browser has exited: one under
// t.TempDir raced the browser's last writes) and nothing that calls home; it is closed when the test ends. It skips when there is
// no chromium, but not in CI (CI is set), where scripts/deps.sh installs
// it.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	path := "/usr/bin/chromium"
	if _, err := os.Stat(path); err != nil {
		p, lerr := exec.LookPath("chromium")
		if lerr != nil {
			if os.Getenv("CI") != "" {
				t.Fatal("no chromium at /usr/bin/chromium or on PATH; scripts/deps.sh installs it")
			}
			t.Skip("no chromium at /usr/bin/chromium or on PATH (scripts/deps.sh installs it)")
		}
		path = p
	}
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.WindowSize(1280, 900),
	}
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(actx)
	// Start the browser now, bounded. The first run's context must be
	// the browser's own (a timeout on it would stop the browser), so the
	// bound is a timer that cancels it.
	timer := time.AfterFunc(60*time.Second, cancel)
	err := chromedp.Run(ctx)
	if !timer.Stop() || err != nil {
		cancel()
		acancel()
		t.Fatalf("start chromium (bounded by 60s): %v", err)
	}
	t.Cleanup(func() {
		cancel()
		acancel()
	})
	return &browser{t: t, ctx: ctx}
}

// in returns b reporting to t, a subtest.
func (b *browser) in(t *testing.T) *browser { return &browser{t: t, ctx: b.ctx} }

// do runs steps, bounded by 30 s.
func (b *browser) do(steps ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %v", err)
	}
}

// evaluate runs the JavaScript expression expr in the page, bounded by
// 30 s, and returns its value.
func evaluate[T any](b *browser, expr string) T {
	b.t.Helper()
	var v T
	b.do(chromedp.Evaluate(expr, &v))
	return v
}

// open navigates to url and waits for the page's main element.
func (b *browser) open(url string) {
	b.t.Helper()
	b.do(chromedp.Navigate(url), chromedp.WaitVisible("main", chromedp.ByQuery))
}

// text returns the text of the first element that matches the CSS
// selector sel.
func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.do(chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// html returns the page's HTML as the browser holds it.
func (b *browser) html() string {
	b.t.Helper()
	var s string
	b.do(chromedp.OuterHTML("html", &s, chromedp.ByQuery))
	return s
}

// screenshot writes the page to name.png under -console-png, when given.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	if *consolePNG == "" {
		return
	}
	var png []byte
	b.do(chromedp.FullScreenshot(&png, 100))
	if err := os.MkdirAll(*consolePNG, 0o755); err != nil {
		b.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(*consolePNG, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}
