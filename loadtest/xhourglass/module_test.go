package xhourglass

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"go.k6.io/k6/js/modulestest"
	"go.k6.io/k6/lib"
	"go.k6.io/k6/metrics"

	"github.com/hourglass/hourglass/loadtest/manifest"
)

// TestModule runs the module as a k6 VU does: producer and mix created in
// the init context, tasks scheduled in the VU context, metrics pushed to the
// VU's samples, the producer closed at the end.
func TestModule(t *testing.T) {
	prefix := newPrefix(t, "1s,2s,5s")
	st := newStore(t)
	path := filepath.Join(t.TempDir(), "m.jsonl")
	rt := modulestest.NewRuntime(t)
	mi := new(RootModule).NewModuleInstance(rt.VU)
	js := rt.VU.Runtime()
	if err := js.Set("hourglass", mi.Exports().Named); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`{brokers: [%q], prefix: %q, tiers: '1s,2s,5s', storeUrl: %q, manifest: %q, runId: 'run-m', maxInFlight: 100, outcomes: false}`,
		broker, prefix, st.URL, path)
	if _, err := js.RunString(`
		var producer = new hourglass.Producer(` + cfg + `);
		var again = new hourglass.Producer(` + cfg + `); // the same producer
		var mix = new hourglass.Mix({tiers: '1s,2s,5s', maxDelay: '5s', paidFraction: 0.5, seed: 3});
		if (producer.runId !== 'run-m' || producer.idPrefix !== 'lt-run-m-' || producer.manifest !== ` + fmt.Sprintf("%q", path) + `) {
			throw new Error('producer properties: ' + JSON.stringify(producer));
		}
		if (typeof hourglass.runId !== 'string' || hourglass.runId.length === 0) throw new Error('no runId export');
	`); err != nil {
		t.Fatal(err)
	}

	// Init-context mistakes throw with the key at fault.
	for _, tt := range []struct{ code, want string }{
		{`new hourglass.Producer({colour: 'red', maxInFlight: 0.5})`, "colour: unknown key"},
		{`new hourglass.Producer({tiers: '1x'})`, `tiers: tier "1x"`},
		{`new hourglass.Mix({tiers: '1s', weights: 'up:1'})`, `weights: unknown shape "up"`},
		{`producer.schedule({delayMs: 1})`, "not the init context"},
	} {
		_, err := js.RunString(tt.code)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error containing %q", tt.code, err, tt.want)
		}
	}

	samples := make(chan metrics.SampleContainer, 1000)
	registry := rt.VU.InitEnvField.Registry
	rt.MoveToVUContext(&lib.State{
		Samples: samples, Tags: lib.NewVUStateTags(registry.RootTagSet()), Logger: rt.VU.InitEnvField.Logger,
	})
	const n = 50
	v, err := js.RunString(fmt.Sprintf(`
		var shapes = {};
		for (var i = 0; i < %d; i++) {
			var t = mix.next();
			shapes[t.shape] = true;
			var who = (i %% 2 ? producer : again);
			var id = who.schedule({delayMs: t.delayMs, paid: t.paid, shape: t.shape, payload: new Uint8Array([1, 2]).buffer});
			if (typeof id !== 'string') throw new Error('schedule returned ' + id);
		}
		var bad = [];
		for (const arg of [undefined, {}, {delayMs: 'soon'}, {delayMs: 1, when: 2}]) {
			try { producer.schedule(arg); bad.push(JSON.stringify(arg)); } catch (e) {}
		}
		if (bad.length) throw new Error('schedule accepted ' + bad.join(', '));
		var refused = producer.schedule({id: 'refuse-1', delayMs: 1000, paid: true});
		if (refused !== null) throw new Error('a refused payment returned ' + refused);
		var stats = producer.close();
		JSON.stringify({stats: stats, shapes: Object.keys(shapes).length});
	`, n))
	if err != nil {
		t.Fatal(err)
	}
	out := v.String()
	for _, w := range []string{fmt.Sprintf(`"produced":%d`, n), `"errors":0`, `"payErrors":1`, `"shapes":5`, `"firstError":"pay lt-run-m-refuse-1`} {
		if !strings.Contains(out, w) {
			t.Errorf("result %s does not contain %s", out, w)
		}
	}

	// Every acknowledged task was pushed as a sample, with its latency.
	sums := map[string]float64{}
	latencies := 0
	close(samples)
	for c := range samples {
		for _, s := range c.GetSamples() {
			sums[s.Metric.Name] += s.Value
			if s.Metric.Name == MetricProduceLatency {
				latencies++
			}
		}
	}
	if sums[MetricProduced] != n || sums[MetricProduceErrors] != 0 || sums[MetricPayErrors] != 1 || latencies != n {
		t.Errorf("samples: %v and %d latencies; want %d produced, 1 pay error, %d latencies", sums, latencies, n, n)
	}

	m, err := manifest.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Entries) != n {
		t.Errorf("manifest has %d entries, want %d", len(m.Entries), n)
	}
	paid := 0
	for _, e := range m.Entries {
		if e.Paid {
			paid++
		}
	}
	st.mu.Lock()
	if len(st.paid) != paid || paid == 0 {
		t.Errorf("store has %d payments, manifest %d paid tasks; want the same, more than 0", len(st.paid), paid)
	}
	st.mu.Unlock()
	recs := readTopics(t, n, prefix+"delay.1s", prefix+"delay.2s", prefix+"delay.5s")
	for _, r := range recs {
		if string(r.Value) != "\x01\x02" {
			t.Fatalf("record %s value %q, want the ArrayBuffer's bytes", r.Key, r.Value)
		}
	}
}
