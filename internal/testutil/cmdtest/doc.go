// Package cmdtest holds helpers for the tests of the command packages: run
// a command with bounded time and captured output, and check that it
// refuses bad configuration the way Main reports it (exit 2).
package cmdtest
