// Package hourglasscmd is the hourglass tool: it dispatches to every
// command. It is the only package that links them all; the router and
// canceller binaries link only their own command.
package hourglasscmd
