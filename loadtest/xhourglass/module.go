package xhourglass

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/sobek"
	"go.k6.io/k6/js/common"
	"go.k6.io/k6/js/modules"
	"go.k6.io/k6/metrics"

	"github.com/hourglass/hourglass/loadtest/workload"
)

// ImportPath is the module's import path in k6 scripts.
const ImportPath = "k6/x/hourglass"

// Metric names pushed by the extension.
const (
	MetricProduced       = "hourglass_produced"
	MetricProduceErrors  = "hourglass_produce_errors"
	MetricPayErrors      = "hourglass_pay_errors"
	MetricProduceLatency = "hourglass_produce_latency"
	MetricCloseLateness  = "hourglass_close_lateness"
	MetricOutcomes       = "hourglass_outcomes"
	MetricEarly          = "hourglass_early"
	MetricWrongOutcome   = "hourglass_wrong_outcome"
	MetricLost           = "hourglass_lost"
)

// reportEvery is how often, at most, the samples of a producer are pushed.
const reportEvery = 100 * time.Millisecond

// closeTimeout bounds the flush of Close: the delivery timeout bounds every
// record, and this bounds the wait for the client's buffer on top.
const closeTimeout = 2 * time.Minute

func init() { modules.Register(ImportPath, new(RootModule)) }

// RootModule is the k6/x/hourglass module; k6 makes one ModuleInstance of
// it per VU.
type RootModule struct{}

// NewModuleInstance implements modules.Module.
func (*RootModule) NewModuleInstance(vu modules.VU) modules.Instance {
	mi := &ModuleInstance{vu: vu}
	if env := vu.InitEnv(); env != nil {
		r := env.Registry
		mi.m = &moduleMetrics{
			produced:  r.MustNewMetric(MetricProduced, metrics.Counter),
			errors:    r.MustNewMetric(MetricProduceErrors, metrics.Counter),
			payErrors: r.MustNewMetric(MetricPayErrors, metrics.Counter),
			latency:   r.MustNewMetric(MetricProduceLatency, metrics.Trend, metrics.Time),
			lateness:  r.MustNewMetric(MetricCloseLateness, metrics.Trend, metrics.Time),
			outcomes:  r.MustNewMetric(MetricOutcomes, metrics.Counter),
			early:     r.MustNewMetric(MetricEarly, metrics.Counter),
			wrong:     r.MustNewMetric(MetricWrongOutcome, metrics.Counter),
			lost:      r.MustNewMetric(MetricLost, metrics.Counter),
		}
	}
	return mi
}

type moduleMetrics struct {
	produced, errors, payErrors, latency   *metrics.Metric
	lateness, outcomes, early, wrong, lost *metrics.Metric
}

// ModuleInstance is the module as one VU sees it.
type ModuleInstance struct {
	vu modules.VU
	m  *moduleMetrics
}

// Exports implements modules.Instance: the Producer and Mix constructors
// and runId, the process's run id.
func (mi *ModuleInstance) Exports() modules.Exports {
	return modules.Exports{Named: map[string]any{
		"Producer": mi.newProducer,
		"Mix":      mi.newMix,
		"runId":    processRunID(),
	}}
}

// shared holds one producer per configuration, so that every VU of a run
// produces through one Kafka client and one manifest.
var shared = struct {
	sync.Mutex
	m map[string]*sharedProducer
}{m: map[string]*sharedProducer{}}

type sharedProducer struct {
	*Producer
	key        string
	lastReport atomic.Int64 // unix nanoseconds
}

func sharedFor(cfg ProducerConfig) (*sharedProducer, error) {
	p, err := NewProducer(cfg)
	if err != nil {
		return nil, err
	}
	b, _ := json.Marshal(p.Config())
	key := string(b)
	shared.Lock()
	defer shared.Unlock()
	if sp, ok := shared.m[key]; ok {
		return sp, nil
	}
	sp := &sharedProducer{Producer: p, key: key}
	shared.m[key] = sp
	return sp, nil
}

