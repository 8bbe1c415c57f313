//go:build !unix

package sqlcloser

// peek cannot look at the socket here: connections are pinged after idlePing
// only, as pgx does by default.
func peek(uintptr) bool { return false }
