package embedded

import "testing"

// TestPercentilesOf: nearest-rank percentiles of unsorted samples, as the
// bench and the load test's verify report them.
func TestPercentilesOf(t *testing.T) {
	seq := func(n int) []int64 {
		vs := make([]int64, n)
		for i := range vs {
			vs[i] = int64(n - i) // reversed: PercentilesOf sorts
		}
		return vs
	}
	for _, tc := range []struct {
		name string
		in   []int64
		want Percentiles
	}{
		{"none", nil, Percentiles{}},
		{"one", []int64{4}, Percentiles{P50: 4, P90: 4, P99: 4, P999: 4, Max: 4}},
		{"two", []int64{9, 1}, Percentiles{P50: 1, P90: 9, P99: 9, P999: 9, Max: 9}},
		{"1..100", seq(100), Percentiles{P50: 50, P90: 90, P99: 99, P999: 100, Max: 100}},
		{"1..1000", seq(1000), Percentiles{P50: 500, P90: 900, P99: 990, P999: 999, Max: 1000}},
		{"negative", []int64{-5, 3, -1}, Percentiles{P50: -1, P90: 3, P99: 3, P999: 3, Max: 3}},
	} {
		if got := PercentilesOf(tc.in); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
