// Package telemetry is what the services share for Prometheus: a private
// registry with Go, process and franz-go client metrics, the consumer lag of
// a group, and the histogram buckets of latencies.
package telemetry
