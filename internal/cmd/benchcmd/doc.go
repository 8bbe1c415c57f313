// Package benchcmd is `hourglass bench`: it drives the router and canceller
// (run as child processes of this binary) on an embedded broker and prints
// one JSON line with what it measured.
package benchcmd
