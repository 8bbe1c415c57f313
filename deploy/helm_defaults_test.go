package deploy

// Tests of the chart's defaults: the router's memory limit against its byte
// limits, and the settings that mirror a service default against the
// service's own.

import (
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hourglass/hourglass/internal/cli"
)

// quantityBytes parses a Kubernetes memory quantity ("512Mi", "1G",
// "268435456").
func quantityBytes(t *testing.T, q any) float64 {
	t.Helper()
	s := fmt.Sprint(q)
	m := regexp.MustCompile(`^([0-9]+(?:\.[0-9]+)?)(Ki|Mi|Gi|Ti|k|M|G|T)?$`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("memory quantity %q: not understood by the test", s)
	}
	n, _ := strconv.ParseFloat(m[1], 64)
	mult := map[string]float64{"": 1, "Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30, "Ti": 1 << 40, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}[m[2]]
	return n * mult
}

// routerMemoryOverhead is what the router's memory holds beyond its
// records: Go runtime, Kafka clients, metrics and the store of
// cancellations (values.yaml, router.resources).
const routerMemoryOverhead = 128 << 20

// What a burst takes beyond the router's byte limit (values.yaml,
// router.resources): the records held, each taking routerSmallRecord bytes
// at least, the client's decode budget for compressed batches, and a fetch
// per partition of records not compressed, routerFetchDecoded times its
// bytes once decoded.
const (
	routerSmallRecord  = 1280
	routerDecodeBudget = 32 << 20
	routerFetchDecoded = 24
)

// TestChartRouterMemory checks, in every scenario, that GOMEMLIMIT is
// derived from the router's memory limit with headroom (85-90% of it), and
// that what the router's limits let it hold fits under it when one router
// owns every partition of every tier and a burst fills them all.
func TestChartRouterMemory(t *testing.T) {
	t.Parallel()
	for _, values := range chartScenarios {
		t.Run(scenarioName(values), func(t *testing.T) {
			t.Parallel()
			objs := parseManifests(t, scenarioRender(t, values))
			configMaps := configMapsOf(objs)
			for _, o := range objs {
				ps, ok := podSpecOf(t, o)
				if !ok || (o.Kind != "StatefulSet" && o.Kind != "Deployment") {
					continue
				}
				c := ps.Containers[0]
				checkMemoryLimit(t, o, c, containerEnv(t, o, c, configMaps))
			}
		})
	}

	// The render refuses a limit the limits do not fit, and names the ways
	// out: a larger limit, or lower limits of what the router holds.
	for _, set := range [][]string{{"topics.partitions=24"}, {"router.fetchPartitionBytes=262144"}, {"router.maxHeldBytes=268435456"}} {
		_, err := renderChart(t, "", set...)
		if err == nil {
			t.Errorf("%v with 512Mi: want the render refused", set)
			continue
		}
		for _, want := range []string{"router.resources.limits.memory 512Mi", "in a burst", "raise the limit to at least",
			"lower router.fetchPartitionBytes, router.maxHeldBytes or router.maxHeld"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v with 512Mi: the refusal does not say %q: %v", set, want, err)
			}
		}
	}
	for _, set := range [][]string{
		{"topics.partitions=16"},
		{"topics.partitions=24", "router.fetchPartitionBytes=8192"},
		{"topics.partitions=24", "router.resources.limits.memory=1Gi"},
		{"router.maxHeld=2000", "router.maxHeldBytes=16777216", "router.resources.limits.memory=512Mi"},
		{"topics.tiers={1m,5m,30m}", "router.resources.limits.memory=384Mi"},
	} {
		if _, err := renderChart(t, "", set...); err != nil {
			t.Errorf("%v: %v", set, err)
		}
	}
}

