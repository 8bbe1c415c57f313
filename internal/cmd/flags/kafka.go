package flags

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/field"
	"github.com/hourglass/hourglass/internal/kafka"
)

// kafkaFields are the flags of kafka.Config's fields.
var kafkaFields = cli.Fields{
	"PropertiesFile":        "kafka-config",
	"Brokers":               "brokers",
	"ClientID":              "client-id",
	"TLS":                   "tls",
	"TLSCAFile":             "tls-ca-file",
	"TLSCertFile":           "tls-cert-file",
	"TLSKeyFile":            "tls-key-file",
	"TLSServerName":         "tls-server-name",
	"TLSInsecureSkipVerify": "tls-insecure-skip-verify",
	"SASLMechanism":         "sasl-mechanism",
	"SASLUser":              "sasl-user",
	"SASLPassword":          "sasl-password",
	"SASLPasswordFile":      "sasl-password-file",
	"SASLOAuthTokenFile":    "sasl-oauth-token-file",
}

// SectionKafka is the section of --help that holds the connection flags
// Kafka registers, but for --brokers, which is Essential.
const SectionKafka = "Kafka connection"

// Kafka registers every field of c as a flag on fs with its HOURGLASS_*
// environment variable (--brokers and HOURGLASS_BROKERS, --tls-ca-file and
// HOURGLASS_TLS_CA_FILE, ...), storing the defaults into c: the brokers
// kafka.DefaultBrokers, the client ID clientID, typically the command's
// name. CheckKafka applies the file of --kafka-config. The flags go into
// SectionKafka of --help, and --brokers into its Essential section.
func Kafka(fs *cli.FlagSet, c *kafka.Config, clientID string) {
	env := cli.Env
	fs.StringVar(&c.PropertiesFile, "kafka-config", env("kafka-config"), "",
		"Kafka client properties `file` (client.properties: bootstrap.servers, client.id, security.protocol, sasl.*, ssl.*.location); each flag or environment variable given wins over the file")
	fs.StringsVar(&c.Brokers, "brokers", env("brokers"), []string{kafka.DefaultBrokers},
		"Kafka seed brokers, comma-separated `host:port,...`")
	fs.StringVar(&c.ClientID, "client-id", env("client-id"), clientID,
		"Kafka client ID, seen in broker logs and quotas")
	fs.BoolVar(&c.TLS, "tls", env("tls"), false,
		"connect to the brokers with TLS (implied by any other --tls-* flag)")
	fs.StringVar(&c.TLSCAFile, "tls-ca-file", env("tls-ca-file"), "",
		"PEM `file` of CA certificates to trust instead of the system pool")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", env("tls-cert-file"), "",
		"PEM client certificate `file` for mutual TLS (needs --tls-key-file)")
	fs.StringVar(&c.TLSKeyFile, "tls-key-file", env("tls-key-file"), "",
		"PEM private key `file` of --tls-cert-file")
	fs.StringVar(&c.TLSServerName, "tls-server-name", env("tls-server-name"), "",
		"`name` to verify the broker certificates against (default: the host dialed)")
	fs.BoolVar(&c.TLSInsecureSkipVerify, "tls-insecure-skip-verify", env("tls-insecure-skip-verify"), false,
		"do not verify broker certificates (tests only)")
	fs.StringVar(&c.SASLMechanism, "sasl-mechanism", env("sasl-mechanism"), "",
		"SASL `mechanism`: plain, scram-sha-256, scram-sha-512, oauthbearer (--sasl-oauth-token-file) or aws_msk_iam (--tls and the AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN of the environment) (default: no SASL)")
	fs.StringVar(&c.SASLUser, "sasl-user", env("sasl-user"), "",
		"SASL `user`")
	fs.StringVar(&c.SASLPassword, "sasl-password", env("sasl-password"), "",
		"SASL `password`; prefer the environment variable or --sasl-password-file")
	fs.StringVar(&c.SASLPasswordFile, "sasl-password-file", env("sasl-password-file"), "",
		"`file` holding the SASL password, e.g. a mounted secret; a trailing newline is trimmed")
	fs.StringVar(&c.SASLOAuthTokenFile, "sasl-oauth-token-file", env("sasl-oauth-token-file"), "",
		"`file` holding the OAUTHBEARER token, read again at each authentication so that a token a sidecar refreshes is picked up")
	for _, name := range kafkaFields {
		fs.Move(SectionKafka, name)
	}
	fs.Essential("brokers")
}

// CheckKafka applies the file of --kafka-config to c, under the flags and
// environment variables given, then returns the problems of c, each a
// *cli.FlagError of its flag; a message that mentions another flag names
// its environment variable too, as fs registered it. A problem of a value
// the file set names the file, the line and the key, under --kafka-config.
func CheckKafka(fs *cli.FlagSet, c *kafka.Config) error {
	from, err := applyKafkaConfig(fs, c)
	if err != nil {
		return err
	}
	if len(from) == 0 {
		return kafkaFields.Flags(c.Validate(), fs.Name)
	}
	line := func(pr kafka.Property) string { return fmt.Sprintf("%s:%d", c.PropertiesFile, pr.Line) }
	byFlag := make(map[string]kafka.Property, len(from))
	for f, pr := range from {
		byFlag[kafkaFields[f]] = pr
	}
	ref := func(flag string) string {
		if pr, ok := byFlag[flag]; ok {
			return pr.Key + " (" + line(pr) + ")"
		}
		return fs.Name(flag)
	}
	inFile := field.Map(c.Validate(), func(e *field.Error) error {
		pr, ok := from[e.Field]
		if !ok {
			return e
		}
		return cli.Errorf("kafka-config", "%s: %s: %s", line(pr), pr.Key, e.Message(func(f string) string {
			if flag, ok := kafkaFields[f]; ok {
				return ref(flag)
			}
			return f
		}))
	})
	return kafkaFields.Flags(inFile, ref)
}

// applyKafkaConfig applies the file of --kafka-config to c, leaving the
// fields whose flag or environment variable was given, and returns the
// properties applied by field. The file's problems are problems of
// --kafka-config, one a line.
func applyKafkaConfig(fs *cli.FlagSet, c *kafka.Config) (map[string]kafka.Property, error) {
	if c.PropertiesFile == "" {
		return nil, nil
	}
	props, err := kafka.ReadProperties(c.PropertiesFile)
	if err != nil {
		var errs cli.Problems
		for _, e := range flatten(err) {
			errs.Add("kafka-config", "%w", e)
		}
		return nil, errs.Err()
	}
	keep := func(f string) bool { return fs.Source(kafkaFields[f]) != cli.SourceDefault }
	from := make(map[string]kafka.Property)
	for _, pr := range c.ApplyProperties(props, keep) {
		from[pr.Field] = pr
	}
	return from, nil
}

// flatten returns the errors err joins, or err.
func flatten(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// KafkaOpts returns c.Opts(), with a problem of c naming its flag.
func KafkaOpts(c *kafka.Config) ([]kgo.Opt, error) {
	opts, err := c.Opts()
	if err != nil {
		return nil, kafkaFields.Flags(err, nil)
	}
	return opts, nil
}

// NoAnswer says that the brokers of c did not answer within a command's
// --timeout, when err is that (ctx ended, or a read or dial timed out);
// else it returns err.
func NoAnswer(ctx context.Context, c *kafka.Config, err error, timeout time.Duration) error {
	if ctx.Err() == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("no answer from --brokers %s within --timeout %v: %w", strings.Join(c.Brokers, ","), timeout, err)
}
