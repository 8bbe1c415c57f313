package report_test

import (
	"bytes"
	"context"
	"flag"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var reportPNG = flag.String("report-png", "", "write the screenshot of TestHTMLScreenshot to this `file` and keep its HTML beside it (default: a temporary directory)")

// screenshotWidth and screenshotHeight are the browser window of TestHTMLScreenshot, in CSS
// pixels: wide enough for the 1200px page, tall enough for all of it.
const screenshotWidth, screenshotHeight = 1280, 3000

// TestHTMLScreenshot renders the HTML report of fixture in headless
// Chromium to a PNG, and checks that the page holds its four SVG charts
// and that the browser drew them: the screenshot has the size of the window
// and pixels of the chart colours. It skips when there is no chromium on
// PATH, but not in CI (CI is set), where scripts/deps.sh installs it.
// `make report-png` keeps the PNG in bin/.
func TestHTMLScreenshot(t *testing.T) {
	browser, err := exec.LookPath("chromium")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no chromium on PATH; scripts/deps.sh installs it")
		}
		t.Skip("no chromium on PATH (scripts/deps.sh installs it)")
	}
	out := *reportPNG
	if out == "" {
		out = filepath.Join(t.TempDir(), "report.png")
	}
	out, err = filepath.Abs(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	page := renderHTML(t, fixture())
	for _, id := range []string{"outcome-chart", "lateness-chart", "failure-chart", "forecast-chart"} {
		svg(t, page, id) // fails the test when the chart is missing
	}
	htmlFile := strings.TrimSuffix(out, filepath.Ext(out)) + ".html"
	if err := os.WriteFile(htmlFile, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(out)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--screenshot="+out,
		"--window-size="+strconv.Itoa(screenshotWidth)+","+strconv.Itoa(screenshotHeight), "file://"+htmlFile)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", cmd, err, stderr.String())
	}

	fi, err := os.Stat(out)
	if err != nil {
		t.Fatalf("chromium wrote no screenshot: %v\n%s", err, stderr.String())
	}
	// A blank page of this size compresses to a few kilobytes.
	if fi.Size() < 50_000 || fi.Size() > 20_000_000 {
		t.Errorf("screenshot %s is %d bytes, want 50 kB to 20 MB", out, fi.Size())
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot %s: %v", out, err)
	}
	if b := img.Bounds(); b.Dx() != screenshotWidth || b.Dy() != screenshotHeight {
		t.Errorf("screenshot is %dx%d, want %dx%d", b.Dx(), b.Dy(), screenshotWidth, screenshotHeight)
	}
	// The chart colours: p50 and retried blue, p99 amber, max and failed
	// red, closed green; the forecast's most frequent kind purple, which
	// no other chart of the fixture uses.
	for name, c := range map[string][3]uint8{
		"blue #0969da": {0x09, 0x69, 0xda}, "amber #bf8700": {0xbf, 0x87, 0x00},
		"red #cf222e": {0xcf, 0x22, 0x2e}, "green #1a7f37": {0x1a, 0x7f, 0x37},
		"purple #8250df": {0x82, 0x50, 0xdf},
	} {
		if n := countColor(img, c); n < 200 {
			t.Errorf("screenshot has %d pixels of %s, want the charts' hundreds", n, name)
		}
	}
	t.Logf("screenshot %s: %d bytes, %dx%d; HTML %s", out, fi.Size(), img.Bounds().Dx(), img.Bounds().Dy(), htmlFile)
}

// countColor counts the pixels of img within a small distance of c.
func countColor(img image.Image, c [3]uint8) int {
	n := 0
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if near(r>>8, c[0]) && near(g>>8, c[1]) && near(bl>>8, c[2]) {
				n++
			}
		}
	}
	return n
}

func near(v uint32, want uint8) bool { d := int(v) - int(want); return d >= -12 && d <= 12 }
