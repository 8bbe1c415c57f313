package consumer

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// trackerOf returns a tracker that took offsets from..to-1 and finished
// those done says.
func trackerOf(from, to int64, done func(int64) bool) *tracker {
	t := newTracker()
	for o := from; o < to; o++ {
		t.Add(o)
	}
	for o := from; o < to; o++ {
		if done(o) {
			t.Done(o)
		}
	}
	return &t
}

// skipped returns t after the consumer skipped the offsets below next.
func skipped(t *tracker, next int64) *tracker {
	t.Skip(next)
	return t
}

func TestHandledMeta(t *testing.T) {
	for _, tt := range []struct {
		name     string
		t        *tracker
		maxBits  int
		want     string
		wantDone []int64 // offsets the parsed metadata has
		wantNot  []int64 // offsets it has not
	}{
		{name: "nothing taken", t: func() *tracker { t := newTracker(); return &t }(), maxBits: 64, want: ""},
		{name: "all done", t: trackerOf(10, 20, func(int64) bool { return true }), maxBits: 64, want: ""},
		{name: "all pending", t: trackerOf(10, 20, func(int64) bool { return false }), maxBits: 64, want: ""},
		{
			name: "one held, the rest done", t: trackerOf(100, 110, func(o int64) bool { return o != 102 }), maxBits: 64,
			want: "hg1:102:fw", wantDone: []int64{103, 104, 109}, wantNot: []int64{100, 101, 102, 110, 111},
		},
		{
			name: "done and pending mixed", t: trackerOf(0, 12, func(o int64) bool { return o%3 == 0 && o > 0 }), maxBits: 64,
			want: "hg1:0:JAE", wantDone: []int64{3, 6, 9}, wantNot: []int64{0, 1, 2, 4, 5, 7, 8, 10, 11},
		},
		{
			name: "cut to maxBits", t: trackerOf(0, 200, func(o int64) bool { return o != 0 }), maxBits: 16,
			want: "hg1:0:__8", wantDone: []int64{1, 16}, wantNot: []int64{0, 17, 100},
		},
		{
			name: "across words", t: trackerOf(60, 200, func(o int64) bool { return o != 63 && o != 130 }), maxBits: 1000,
			wantDone: []int64{64, 127, 128, 129, 131, 199}, wantNot: []int64{63, 130, 200},
		},
		{
			// A batch skipped (too large to decode) past the last
			// offset taken: its offsets are not pending.
			name: "skipped batch", t: skipped(trackerOf(100, 110, func(o int64) bool { return o != 102 }), 400), maxBits: 1000,
			wantDone: []int64{103, 109, 110, 255, 399}, wantNot: []int64{102, 400},
		},
		{
			name: "skipped batch cut to maxBits", t: skipped(trackerOf(0, 3, func(o int64) bool { return o != 0 }), 5000), maxBits: 128,
			wantDone: []int64{1, 2, 3, 128}, wantNot: []int64{0, 129},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			meta := tt.t.handledMeta(tt.maxBits)
			if tt.want != "" && meta != tt.want {
				t.Errorf("handledMeta = %q, want %q", meta, tt.want)
			}
			if tt.want == "" && tt.wantDone == nil {
				if meta != "" {
					t.Errorf("handledMeta = %q, want none", meta)
				}
				return
			}
			w, _ := tt.t.Watermark()
			h, ok := parseHandled(meta, w)
			if !ok {
				t.Fatalf("parseHandled(%q, %d) failed", meta, w)
			}
			for _, o := range tt.wantDone {
				if !h.has(o) {
					t.Errorf("offset %d not recorded as done", o)
				}
			}
			for _, o := range tt.wantNot {
				if h.has(o) {
					t.Errorf("offset %d recorded as done", o)
				}
			}
		})
	}
}

// TestHandledMetaRandom: what the metadata records as done is exactly the
// done offsets above the watermark, up to the last one or maxBits.
func TestHandledMetaRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		from := rng.Int64N(1000)
		to := from + 1 + rng.Int64N(700)
		p := rng.Float64()
		doneSet := map[int64]bool{}
		tr := trackerOf(from, to, func(o int64) bool {
			doneSet[o] = rng.Float64() < p
			return doneSet[o]
		})
		if rng.IntN(3) == 0 {
			// The consumer skipped a batch: its offsets are done.
			next := to + 1 + rng.Int64N(300)
			tr.Skip(next)
			for o := to; o < next; o++ {
				doneSet[o] = true
			}
			to = next
		}
		maxBits := 1 + rng.IntN(800)
		meta := tr.handledMeta(maxBits)
		w, _ := tr.Watermark()
		h, ok := parseHandled(meta, w)
		if meta == "" {
			continue
		}
		if !ok {
			t.Fatalf("parseHandled(%q, %d) failed", meta, w)
		}
		for o := from; o < to+70; o++ {
			want := o > w && o <= w+int64(maxBits) && doneSet[o]
			if got := h.has(o); got != want {
				// Past the last done offset the set ends: only a
				// done offset may be missing beyond maxBits.
				t.Fatalf("tracker %d..%d, watermark %d, maxBits %d: offset %d has %v, want %v", from, to, w, maxBits, o, got, want)
			}
		}
	}
}

