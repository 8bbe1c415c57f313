// Package routercmd is the router service command: the router binary and
// `hourglass router`. It parses the router's flags (router.Config registers
// them), provisions the delay, target and dead-letter topics, and runs the
// router with its HTTP server and lag gauge until its context is canceled.
package routercmd
