// Package democmd is `hourglass demo`: a complete pipeline on an embedded
// broker, with an in-memory order store and a demo order source.
package democmd
