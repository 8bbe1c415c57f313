// Package flags registers the flags that several Hourglass commands share,
// each with its HOURGLASS_* environment variable, and names the problems of
// the library Configs they fill by those flags: the Kafka connection
// ([Kafka], kafka.Config), the tier table ([Tiers]), the record limits
// ([Limits]) and the static group membership ([InstanceID]). The
// ClickHouse flags are in internal/cmd/chflags, so that the router and
// canceller binaries, which import this package, carry no ClickHouse
// driver.
//
// A library's Validate names the fields of its Config (internal/field); the
// cli.Fields tables here and in each command map them to flags, so that the
// user reads "--max-key-bytes (HOURGLASS_MAX_KEY_BYTES): 0: must be at
// least 1" whichever library found the problem.
package flags
