package benchcmd

import (
	"testing"
	"time"
)

func TestSteadyResult(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	rt, cn, rt2 := &child{}, &child{}, &child{}
	// fired per second from second i to i+1, at a rate of 1000: a ramp,
	// 6 steady seconds, a dip, 3 steady seconds, then a tail.
	perSecond := []int{200, 600, 950, 1000, 1010, 990, 1000, 980, 500, 1000, 1000, 1000, 300}
	s := steady{rate: 1000, start: start}
	fired, cpu := 0, 0.0
	for i := 0; i <= len(perSecond); i++ {
		s.samples = append(s.samples, steadySample{at: start.Add(time.Duration(i) * time.Second), fired: fired, rt: rt, cn: cn, router: cpu, canceller: cpu / 2})
		if i < len(perSecond) {
			fired += perSecond[i]
			cpu += 0.1 // 100 ms a second, whatever fires
		}
	}
	got := s.result()
	if got == nil {
		t.Fatal("no steady stretch found")
	}
	// Seconds 2 to 8: 950+1000+1010+990+1000+980 fired, 0.6 s of router CPU.
	want := steadyResult{FromS: 2, ToS: 8, Fired: 5930, Rate: 988.3, RouterCPUPerDeadline: 101.2, CancellerCPUPerDeadline: 50.6}
	if *got != want {
		t.Fatalf("steady = %+v, want %+v", *got, want)
	}

	// A stretch ends where a process was replaced (--kill).
	for i := 5; i < len(s.samples); i++ {
		s.samples[i].rt = rt2
	}
	if got := s.result(); got != nil {
		t.Fatalf("with the router replaced at second 5: steady = %+v, want none (no %d steady seconds in a row)", *got, minSteady)
	}
	// Too few samples.
	if got := (&steady{rate: 1000}).result(); got != nil {
		t.Fatalf("no samples: steady = %+v", *got)
	}
}
