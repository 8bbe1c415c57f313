// Package reportcmd is `hourglass report`: it summarizes a time window of
// outcomes from ClickHouse as text, JSON or HTML.
package reportcmd
