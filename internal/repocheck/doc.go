// Package repocheck holds tests of the repository itself rather than of a
// package: the size rules of the house style (a non-test Go file over 400
// lines, or a function over 60, says why in a "size:" comment), the
// relative links of README.md and docs/*.md (each names a file that exists
// and, with an #anchor, a heading of it), that no library imports the
// command line (internal/cli, internal/service, internal/cmd), and that the
// router and canceller binaries link neither the embedded broker nor
// ClickHouse.
package repocheck
