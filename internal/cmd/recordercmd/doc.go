// Package recordercmd is `hourglass recorder`: it loads outcome events from
// Kafka into ClickHouse, waiting for ClickHouse at start, and with
// --migrate-only only applies the schema migrations.
package recordercmd
