package cancels

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hourglass/hourglass/internal/testutil/poll"
	"github.com/hourglass/hourglass/pkg/tiers"
)

// benchLen is how many cancellations BenchmarkLookup's store holds.
const benchLen = 100_000

// fill commits n cancellations of ids "order-0" to "order-<n-1>", expiring
// in a day, in batches of 1000, each with the offset it reached.
func fill(tb testing.TB, s *Store, n int) {
	tb.Helper()
	now := time.Now()
	b := s.NewBatch()
	for i := range n {
		b.Put(tiers.Cancellation{ID: "order-" + strconv.Itoa(i), At: now}, now.Add(24*time.Hour))
		if (i+1)%1000 == 0 || i == n-1 {
			b.SetOffset(0, int64(i+1))
			if err := b.Commit(); err != nil {
				tb.Fatal(err)
			}
		}
	}
}

// BenchmarkLookup looks up tasks in a store of benchLen cancellations,
// flushed to tables and compacted: "hit" finds them, "miss" looks up tasks never
// cancelled (the bloom filters answer), and "parallel" hits from every
// core at once.
func BenchmarkLookup(b *testing.B) {
	s := open(b)
	fill(b, s, benchLen)
	if err := s.db.Flush(); err != nil {
		b.Fatal(err)
	}
	waitIdle(b, s)
	hits, misses := make([]string, 1024), make([]string, 1024)
	for i := range hits {
		hits[i] = "order-" + strconv.Itoa(rand.N(benchLen))
		misses[i] = "other-" + strconv.Itoa(rand.N(benchLen))
	}
	run := func(ids []string, want bool) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			defer reportCPU(b, cpuTime())
			i := 0
			for b.Loop() {
				if _, ok, err := s.Lookup(ids[i&1023]); ok != want || err != nil {
					b.Fatalf("Lookup(%s) = %v, %v", ids[i&1023], ok, err)
				}
				i++
			}
		}
	}
	b.Run("hit", run(hits, true))
	b.Run("miss", run(misses, false))
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		defer reportCPU(b, cpuTime())
		b.RunParallel(func(pb *testing.PB) {
			i := rand.N(1024)
			for pb.Next() {
				if _, ok, err := s.Lookup(hits[i&1023]); !ok || err != nil {
					b.Errorf("Lookup(%s) = %v, %v", hits[i&1023], ok, err)
					return
				}
				i++
			}
		})
	})
}

// BenchmarkPut puts new cancellations in batches of 1000: the time and
// allocations of one op are those of one record (its id included) and a
// thousandth of a Commit.
func BenchmarkPut(b *testing.B) {
	s := open(b)
	now := time.Now()
	batch := s.NewBatch()
	b.ReportAllocs()
	defer reportCPU(b, cpuTime())
	i := 0
	for b.Loop() {
		batch.Put(tiers.Cancellation{ID: "order-" + strconv.Itoa(i), At: now}, now.Add(24*time.Hour))
		i++
		if i%1000 == 0 {
			if err := batch.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := batch.Commit(); err != nil {
		b.Fatal(err)
	}
}

// cpuTime returns the CPU time of the process so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the CPU time of the process per op since start, Pebble's
// background work included: on a busy machine, ns/op counts the time spent
// waiting for a core too.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
}

// memoryEnv makes the test binary a child of BenchmarkStoreMemory: the
// number of cancellations TestStoreMemoryChild writes.
const memoryEnv = "HOURGLASS_CANCELS_MEMORY_N"

// memoryMarker starts the line on which the child reports.
const memoryMarker = "cancels-memory: "

// memoryReport is what a child measured once its store was written, swept
// and looked up in, and the Go heap collected and returned to the OS.
type memoryReport struct {
	N      int     `json:"n"`
	RSSMB  float64 `json:"rss_mb"`  // VmRSS
	HeapMB float64 `json:"heap_mb"` // Go heap in use
	PeakMB float64 `json:"peak_rss_mb"`
	DiskMB float64 `json:"disk_mb"` // the Pebble directory
	// Cgo: Pebble's block cache and memtables are malloc'ed with cgo, in
	// the Go heap without.
	Cgo bool `json:"cgo"`
}

var memoryOnce struct {
	sync.Once
	reports []memoryReport
	err     error
}

// BenchmarkStoreMemory runs a child process for 10,000 and for 1,000,000
// cancellations, and prints what each holds in memory as a JSON line, then
// the difference. The store's memory must not grow with the cancellations:
// the target is 10 MB more RSS at most. It runs the children once, however
// many times the benchmark is called. The image is built without cgo:
// "CGO_ENABLED=0 go test -run '^$' -bench BenchmarkStoreMemory" measures
// that build.
func BenchmarkStoreMemory(b *testing.B) {
	memoryOnce.Do(func() {
		for _, n := range []int{10_000, 1_000_000} {
			r, err := runMemoryChild(n)
			if err != nil {
				memoryOnce.err = err
				return
			}
			memoryOnce.reports = append(memoryOnce.reports, r)
			line, _ := json.Marshal(r)
			fmt.Println(string(line))
		}
		small, big := memoryOnce.reports[0], memoryOnce.reports[1]
		fmt.Printf("{\"n_from\":%d,\"n_to\":%d,\"rss_mb\":%.1f,\"heap_mb\":%.1f}\n",
			small.N, big.N, big.RSSMB-small.RSSMB, big.HeapMB-small.HeapMB)
	})
	if memoryOnce.err != nil {
		b.Fatal(memoryOnce.err)
	}
	small, big := memoryOnce.reports[0], memoryOnce.reports[1]
	b.ReportMetric(big.RSSMB-small.RSSMB, "rss_mb_diff")
	b.ReportMetric(big.HeapMB-small.HeapMB, "heap_mb_diff")
}

// runMemoryChild runs TestStoreMemoryChild for n cancellations in a new
// process of this test binary and returns its report.
func runMemoryChild(n int) (memoryReport, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestStoreMemoryChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), memoryEnv+"="+strconv.Itoa(n))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return memoryReport{}, fmt.Errorf("memory child of %d: %w\n%s%s", n, err, out, stderr.Bytes())
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), memoryMarker); ok {
			var r memoryReport
			err := json.Unmarshal([]byte(line), &r)
			return r, err
		}
	}
	return memoryReport{}, fmt.Errorf("memory child of %d reported nothing:\n%s", n, out)
}

