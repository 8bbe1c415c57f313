package democmd

import (
	"strings"
	"testing"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// TestBanner: with --serve the banner gives the environment of the
// hourglass commands and the examples, and kcat lines that partition by
// murmur2; without it, it invites no one to schedule by hand.
func TestBanner(t *testing.T) {
	table, err := tiers.Parse("1s,2s,5s,10s")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		serve   bool
		want    []string
		mustNot []string
	}{
		{"serve", true, []string{
			"export HOURGLASS_BROKERS=127.0.0.1:4242 HOURGLASS_TIERS=1s,2s,5s,10s HOURGLASS_TOPIC_PREFIX=hourglass.\n",
			"kcat -P -b 127.0.0.1:4242 -X partitioner=murmur2_random -t hourglass.delay.5s -k order-1 ",
			"kcat -C -b 127.0.0.1:4242 -t hourglass.outcomes -o beginning -q -u\n",
		}, nil},
		{"no serve", false, []string{"with --serve it keeps running"}, []string{"kcat", "another terminal", "export "}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			printBanner(&b, &demoConfig{tiers: table, serve: tt.serve}, "127.0.0.1:4242", "")
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("banner does not say %q:\n%s", w, out)
				}
			}
			for _, w := range tt.mustNot {
				if strings.Contains(out, w) {
					t.Errorf("banner says %q:\n%s", w, out)
				}
			}
			if tt.serve && strings.Index(out, "export ") > strings.Index(out, "kcat ") {
				t.Errorf("the export line comes after the kcat lines:\n%s", out)
			}
		})
	}
}
