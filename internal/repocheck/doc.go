// Package repocheck holds tests of the repository itself rather than of a
// package: the size rules of the house style (a non-test Go file over 400
// lines, or a function over 60, says why in a "size:" comment), and the
// relative links of README.md and docs/*.md (each names a file that exists
// and, with an #anchor, a heading of it).
package repocheck