// TestStoreMemoryChild is the child process of BenchmarkStoreMemory; it
// skips unless memoryEnv is set. It writes the cancellations, sweeps
// (nothing expires), looks up 100,000 of them at random (which fills the
// block cache of a large store, as a router's lookups do in time), waits
// for Pebble's flushes and compactions, and reports its memory.
func TestStoreMemoryChild(t *testing.T) {
	n, err := strconv.Atoi(os.Getenv(memoryEnv))
	if err != nil {
		t.Skip("runs as the child of BenchmarkStoreMemory")
	}
	s := open(t)
	fill(t, s, n)
	if swept, err := s.Sweep(time.Now()); err != nil || swept != 0 {
		t.Fatalf("Sweep() = %d, %v, want 0", swept, err)
	}
	for range 100_000 {
		if _, ok, err := s.Lookup("order-" + strconv.Itoa(rand.N(n))); !ok || err != nil {
			t.Fatalf("Lookup: %v, %v", ok, err)
		}
	}
	waitIdle(t, s)
	if s.Len() != int64(n) {
		t.Fatalf("Len() = %d, want %d", s.Len(), n)
	}
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := memoryReport{N: n, HeapMB: mb(int64(ms.HeapInuse)), DiskMB: mb(dirSize(t, s.dir))}
	r.RSSMB, r.PeakMB = procStatus(t, "VmRSS:"), procStatus(t, "VmHWM:")
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			r.Cgo = r.Cgo || s.Key == "CGO_ENABLED" && s.Value == "1"
		}
	}
	line, _ := json.Marshal(r)
	fmt.Printf("%s%s\n", memoryMarker, line)
}

// waitIdle waits, a minute at most, until Pebble runs no flush and no
// compaction.
func waitIdle(t testing.TB, s *Store) {
	t.Helper()
	poll.Until(t, time.Minute, "Pebble to finish flushing and compacting", func() bool {
		m := s.db.Metrics()
		return m.Flush.NumInProgress == 0 && m.Compact.NumInProgress == 0
	}, nil)
}

// mb converts bytes to MiB, to a tenth.
func mb(n int64) float64 { return float64(n*10/(1<<20)) / 10 }

// procStatus reads a field of /proc/self/status, in kB, as MiB.
func procStatus(t *testing.T, field string) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("%s in /proc/self/status: %v", field, err)
			}
			return mb(kb << 10)
		}
	}
	t.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// dirSize adds up the sizes of the files in dir.
func dirSize(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
