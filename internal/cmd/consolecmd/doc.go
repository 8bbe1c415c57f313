// Package consolecmd is `hourglass console`: it builds a console.Config
// from flags and environment variables, opens ClickHouse and serves the
// web console until it is stopped.
package consolecmd