func TestParseHandledRejects(t *testing.T) {
	for _, meta := range []string{
		"",
		"member-1-abc",                         // franz-go's default metadata: the member id
		"hg1:102:fw:extra",                     // base64 with a colon
		"hg1:101:fw",                           // another committed offset
		"hg1:-1:fw",                            // negative
		"hg1:102",                              // no bits
		"hg1:102:",                             // empty bits
		"hg1:102:f=",                           // padded
		"hg2:102:fw",                           // another version
		"hg1:x:fw",                             // not a number
		"hg1:102:" + strings.Repeat("A", 3000), // longer than a commit writes
	} {
		if _, ok := parseHandled(meta, 102); ok {
			t.Errorf("parseHandled(%.40q) accepted", meta)
		}
	}
}

// FuzzParseHandled: commit metadata is read from the broker, where any
// client of the group may have written it: it never panics, and what it
// accepts stays within the bound a commit writes.
func FuzzParseHandled(f *testing.F) {
	f.Add("hg1:102:fw", int64(102))
	f.Add("hg1:0:__8", int64(0))
	f.Add("member-1", int64(5))
	f.Fuzz(func(t *testing.T, meta string, committed int64) {
		h, ok := parseHandled(meta, committed)
		if !ok {
			return
		}
		if h.from != committed+1 || len(h.set) == 0 || len(h.set) > maxHandledBits/8 {
			t.Fatalf("parseHandled(%q, %d) = from %d, %d bytes", meta, committed, h.from, len(h.set))
		}
		if h.has(committed) || !h.past(committed+1+int64(len(h.set))*8) {
			t.Fatalf("parseHandled(%q, %d): bounds wrong", meta, committed)
		}
	})
}

// BenchmarkHandledMeta: the metadata of one commit of a partition whose
// watermark a held record pins 10,000 offsets back, one in twenty of them
// still held (the router's timer at 10,000 deadlines/s a partition).
func BenchmarkHandledMeta(b *testing.B) {
	tr := trackerOf(0, 10_000, func(o int64) bool { return o%20 != 0 })
	b.ReportAllocs()
	for b.Loop() {
		if tr.handledMeta(maxHandledBits) == "" {
			b.Fatal("no metadata")
		}
	}
}

// TestHandledMetaOps drives a tracker through random adds (with gaps and
// resets), dones and skips, and checks each metadata against a model: the
// offsets above the watermark and below next that are not pending.
func TestHandledMetaOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for run := range 200 {
		tr := newTracker()
		pending := map[int64]bool{}
		next := int64(-1)
		for step := range 400 {
			switch op := rng.IntN(10); {
			case op < 5 || next < 0: // add, at times after a gap or back (a reset)
				o := max(next, 0) + rng.Int64N(3)
				if next > 0 && rng.IntN(40) == 0 {
					o = max(0, next-1-rng.Int64N(100))
					for p := range pending {
						if p >= o {
							delete(pending, p)
						}
					}
				}
				tr.Add(o)
				pending[o], next = true, o+1
			case op < 9: // done, of a pending offset
				for p := range pending {
					tr.Done(p)
					delete(pending, p)
					break
				}
			default: // skip a batch
				next += 1 + rng.Int64N(200)
				tr.Skip(next)
			}
			w, _ := tr.Watermark()
			maxBits := 1 + rng.IntN(300)
			meta := tr.handledMeta(maxBits)
			h, ok := parseHandled(meta, w)
			if meta != "" && !ok {
				t.Fatalf("run %d step %d: parseHandled(%q, %d) failed", run, step, meta, w)
			}
			for o := w + 1; o < next+10; o++ {
				want := o < next && o <= w+int64(maxBits) && !pending[o]
				if got := ok && h.has(o); got != want {
					t.Fatalf("run %d step %d: watermark %d next %d maxBits %d: offset %d recorded %v, want %v", run, step, w, next, maxBits, o, got, want)
				}
			}
		}
	}
}
