// Package kafka connects Hourglass commands to Kafka.
//
// [Config] is the connection configuration every command shares: seed
// brokers, client ID, TLS and SASL (PLAIN, SCRAM, OAUTHBEARER with a token
// file read at each authentication, AWS_MSK_IAM with the credentials of
// the environment). [Config.Validate] reports every problem naming the
// field (the commands name the flag that set it); [Config.Opts] turns it
// into kgo options. [ReadProperties] reads the subset of a Kafka
// client.properties file that fills a Config, for
// [Config.ApplyProperties]. Hourglass builds every kgo client from those
// options and tests against kfake instead of mocking the client.
//
// Every client that reads Hourglass topics reads committed records only and
// caps what a fetched batch may decompress to ([ReaderOpts]); [SkipBatch]
// moves a reader past a batch refused for that cap or malformed.
//
// The cap is per batch, and franz-go decodes every batch of a partition's
// fetch response at once, however small they are on the wire: a fetch of
// 300 kB can hold a hundred batches at the cap. So each reader client also
// has a decode budget, [DecodeBudgetBatches] caps (32 MiB by default): the
// records it has decoded and not yet handed to a poll, counted as franz-go
// holds them (key, value and headers, and a kgo.Record each), take at most
// the budget. A batch is decoded only while one at the cap still fits
// beside them; otherwise the decompressor leaves it to a later fetch, and
// franz-go keeps what the partition decoded before it. Since franz-go
// fetches again from a broker only once a poll has taken that broker's
// buffered fetch whole, polls free the budget, and a client holding nothing
// buffered has room for a batch: every poll makes progress. Records
// franz-go decodes and drops (below the fetch offset, in aborted
// transactions) stay counted until no batch was decoded for 100 ms. A
// partition whose first batch was left to a later fetch comes back from
// the poll with an error that [Deferred] reports: it is no error, and is
// neither logged, backed off from, nor dead-lettered. Readers fetch without
// fetch sessions, so that each fetch starts one partition later: a
// partition of big batches takes the budget of the fetches it comes first
// in, not of every fetch.
//
// [KeyPartition] is the partition a task id's records go to, as every
// Hourglass producer (and the Java client) partitions them. Group
// consumers are in internal/consumer; topic provisioning is in
// internal/topics, the one place that knows the pipeline's topic layout.
package kafka
