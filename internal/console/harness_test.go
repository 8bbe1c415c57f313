package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/canceller"
	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/closer"
	"github.com/hourglass/hourglass/internal/console"
	"github.com/hourglass/hourglass/internal/recorder"
	"github.com/hourglass/hourglass/internal/router"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
	"github.com/hourglass/hourglass/internal/topics"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// sessionTimeout is the group session timeout of the services of a test.
const sessionTimeout = 3 * time.Second

// pipes numbers the pipelines of this process: each has its own topics.
var pipes atomic.Int64

// pipeline is a running router, canceller and recorder on the package's
// broker and a ClickHouse database of their own.
type pipeline struct {
	t      *testing.T
	prefix string
	table  tiers.Table
	seeds  []kgo.Opt
	prod   *kgo.Client
	sched  *tiers.Scheduler
	store  *chstore.Store
	orders *closer.Memory
}

// startPipeline creates the topics of a pipeline with tiers 1s, 10m and
// 1h (a deadline half an hour away waits in the 10m tier, without hops,
// while the test runs) and starts its services.
func startPipeline(t *testing.T) *pipeline {
	t.Helper()
	table, err := tiers.Parse("1s,10m,1h")
	if err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, prefix: fmt.Sprintf("console-%d.", pipes.Add(1)), table: table,
		seeds: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, orders: &closer.Memory{CloseUnknown: true}}
	if p.prod, err = kgo.NewClient(p.seeds...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.prod.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(p.prod)
	for _, s := range topics.Specs(topics.Default(p.prefix, table), 2, -1) {
		configs := make(map[string]*string, len(s.Configs))
		for k, v := range s.Configs {
			configs[k] = &v
		}
		resp, err := adm.CreateTopic(ctx, s.Partitions, s.Replicas, configs, s.Name)
		if err == nil {
			err = resp.Err
		}
		if err != nil {
			t.Fatalf("create topic %s: %v", s.Name, err)
		}
	}
	if p.sched, err = tiers.NewScheduler(p.prod, table, tiers.WithPrefix(p.prefix)); err != nil {
		t.Fatal(err)
	}
	p.store = chtest.Open(t)

	rt, err := router.New(router.Config{Tiers: table, Prefix: p.prefix, Group: p.prefix + "router", SessionTimeout: sessionTimeout, ShutdownTimeout: 10 * time.Second},
		router.Options{Kafka: p.seeds, Logger: testLogger(t, "router")})
	if err != nil {
		t.Fatal(err)
	}
	// Only the default kind has a closer: a task of another kind is
	// dead-lettered by the canceller (unknown_kind), from the cancel topic.
	cn, err := canceller.New(canceller.Config{Prefix: p.prefix, Group: p.prefix + "canceller", Tiers: table, Instance: "console-test",
		SessionTimeout: sessionTimeout, ShutdownTimeout: 10 * time.Second},
		canceller.Options{Kafka: p.seeds, Routes: map[string]canceller.Route{"order-timeout": {Closer: p.orders}}, Logger: testLogger(t, "canceller")})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.New(recorder.Config{Topic: tiers.OutcomesTopic(p.prefix), Group: p.prefix + "recorder", FlushInterval: 100 * time.Millisecond,
		SessionTimeout: sessionTimeout, ShutdownTimeout: 10 * time.Second, Index: &recorder.Index{Prefix: p.prefix}},
		recorder.Options{Kafka: p.seeds, Store: p.store, Logger: testLogger(t, "recorder")})
	if err != nil {
		t.Fatal(err)
	}
	start(t, "router", rt.Run)
	start(t, "canceller", cn.Run)
	start(t, "recorder", rec.Run)
	return p
}

// schedule schedules task t.
func (p *pipeline) schedule(t tiers.Task) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.sched.Schedule(ctx, t); err != nil {
		p.t.Fatalf("schedule %q: %v", t.ID, err)
	}
}

// task returns what the index holds of task id.
func (p *pipeline) task(id string) *chstore.TaskIndex {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ti, err := p.store.Task(ctx, id, 100)
	if err != nil {
		p.t.Logf("task %q: %v", id, err)
		return &chstore.TaskIndex{}
	}
	return ti
}

// serve starts a console of cfg over the pipeline on a free loopback
// port, and returns its base URL.
func (p *pipeline) serve(cfg console.Config) string {
	p.t.Helper()
	cfg.Prefix, cfg.Tiers = p.prefix, p.table
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	srv, err := console.New(cfg, console.Options{Kafka: p.seeds, Store: p.store, Logger: testLogger(p.t, "console")})
	if err != nil {
		p.t.Fatal(err)
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		p.t.Fatal(err)
	}
	start(p.t, "console", func(ctx context.Context) error { return srv.Serve(ctx, ln) })
	return "http://" + ln.Addr().String()
}

// tokenFile writes token to a file of the test and returns its name.
func tokenFile(t *testing.T, token string) string {
	name := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(name, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return name
}

// start runs run until the test ends; a run that returns by itself fails
// the test.
func start(t *testing.T, name string, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		err := run(ctx)
		if ctx.Err() == nil {
			t.Errorf("%s stopped by itself: %v", name, err)
		}
		done <- err
	}()
	var once sync.Once
	t.Cleanup(func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil && !errors.Is(err, context.Canceled) {
					t.Errorf("%s: %v", name, err)
				}
			case <-time.After(30 * time.Second):
				t.Errorf("%s did not stop within 30s", name)
			}
		})
	})
}

// testLogger logs warnings and errors of a service into the test log.
func testLogger(t *testing.T, name string) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})).With("service", name)
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(b []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(b), "\n"))
	return len(b), nil
}

// noKeepAlive leaves no connection behind for goleak to find.
var noKeepAlive = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// post sends a form to url with header, and returns the status and body.
func post(t *testing.T, url string, form string, header http.Header) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(form))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			break
		}
	}
	return resp.StatusCode, b.String()
}