func forget(sp *sharedProducer) {
	shared.Lock()
	defer shared.Unlock()
	if shared.m[sp.key] == sp {
		delete(shared.m, sp.key)
	}
}

// newProducer is `new hourglass.Producer(config)`.
func (mi *ModuleInstance) newProducer(call sobek.ConstructorCall) *sobek.Object {
	rt := mi.vu.Runtime()
	if mi.vu.InitEnv() == nil {
		common.Throw(rt, errors.New("hourglass.Producer: create producers in the init context"))
	}
	var cfg ProducerConfig
	if errs := decode(exportArg(call.Argument(0)), &cfg); len(errs) > 0 {
		common.Throw(rt, fmt.Errorf("hourglass.Producer: %w", errors.Join(errs...)))
	}
	sp, err := sharedFor(cfg)
	if err != nil {
		common.Throw(rt, fmt.Errorf("hourglass.Producer: %w", err))
	}
	c := sp.Config()
	o := rt.NewObject()
	must(rt, o.Set("runId", c.RunID))
	must(rt, o.Set("idPrefix", IDPrefix(c.RunID)))
	must(rt, o.Set("manifest", c.Manifest))
	must(rt, o.Set("schedule", func(arg sobek.Value) sobek.Value { return mi.schedule(sp, arg) }))
	must(rt, o.Set("stats", func() sobek.Value { return rt.ToValue(statsObject(sp.Stats())) }))
	must(rt, o.Set("close", func() sobek.Value { return mi.close(sp) }))
	return o
}

// schedule is producer.schedule(task): it returns the task id, or null when
// the order could not be paid (counted in hourglass_pay_errors).
func (mi *ModuleInstance) schedule(sp *sharedProducer, arg sobek.Value) sobek.Value {
	rt := mi.vu.Runtime()
	if mi.vu.State() == nil {
		common.Throw(rt, errors.New("schedule: call it from a VU function, not the init context"))
	}
	spec, err := ParseTask(exportArg(arg))
	if err != nil {
		common.Throw(rt, err)
	}
	id, queued, err := sp.Schedule(mi.vu.Context(), spec)
	if err != nil {
		common.Throw(rt, err)
	}
	mi.report(sp, false)
	if !queued {
		return sobek.Null()
	}
	return rt.ToValue(id)
}

// close is producer.close(): it waits for the tasks in flight, closes the
// manifest, waits for the outcomes of the tasks (pushing their samples as
// they come, then hourglass_lost) and returns the totals. Call it from
// teardown(), whose timeout must cover the wait.
func (mi *ModuleInstance) close(sp *sharedProducer) sobek.Value {
	rt := mi.vu.Runtime()
	ctx := mi.vu.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	st, err := sp.Close(ctx, func() { mi.report(sp, true) })
	forget(sp)
	mi.report(sp, true)
	if err != nil {
		common.Throw(rt, err)
	}
	return rt.ToValue(statsObject(st))
}

