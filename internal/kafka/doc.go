// Package kafka connects Hourglass commands to Kafka and provisions the
// topics they need.
//
// [Config] is the connection configuration every command shares: seed
// brokers, client ID, TLS and SASL. [Config.RegisterFlags] adds its flags,
// each with a HOURGLASS_* environment fallback (--brokers and
// HOURGLASS_BROKERS, --tls-ca-file and HOURGLASS_TLS_CA_FILE, ...);
// [Config.Validate] reports every problem naming the flag; [Config.Opts]
// turns it into kgo options. Hourglass builds every kgo client from those
// options and tests against kfake instead of mocking the client.
//
// [EnsureTopics] creates missing topics and checks existing ones against a
// [TopicSpec] without ever altering them; [FormatStatus] prints the result.
// Configs are compared only as the broker reports them: kfake (and some
// Kafka-compatible brokers) do not report every topic config, and a config
// that is not reported is listed as unverified, never as a mismatch.
package kafka