// checkMemoryLimit checks a service's GOMEMLIMIT against its container's
// memory limit, and for the router, its byte limits against GOMEMLIMIT.
func checkMemoryLimit(t *testing.T, o object, c ctr, env map[string]string) {
	t.Helper()
	limit := quantityBytes(t, c.Resources.Limits["memory"])
	soft, err := strconv.ParseFloat(env["GOMEMLIMIT"], 64)
	if err != nil {
		t.Errorf("%s: GOMEMLIMIT %q: %v", o, env["GOMEMLIMIT"], err)
		return
	}
	if r := soft / limit; r < 0.85 || r > 0.9 {
		t.Errorf("%s: GOMEMLIMIT %.0f is %.1f%% of the memory limit %.0f, want 85-90%%", o, soft, 100*r, limit)
	}
	if component(o) != "router" {
		return
	}
	num := func(k string) float64 {
		n, err := strconv.ParseFloat(env[k], 64)
		if err != nil {
			t.Fatalf("%s: %s %q: %v", o, k, env[k], err)
		}
		return n
	}
	parts := float64(len(strings.Split(env["HOURGLASS_TIERS"], ","))) * num("HOURGLASS_PARTITIONS")
	held := num("HOURGLASS_MAX_HELD_BYTES") + routerSmallRecord*num("HOURGLASS_MAX_HELD")
	need := held + routerDecodeBudget + parts*routerFetchDecoded*num("HOURGLASS_FETCH_PARTITION_BYTES") + num("HOURGLASS_TIMER_BYTES") + routerMemoryOverhead
	t.Logf("%s: %.0f partitions need up to %.0f MiB; GOMEMLIMIT %.0f MiB, limit %.0f MiB", o, parts, need/(1<<20), soft/(1<<20), limit/(1<<20))
	if need > soft {
		t.Errorf("%s: a router owning all %.0f partitions may hold %.0f MiB, above GOMEMLIMIT %.0f MiB", o, parts, need/(1<<20), soft/(1<<20))
	}
}

// helpDefault matches the environment variable and default of a flag in
// --help: "(env HOURGLASS_X, default 6s)".
var helpDefault = regexp.MustCompile(`\(env (HOURGLASS_[A-Z0-9_]+), default ([^)]+)\)`)

// TestChartDefaultsFollowServices checks that where the chart sets a
// variable to mirror a service default, its default values render the
// service's own default: the chart does not quietly keep an old one.
func TestChartDefaultsFollowServices(t *testing.T) {
	t.Parallel()
	_, outDir := imageBinaries(t)
	bin := filepath.Join(outDir, "hourglass")
	objs := parseManifests(t, scenarioRender(t, ""))
	mirrored := map[string][]string{
		"router": {"HOURGLASS_SESSION_TIMEOUT", "HOURGLASS_COMMIT_INTERVAL", "HOURGLASS_SHUTDOWN_TIMEOUT", "HOURGLASS_REVOKE_TIMEOUT",
			"HOURGLASS_TIMER_CAPACITY", "HOURGLASS_TIMER_BYTES", "HOURGLASS_MAX_HELD", "HOURGLASS_MAX_HELD_BYTES", "HOURGLASS_MAX_HELD_PER_PARTITION", "HOURGLASS_MAX_HELD_BYTES_PER_PARTITION",
			"HOURGLASS_FETCH_PARTITION_BYTES", "HOURGLASS_MAX_DELAY", "HOURGLASS_TIERS", "HOURGLASS_TOPIC_PREFIX", "HOURGLASS_PARTITIONS",
			"HOURGLASS_CANCELLATION_GRACE"},
		"canceller": {"HOURGLASS_SESSION_TIMEOUT", "HOURGLASS_COMMIT_INTERVAL", "HOURGLASS_SHUTDOWN_TIMEOUT", "HOURGLASS_CLOSE_TIMEOUT",
			"HOURGLASS_MAX_IN_FLIGHT", "HOURGLASS_MAX_ATTEMPTS", "HOURGLASS_RETRY_BACKOFF", "HOURGLASS_RETRY_BACKOFF_MAX", "HOURGLASS_MAX_POLL_RECORDS"},
	}
	for _, name := range slices.Sorted(maps.Keys(mirrored)) {
		// Wide enough that no default wraps.
		out, err := execOutputEnv(t, []string{"COLUMNS=1000"}, bin, name, "--help")
		if err != nil {
			t.Fatalf("hourglass %s --help: %v\n%s", name, err, out)
		}
		defaults := map[string]string{}
		for _, m := range helpDefault.FindAllStringSubmatch(out, -1) {
			defaults[m[1]] = m[2]
		}
		i := slices.IndexFunc(objs, func(o object) bool { return o.Kind == "ConfigMap" && component(o) == name })
		if i < 0 {
			t.Fatalf("no %s ConfigMap rendered", name)
		}
		for _, k := range mirrored[name] {
			got, want := objs[i].Data[k], defaults[k]
			if want == "" {
				t.Errorf("%s: hourglass %s --help shows no default of %s", name, name, k)
				continue
			}
			if !sameSetting(got, want) {
				t.Errorf("%s: the chart sets %s=%q, the service's default is %q", name, k, got, want)
			}
		}
	}
}

