// Package kfaketest runs a package's tests against one in-process Kafka
// cluster (kfake, listening on 127.0.0.1) and fails the run when the tests
// leave goroutines behind.
package kfaketest
