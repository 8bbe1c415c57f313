// Package statuscmd is `hourglass status ID`: where one task is now, looked
// up with --clickhouse in the deadline index in ClickHouse, or read from
// Kafka (package taskstatus says where each deadline is).
//
// A task's records share a key, the task id, so each topic holds them in
// one partition: the one the producers' partitioner (murmur2 of the key,
// kafka.KeyPartition) picks. status reads that partition of each topic the
// task passes through (the delay topics of --tiers, the target topics, the
// outcomes, dead-letter and cancellations topics, and any other target a
// delay record names) from the first offset at or after --since up to its
// last stable offset, committed records only, without a consumer group,
// and keeps what it prints of the records of the key, the latest 1000
// (kept.go). The whole command is bounded by
// --timeout: what was not read by then is reported as incomplete, on
// stderr as it goes when the read is long, and in the exit status.
package statuscmd
