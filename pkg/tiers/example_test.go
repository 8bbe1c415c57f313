package tiers_test

import (
	"fmt"
	"time"

	"github.com/hourglass/hourglass/pkg/tiers"
)

// A record waits in the largest tier not longer than its delay, or in the
// smallest tier when its delay is shorter than every tier.
func ExampleTable_For() {
	table, err := tiers.Parse("1m,5m,30m")
	if err != nil {
		panic(err)
	}
	for _, delay := range []time.Duration{
		-time.Second, // already due
		20 * time.Second,
		7 * time.Minute,
		30 * time.Minute,
		37 * time.Minute,
		48 * time.Hour,
	} {
		fmt.Printf("%-8v -> %s\n", delay, tiers.Topic(tiers.DefaultPrefix, table.For(delay)))
	}
	// Output:
	// -1s      -> hourglass.delay.1m
	// 20s      -> hourglass.delay.1m
	// 7m0s     -> hourglass.delay.5m
	// 30m0s    -> hourglass.delay.30m
	// 37m0s    -> hourglass.delay.30m
	// 48h0m0s  -> hourglass.delay.30m
}

// Name spells a tier the way its topic does: Go duration syntax without zero
// units, which time.ParseDuration reads back.
func ExampleName() {
	for _, d := range []time.Duration{
		time.Minute,
		90 * time.Second,
		90 * time.Minute,
		time.Hour + 30*time.Second,
		1500 * time.Millisecond,
		24 * time.Hour,
	} {
		fmt.Printf("%-10v %s\n", d, tiers.Name(d))
	}
	// Output:
	// 1m0s       1m
	// 1m30s      1m30s
	// 1h30m0s    1h30m
	// 1h0m30s    1h30s
	// 1.5s       1s500ms
	// 24h0m0s    24h
}

// BuildRecord is what Scheduler produces: here an order created at noon that
// closes at 12:37 unless it is paid, so it waits in the 30m tier first.
func ExampleBuildRecord() {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	r, err := tiers.BuildRecord(tiers.DefaultPrefix, tiers.DefaultTable(), now, tiers.Task{
		ID:      "order-42",
		Due:     now.Add(37 * time.Minute),
		Payload: []byte(`{"order":42}`),
		Kind:    "order-timeout",
	})
	if err != nil {
		panic(err)
	}
	due, _ := tiers.Header(r.Headers, tiers.HeaderDue)
	meta, err := tiers.Decode(r.Headers) // what the router reads
	if err != nil {
		panic(err)
	}
	fmt.Println("topic:", r.Topic)
	fmt.Println("key:  ", string(r.Key))
	fmt.Println("due:  ", string(due), "=", meta.Due.UTC().Format(time.TimeOnly))
	for _, h := range r.Headers {
		fmt.Printf("header %s=%s\n", h.Key, h.Value)
	}
	// Output:
	// topic: hourglass.delay.30m
	// key:   order-42
	// due:   1767271020000 = 12:37:00
	// header hourglass-due=1767271020000
	// header hourglass-version=1
	// header hourglass-scheduled=1767268800000
	// header hourglass-kind=order-timeout
}
