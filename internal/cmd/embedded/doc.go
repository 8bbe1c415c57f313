// Package embedded is what the demo and bench commands share: an embedded
// Kafka broker (kfake) on loopback, and a Tally of the outcome events the
// pipeline produces, with their lateness percentiles (PercentilesOf), which
// the load test's verify reports too. Only the hourglass tool and verify
// link it; the router and canceller binaries carry no fake broker.
package embedded
