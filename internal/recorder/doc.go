// Package recorder loads outcome events (package outcome) from the outcomes
// topic into ClickHouse (package chstore). It runs as its own process,
// `hourglass recorder`, so that a ClickHouse outage or a slow insert never
// delays a close: the canceller only produces events to Kafka, which keeps
// them until the recorder has inserted them.
//
// # The deadline index
//
// With Config.Index the recorder also indexes what is coming: the same
// group consumes every delay topic of the prefix (tiers.TopicPattern, so a
// tier added later is indexed as it is created), the cancellations topic
// and the dead-letter topic, and inserts a row per scheduled deadline, per
// cancellation and per dead letter into chstore's index tables, in the
// batches of the outcome events and committed with them. A deadline's row
// is its first record: records of a hop (hourglass-hops above 0) and of a
// canceller's retry (hourglass-attempt above 1) add none, nor do records
// that break the contract, which the router dead-letters. The index is
// read by `hourglass status` and the forecast of due load. A ClickHouse
// outage delays the index as it delays the outcomes, never a deadline: the
// router and the canceller do not wait for the recorder.
//
// # Batches and commits
//
// The recorder consumes the topic as a consumer group (default
// hourglass-recorder) with autocommit off. It collects records into a batch
// and inserts the batch, one INSERT per table, when it holds
// Config.BatchRows records (default 5000) or Config.FlushInterval (default
// 1s) after its first record. Only after every insert succeeded does it
// commit the batch's offsets. Rebalances wait for the batch (kgo.BlockRebalanceOnPoll): a
// commit never lands on a partition that moved to another member, and a
// partition never moves with events read but not inserted.
//
// A record that is not an outcome event (not JSON, or another schema
// version) can never be inserted: it is logged, counted
// (hourglass_recorder_malformed_events_total) and committed with its batch.
//
// # ClickHouse down
//
// A failed insert is retried after Config.RetryMin (default 100ms), the
// wait doubling up to Config.RetryMax (default 10s), each attempt bounded by
// Config.InsertTimeout. Meanwhile the recorder polls nothing, so at most one
// batch is held in memory (and franz-go's bounded fetch buffer), and commits
// nothing, so the consumer lag grows with every event the canceller
// produces. When ClickHouse answers again the batch goes in and the recorder
// catches up from the committed offsets. A rebalance during an outage waits
// for the batch; if it waits longer than the group's rebalance timeout, the
// member leaves the group and its events are read again by the next owner.
//
// # Duplicates
//
// A recorder that stops after an insert but before its commit inserts the
// batch again after the restart; a canceller that crashes after a close but
// before its commit closes the task again and sends a second event for the
// same cancel record. Neither counts twice: chstore's queries take each
// attempt, (topic, partition, offset), once, from its first row.
//
// # Stopping
//
// On a stop (the context of Run canceled) the recorder stops polling,
// inserts the last batch (retrying while ClickHouse is down, bounded by
// Config.ShutdownTimeout, default 20s), commits it, lets a waiting rebalance
// go on and leaves the group. A batch not inserted in time is not committed:
// it is read again at the next start.
//
// # Metrics
//
// With Options.Registerer, the recorder exports:
//
//   - hourglass_recorder_rows_inserted_total: events inserted (a replayed
//     event counts again);
//   - hourglass_recorder_insert_errors_total: failed insert attempts;
//   - hourglass_recorder_batches_total: batches inserted and committed;
//   - hourglass_recorder_batch_rows: histogram of rows per batch;
//   - hourglass_recorder_insert_duration_seconds: histogram of successful
//     insert durations;
//   - hourglass_recorder_last_insert_timestamp_seconds: when the last
//     insert succeeded, unix seconds (alert on time() minus it);
//   - hourglass_recorder_malformed_events_total: records skipped as not an
//     outcome event;
//   - hourglass_recorder_buffered_rows: events and index rows read and
//     waiting for their insert;
//   - hourglass_recorder_index_rows_inserted_total{table}: rows of the
//     deadline index inserted, by table (deadlines, cancellations,
//     dead_letters);
//   - hourglass_recorder_index_skipped_total{reason}: records of indexed
//     topics without a row of their own: hop, retry, invalid,
//     key_too_long.
//
// The recorder command adds hourglass_consumer_lag_records{group="hourglass-recorder"}
// (the outcomes topic's end offsets minus the committed ones, per
// partition; package telemetry) and franz-go's hourglass_kafka_* series.
package recorder
