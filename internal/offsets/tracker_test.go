package offsets

import (
	"math/rand/v2"
	"testing"
)

func TestTracker(t *testing.T) {
	tr := NewTracker()
	if _, ok := tr.Watermark(); ok {
		t.Fatal("watermark before any offset")
	}
	for _, o := range []int64{10, 11, 12, 15, 16} { // 13, 14: a gap
		tr.Add(o)
	}
	steps := []struct {
		done int64
		want int64
	}{
		{11, 10}, {10, 12}, {16, 12}, {12, 15}, {99, 15}, {15, 17},
	}
	for _, s := range steps {
		tr.Done(s.done)
		if got, _ := tr.Watermark(); got != s.want {
			t.Fatalf("after done(%d): watermark %d, want %d", s.done, got, s.want)
		}
	}
	if tr.Pending() != 0 {
		t.Fatalf("pending %d, want 0", tr.Pending())
	}
}

// TestTrackerRandom finishes offsets in random order and checks the watermark
// against a plain set after every step.
func TestTrackerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := 0; round < 50; round++ {
		tr := NewTracker()
		pending := map[int64]bool{}
		var offs []int64
		next := int64(rng.IntN(1000))
		for i := 0; i < 3000; i++ {
			// Interleave adds (with gaps) and random completions.
			if len(offs) == 0 || rng.IntN(3) > 0 {
				next += 1 + int64(rng.IntN(3)/2)*int64(rng.IntN(200))
				tr.Add(next)
				pending[next] = true
				offs = append(offs, next)
				next++
				continue
			}
			k := rng.IntN(len(offs))
			o := offs[k]
			offs = append(offs[:k], offs[k+1:]...)
			tr.Done(o)
			delete(pending, o)
			want := next
			for p := range pending {
				want = min(want, p)
			}
			if got, _ := tr.Watermark(); got != want {
				t.Fatalf("round %d step %d: watermark %d, want %d", round, i, got, want)
			}
		}
	}
}

func BenchmarkTracker(b *testing.B) {
	tr := NewTracker()
	const lag = 4096 // one record held while thousands behind it finish
	for i := 0; i < b.N; i++ {
		tr.Add(int64(i))
		if i >= lag {
			tr.Done(int64(i - lag))
		}
	}
}
