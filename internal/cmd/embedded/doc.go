// Package embedded is what the demo and bench commands share: an embedded
// Kafka broker (kfake) on loopback, and a Tally of the outcome events the
// pipeline produces. Only the hourglass tool links it; the router and
// canceller binaries carry no fake broker.
package embedded
