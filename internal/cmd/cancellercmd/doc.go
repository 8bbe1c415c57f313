// Package cancellercmd is the canceller service command: the canceller
// binary and `hourglass canceller`. It parses the canceller's flags
// (canceller.Config registers them), loads the closers file, provisions the
// target, outcomes and dead-letter topics, checks that the delay topics of
// its --tiers exist, and runs the canceller with its HTTP server and lag
// gauge until its context is canceled.
package cancellercmd
