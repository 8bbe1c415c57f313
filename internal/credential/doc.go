// Package credential holds the credentials a configuration file gives for
// reaching another system: secrets (Secret: a password, a token, a DSN)
// taken from the environment or a file, or written inline, and TLS client
// settings (TLS: CA, client certificate and key). Both decode from YAML. The
// closer configurations (sqlcloser, httpcloser, kafkacloser), the Kafka
// connection options and the ClickHouse configuration use them.
package credential
