// Package telemetry is what the services share for Prometheus: a private
// registry with Go, process and franz-go client metrics, the consumer lag of
// a group, the histogram buckets of latencies, and the named conditions a
// service's readiness (/readyz) combines (Condition, NotReady).
package telemetry
