// Package repocheck holds tests of the repository itself rather than of a
// package: the relative links of README.md and docs/*.md (each names a file that exists
// and, with an #anchor, a heading of it), that no library imports the
// command line (internal/cli, internal/service, internal/cmd), and that the
// router and canceller binaries link neither the embedded broker nor
// ClickHouse.
package repocheck