// execOutputEnv runs a command with env added to the environment and
// returns its combined output.
func execOutputEnv(t *testing.T, env []string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), name, args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sameSetting compares two renderings of a value: equal text, equal
// durations ("8760h" and "365d"), or equal byte counts ("33554432" and
// "32 MiB").
func sameSetting(a, b string) bool {
	if a == b {
		return true
	}
	da, errA := cli.ParseDuration(a)
	db, errB := cli.ParseDuration(b)
	if errA == nil && errB == nil {
		return da == db
	}
	ba, errA := cli.ParseBytes(a)
	bb, errB := cli.ParseBytes(strings.ReplaceAll(b, " ", ""))
	if errA == nil && errB == nil {
		return ba == bb
	}
	fa, errA := strconv.ParseFloat(a, 64)
	fb, errB := strconv.ParseFloat(b, 64)
	return errA == nil && errB == nil && math.Abs(fa-fb) < 1e-9
}

// TestChartGoMaxProcs: the router's and the canceller's GOMAXPROCS follow
// their CPU request, rounded up to whole cores, unless extraEnv sets it.
func TestChartGoMaxProcs(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		set      []string
		want     map[string]string // component -> GOMAXPROCS
		extraEnv string            // the component whose GOMAXPROCS comes from extraEnv
	}{
		{nil, map[string]string{"router": "1", "canceller": "1"}, ""},
		{[]string{"router.resources.requests.cpu=2500m", "canceller.resources.requests.cpu=2"}, map[string]string{"router": "3", "canceller": "2"}, ""},
		{[]string{"router.extraEnv.GOMAXPROCS=4"}, map[string]string{"router": "4", "canceller": "1"}, "router"},
	} {
		objs := mustRender(t, "", tc.set...)
		configMaps := configMapsOf(objs)
		seen := 0
		for _, o := range objs {
			ps, ok := podSpecOf(t, o)
			want, mine := tc.want[component(o)]
			if !ok || !mine || o.Kind != "StatefulSet" && o.Kind != "Deployment" {
				continue
			}
			seen++
			c := ps.Containers[0]
			if got := containerEnv(t, o, c, configMaps)["GOMAXPROCS"]; got != want {
				t.Errorf("%v: %s GOMAXPROCS %q, want %q", tc.set, o, got, want)
			}
			n := 0
			for _, e := range c.Env {
				if e.Name == "GOMAXPROCS" {
					n++
				}
			}
			wantN := 1
			if component(o) == tc.extraEnv {
				wantN = 0 // from the ConfigMap only
			}
			if n != wantN {
				t.Errorf("%v: %s sets GOMAXPROCS %d times in its container env, want %d", tc.set, o, n, wantN)
			}
		}
		if seen != 2 {
			t.Errorf("%v: %d router and canceller workloads rendered, want 2", tc.set, seen)
		}
	}
}
