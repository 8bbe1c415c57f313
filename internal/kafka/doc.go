// Package kafka connects Hourglass commands to Kafka.
//
// [Config] is the connection configuration every command shares: seed
// brokers, client ID, TLS and SASL. [Config.RegisterFlags] adds its flags,
// each with a HOURGLASS_* environment fallback (--brokers and
// HOURGLASS_BROKERS, --tls-ca-file and HOURGLASS_TLS_CA_FILE, ...);
// [Config.Validate] reports every problem naming the flag; [Config.Opts]
// turns it into kgo options. Hourglass builds every kgo client from those
// options and tests against kfake instead of mocking the client.
//
// Every client that reads Hourglass topics reads committed records only and
// caps what a fetched batch may decompress to ([ReaderOpts]); [SkipBatch]
// moves a reader past a batch refused for that cap or malformed.
// [KeyPartition] is the partition a task id's records go to, as every
// Hourglass producer (and the Java client) partitions them. Group
// consumers are in internal/consumer; topic provisioning is in
// internal/topics, the one place that knows the pipeline's topic layout.
package kafka
