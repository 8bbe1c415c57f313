package consumer

import (
	"math/rand/v2"
	"testing"
)

func TestTracker(t *testing.T) {
	tr := newTracker()
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
		tr := newTracker()
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
	tr := newTracker()
	const lag = 4096 // one record held while thousands behind it finish
	for i := 0; i < b.N; i++ {
		tr.Add(int64(i))
		if i >= lag {
			tr.Done(int64(i - lag))
		}
	}
}

// TestTrackerReset adds offsets below the window, as after a log truncation:
// the tracker forgets what was pending from the reset offset up, keeps what
// is pending below it, and never panics.
func TestTrackerReset(t *testing.T) {
	tests := []struct {
		name      string
		add       []int64 // before the reset
		done      []int64
		reset     int64
		wantReset bool
		want      int64 // watermark just after the reset
		wantN     int
	}{
		{name: "below the window", add: []int64{1000, 1001, 1002}, reset: 5, wantReset: true, want: 5, wantN: 1},
		{name: "far below the window", add: []int64{100_000, 100_001}, done: []int64{100_000}, reset: 0, wantReset: true, want: 0, wantN: 1},
		{name: "inside the window keeps lower pending", add: []int64{10, 11, 12, 13}, done: []int64{11}, reset: 12, wantReset: true, want: 10, wantN: 2},
		{name: "in a later word", add: []int64{10, 70, 140, 200}, reset: 141, wantReset: true, want: 10, wantN: 4},
		{name: "all done before", add: []int64{7, 8}, done: []int64{7, 8}, reset: 3, wantReset: true, want: 3, wantN: 1},
		{name: "at the last offset", add: []int64{7, 8}, reset: 8, wantReset: true, want: 7, wantN: 2},
		{name: "no reset", add: []int64{7, 8}, reset: 9, want: 7, wantN: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := newTracker()
			for _, o := range tt.add {
				tr.Add(o)
			}
			for _, o := range tt.done {
				tr.Done(o)
			}
			if got := tr.Add(tt.reset); got != tt.wantReset {
				t.Errorf("Add(%d) reset = %v, want %v", tt.reset, got, tt.wantReset)
			}
			if got, _ := tr.Watermark(); got != tt.want {
				t.Errorf("watermark %d, want %d", got, tt.want)
			}
			if tr.Pending() != tt.wantN {
				t.Errorf("pending %d, want %d", tr.Pending(), tt.wantN)
			}
			// Finishing everything still pending ends one past the reset
			// offset: what was added before it above it is gone.
			for o := int64(0); o <= tt.reset; o++ {
				tr.Done(o)
			}
			if got, _ := tr.Watermark(); got != tt.reset+1 || tr.Pending() != 0 {
				t.Errorf("after finishing: watermark %d pending %d, want %d and 0", got, tr.Pending(), tt.reset+1)
			}
		})
	}
}

func TestTrackerSkip(t *testing.T) {
	tr := newTracker()
	tr.Add(10)
	tr.Skip(20) // a batch 11..19 the consumer could not read
	if got, _ := tr.Watermark(); got != 10 {
		t.Fatalf("watermark %d, want 10 while 10 is pending", got)
	}
	tr.Done(10)
	if got, _ := tr.Watermark(); got != 20 {
		t.Fatalf("watermark %d, want 20", got)
	}
	tr.Add(20)
	if got, _ := tr.Watermark(); got != 20 {
		t.Fatalf("watermark %d, want 20", got)
	}
}

// TestTrackerRandomResets mixes adds, completions and occasional resets to a
// lower offset, checking the watermark against a plain set after each step.
func TestTrackerRandomResets(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 50; round++ {
		tr := newTracker()
		pending := map[int64]bool{}
		next := int64(rng.IntN(1000))
		added := false
		for i := 0; i < 3000; i++ {
			switch k := rng.IntN(20); {
			case k == 0 && added && next > 0: // reset to a lower offset
				o := next - 1 - int64(rng.IntN(int(min(next, 300))))
				if !tr.Add(o) {
					t.Fatalf("round %d step %d: Add(%d) after %d did not report a reset", round, i, o, next-1)
				}
				for p := range pending {
					if p >= o {
						delete(pending, p)
					}
				}
				pending[o] = true
				next = o + 1
			case k < 12 || len(pending) == 0:
				next += int64(rng.IntN(3) / 2 * rng.IntN(200))
				if tr.Add(next) {
					t.Fatalf("round %d step %d: Add(%d) reported a reset", round, i, next)
				}
				pending[next] = true
				next++
				added = true
			default:
				for p := range pending { // a random pending offset
					tr.Done(p)
					delete(pending, p)
					break
				}
			}
			want := next
			for p := range pending {
				want = min(want, p)
			}
			if got, _ := tr.Watermark(); got != want || tr.Pending() != len(pending) {
				t.Fatalf("round %d step %d: watermark %d pending %d, want %d and %d", round, i, got, tr.Pending(), want, len(pending))
			}
		}
	}
}

func TestTrackerStale(t *testing.T) {
	tr := newTracker()
	for o := int64(10); o < 20; o++ {
		tr.Add(o)
	}
	before := tr.Epoch()
	tr.Add(15) // reset
	tr.Add(13) // another, lower
	for _, c := range []struct {
		epoch  int
		offset int64
		want   bool
	}{
		{before, 12, false}, // below both resets: still the same record
		{before, 13, true}, {before, 19, true},
		{before + 1, 14, true}, // taken after the reset to 15, forgotten by the one to 13
		{before + 1, 12, false},
		{tr.Epoch(), 13, false}, // taken now
	} {
		if got := tr.Stale(c.epoch, c.offset); got != c.want {
			t.Errorf("Stale(%d, %d) = %v, want %v", c.epoch, c.offset, got, c.want)
		}
	}
}