// report pushes the producer's samples since the last report, at most
// every reportEvery unless force, from this VU (whose state is valid).
func (mi *ModuleInstance) report(sp *sharedProducer, force bool) {
	state := mi.vu.State()
	if state == nil || mi.m == nil {
		return
	}
	now := time.Now()
	last := sp.lastReport.Load()
	if !force && (now.UnixNano()-last < int64(reportEvery) || !sp.lastReport.CompareAndSwap(last, now.UnixNano())) {
		return
	}
	ctx := mi.vu.Context()
	if ctx.Err() != nil {
		return // keep the delta for a VU that can still push it
	}
	d := sp.TakeDelta()
	if d.NewError != "" {
		state.Logger.Warnf("hourglass: first error of run %s: %s", sp.Config().RunID, d.NewError)
	}
	ctm := state.Tags.GetCurrentValues()
	sample := func(m *metrics.Metric, v float64) metrics.Sample {
		return metrics.Sample{TimeSeries: metrics.TimeSeries{Metric: m, Tags: ctm.Tags}, Time: now, Metadata: ctm.Metadata, Value: v}
	}
	samples := make(metrics.Samples, 0, 3+len(d.Latencies))
	samples = append(samples,
		sample(mi.m.produced, float64(d.Produced)),
		sample(mi.m.errors, float64(d.Errors)),
		sample(mi.m.payErrors, float64(d.PayErrors)))
	for _, l := range d.Latencies {
		samples = append(samples, sample(mi.m.latency, metrics.D(l)))
	}
	if sp.Config().Outcomes != nil && *sp.Config().Outcomes {
		o := d.Outcomes
		samples = append(samples,
			sample(mi.m.early, float64(o.Early)),
			sample(mi.m.wrong, float64(o.WrongOutcome)),
			sample(mi.m.lost, float64(d.Lost)))
		for _, l := range o.Lateness {
			samples = append(samples, sample(mi.m.lateness, metrics.D(l)))
		}
		for out, n := range o.Final {
			samples = append(samples, metrics.Sample{
				TimeSeries: metrics.TimeSeries{Metric: mi.m.outcomes, Tags: ctm.Tags.With("outcome", string(out))},
				Time:       now, Metadata: ctm.Metadata, Value: float64(n),
			})
		}
	}
	metrics.PushIfNotDone(ctx, state.Samples, samples)
}

// newMix is `new hourglass.Mix(config)`.
func (mi *ModuleInstance) newMix(call sobek.ConstructorCall) *sobek.Object {
	rt := mi.vu.Runtime()
	var cfg MixConfig
	if errs := decode(exportArg(call.Argument(0)), &cfg); len(errs) > 0 {
		common.Throw(rt, fmt.Errorf("hourglass.Mix: %w", errors.Join(errs...)))
	}
	wc, errs := cfg.workload()
	if len(errs) > 0 {
		common.Throw(rt, fmt.Errorf("hourglass.Mix: %w", errors.Join(errs...)))
	}
	mix, err := workload.New(wc)
	if err != nil {
		common.Throw(rt, fmt.Errorf("hourglass.Mix: %w", err))
	}
	seed := uint64(cfg.Seed)
	if seed == 0 {
		seed = mrand.Uint64()
	}
	r := mrand.New(mrand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var mu sync.Mutex // a VU runs one iteration at a time; the lock is cheap insurance
	o := rt.NewObject()
	must(rt, o.Set("next", func() sobek.Value {
		mu.Lock()
		t := mix.Draw(r)
		mu.Unlock()
		return rt.ToValue(map[string]any{"shape": string(t.Shape), "delayMs": t.Delay.Milliseconds(), "paid": t.Paid})
	}))
	return o
}

// exportArg exports a JS argument; undefined and null are nil.
func exportArg(v sobek.Value) any {
	if v == nil || sobek.IsUndefined(v) || sobek.IsNull(v) {
		return nil
	}
	return v.Export()
}

func must(rt *sobek.Runtime, err error) {
	if err != nil {
		common.Throw(rt, err)
	}
}

func statsObject(s Stats) map[string]any {
	o := map[string]any{
		"runId": s.RunID, "idPrefix": s.IDPrefix, "manifest": s.Manifest,
		"scheduled": s.Scheduled, "produced": s.Produced, "errors": s.Errors,
		"payErrors": s.PayErrors, "inFlight": s.InFlight,
	}
	if s.FirstError != "" {
		o["firstError"] = s.FirstError
	}
	if w := s.Outcomes; w != nil {
		oo := map[string]any{
			"topic": w.Topic, "final": w.Final, "pending": w.Pending, "lost": w.Lost,
			"early": w.Early, "wrongOutcome": w.WrongOutcome, "maxLatenessMs": w.MaxLatenessMs,
		}
		if w.Error != "" {
			oo["error"] = w.Error
		}
		o["outcomes"] = oo
	}
	return o
}
