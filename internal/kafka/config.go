package kafka

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/field"
)

// DefaultBrokers is the commands' default seed broker: a broker on this
// machine, such as a local kfake.
const DefaultBrokers = "127.0.0.1:9092"

// SASL mechanisms of Config.SASLMechanism, case-insensitively.
const (
	SASLPlain       = "plain"         // SASLPlain is SASL/PLAIN; use it only over TLS.
	SASLScramSHA256 = "scram-sha-256" // SASLScramSHA256 is SASL/SCRAM-SHA-256.
	SASLScramSHA512 = "scram-sha-512" // SASLScramSHA512 is SASL/SCRAM-SHA-512.
	// SASLOAuthBearer is SASL/OAUTHBEARER with the token of
	// Config.SASLOAuthTokenFile.
	SASLOAuthBearer = "oauthbearer"
	// SASLAWSMSKIAM is Amazon MSK's IAM authentication, signed with the AWS
	// credentials of the environment (EnvAWSAccessKeyID, ...); it needs TLS.
	SASLAWSMSKIAM = "aws_msk_iam"
)

// mechanisms lists the SASL mechanisms, as problems name them.
const mechanisms = SASLPlain + ", " + SASLScramSHA256 + ", " + SASLScramSHA512 + ", " + SASLOAuthBearer + " or " + SASLAWSMSKIAM

// Config is the connection configuration shared by every Hourglass command.
//
// The zero value connects to no broker. A Config with only Brokers set
// connects in plaintext without SASL.
type Config struct {
	// Brokers are the seed brokers, host:port; at least one. The commands'
	// default is DefaultBrokers.
	Brokers []string
	// ClientID is the Kafka client ID, seen in broker logs and quotas;
	// default "", kgo's own.
	ClientID string

	// TLS enables TLS. It is implied by any other TLS field. Default false.
	TLS bool
	// TLSCAFile is a PEM file of CA certificates to trust instead of the
	// system pool; default "", the system pool.
	TLSCAFile string
	// TLSCertFile is a PEM client certificate for mutual TLS; it needs
	// TLSKeyFile. Default "".
	TLSCertFile string
	// TLSKeyFile is the PEM private key of TLSCertFile; default "".
	TLSKeyFile string
	// TLSServerName overrides the name the broker certificate is checked
	// against; default "", the host of each broker dialed.
	TLSServerName string
	// TLSInsecureSkipVerify disables broker certificate verification; for
	// tests only. Default false.
	TLSInsecureSkipVerify bool

	// SASLMechanism is "" (no SASL), plain, scram-sha-256, scram-sha-512,
	// oauthbearer or aws_msk_iam, case-insensitive; default "". PLAIN and
	// SCRAM take SASLUser and a password; OAUTHBEARER takes
	// SASLOAuthTokenFile; AWS_MSK_IAM takes TLS and the AWS credentials of
	// the environment.
	SASLMechanism string
	// SASLUser is the SASL user name of PLAIN and SCRAM; default "".
	SASLUser string
	// SASLPassword is the SASL password; default "". Give it or
	// SASLPasswordFile, not both.
	SASLPassword string
	// SASLPasswordFile is a file holding the SASL password, such as a
	// mounted Kubernetes secret; a trailing newline is trimmed. Default "".
	SASLPasswordFile string
	// SASLOAuthTokenFile is the file holding the OAUTHBEARER token, read at
	// each authentication so that a token refreshed in place is picked up;
	// surrounding white space is trimmed. Required with oauthbearer; default
	// "".
	SASLOAuthTokenFile string

	// PropertiesFile is a client properties file (ReadProperties) that a
	// command applies to the Config under its own flags, with
	// ApplyProperties, before it validates the Config. Validate and Opts do
	// not read it. Default "": none.
	PropertiesFile string
}

// TLSEnabled reports whether c connects with TLS: TLS is set, or any other
// TLS field is.
func (c *Config) TLSEnabled() bool {
	return c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" ||
		c.TLSServerName != "" || c.TLSInsecureSkipVerify
}

// Validate reports every problem with c, each a *field.Error naming the
// field: no brokers, a broker that is not host:port, an unknown SASL
// mechanism, SASL without the credentials of its mechanism (a user and a
// password, a token file, TLS and the AWS environment), credentials of
// another mechanism or without one, both a password and a password file, a
// certificate without a key or a key without a certificate, and files that
// cannot be read or parsed (the OAUTHBEARER token file is read at each
// authentication instead). It returns nil if c is valid.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, field.Errorf("Brokers", "no brokers given"))
	}
	for _, b := range c.Brokers {
		if err := checkHostPort(b); err != nil {
			errs = append(errs, field.Errorf("Brokers", "broker %q is not host:port: %v", b, err))
		}
	}
	errs = append(errs, c.checkTLS()...)
	errs = append(errs, c.checkSASL()...)
	return errors.Join(errs...)
}

// checkTLS checks that the TLS files are given in pairs and load.
func (c *Config) checkTLS() []error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if c.TLSCertFile != "" && c.TLSKeyFile == "" {
		bad("TLSCertFile", "set without %s", field.Ref("TLSKeyFile"))
	}
	if c.TLSKeyFile != "" && c.TLSCertFile == "" {
		bad("TLSKeyFile", "set without %s", field.Ref("TLSCertFile"))
	}
	if c.TLSCAFile != "" {
		if _, err := credential.LoadCAPool(c.TLSCAFile); err != nil {
			bad("TLSCAFile", "%v", err)
		}
	}
	certErr, keyErr := readable(c.TLSCertFile), readable(c.TLSKeyFile)
	if certErr != nil {
		bad("TLSCertFile", "%v", certErr)
	}
	if keyErr != nil {
		bad("TLSKeyFile", "%v", keyErr)
	}
	if c.TLSCertFile != "" && c.TLSKeyFile != "" && certErr == nil && keyErr == nil {
		if _, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			bad("TLSCertFile", "with %s: %v", field.Ref("TLSKeyFile"), err)
		}
	}
	return errs
}

// checkSASL checks the mechanism and its credentials.
func (c *Config) checkSASL() []error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	mech := strings.ToLower(c.SASLMechanism)
	passwords := []struct{ field, v string }{
		{"SASLUser", c.SASLUser}, {"SASLPassword", c.SASLPassword}, {"SASLPasswordFile", c.SASLPasswordFile},
	}
	switch mech {
	case "":
		for _, f := range append(passwords, struct{ field, v string }{"SASLOAuthTokenFile", c.SASLOAuthTokenFile}) {
			if f.v != "" {
				bad(f.field, "set, but %s is empty", field.Ref("SASLMechanism"))
			}
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if c.SASLUser == "" {
			bad("SASLUser", "required with %s %s", field.Ref("SASLMechanism"), mech)
		}
		if c.SASLPassword == "" && c.SASLPasswordFile == "" {
			bad("SASLPassword", "required with %s %s (or set %s)", field.Ref("SASLMechanism"), mech, field.Ref("SASLPasswordFile"))
		}
	case SASLOAuthBearer, SASLAWSMSKIAM:
		for _, f := range passwords {
			if f.v != "" {
				bad(f.field, "not used with %s %s", field.Ref("SASLMechanism"), mech)
			}
		}
		errs = append(errs, c.checkTokenSASL(mech)...)
	default:
		bad("SASLMechanism", "unknown mechanism %q: want %s", c.SASLMechanism, mechanisms)
	}
	if mech != "" && mech != SASLOAuthBearer && c.SASLOAuthTokenFile != "" {
		bad("SASLOAuthTokenFile", "set, but %s is %s, not %s", field.Ref("SASLMechanism"), mech, SASLOAuthBearer)
	}
	if c.SASLPassword != "" && c.SASLPasswordFile != "" {
		bad("SASLPassword", "set together with %s: give one", field.Ref("SASLPasswordFile"))
	}
	if c.SASLPasswordFile != "" {
		if _, err := readPasswordFile(c.SASLPasswordFile); err != nil {
			bad("SASLPasswordFile", "%v", err)
		}
	}
	return errs
}

// checkTokenSASL checks what OAUTHBEARER and AWS_MSK_IAM need at start. The
// token file is only required, not read: a sidecar may write it after the
// command starts, and each authentication reads it.
func (c *Config) checkTokenSASL(mech string) []error {
	var errs []error
	switch mech {
	case SASLOAuthBearer:
		if c.SASLOAuthTokenFile == "" {
			errs = append(errs, field.Errorf("SASLOAuthTokenFile", "required with %s %s", field.Ref("SASLMechanism"), mech))
		}
	case SASLAWSMSKIAM:
		if !c.TLSEnabled() {
			errs = append(errs, field.Errorf("TLS", "required with %s %s: MSK serves IAM authentication on TLS listeners only", field.Ref("SASLMechanism"), mech))
		}
		if err := checkAWSEnv(); err != nil {
			errs = append(errs, field.Errorf("SASLMechanism", "%s signs with the AWS credentials of the environment: %v", mech, err))
		}
	}
	return errs
}

// Opts returns the kgo options that connect as c describes: kgo.SeedBrokers,
// kgo.ClientID (when set), kgo.DialTLSConfig when TLS is enabled (TLS 1.2 or
// newer, the CA pool of TLSCAFile or else the system pool, the client
// certificate) and kgo.SASL when a mechanism is set. It reads the files
// named by c, and returns Validate's problems if c is invalid.
func (c *Config) Opts() ([]kgo.Opt, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	opts := []kgo.Opt{kgo.SeedBrokers(c.Brokers...)}
	if c.ClientID != "" {
		opts = append(opts, kgo.ClientID(c.ClientID))
	}
	if c.TLSEnabled() {
		tc, err := c.tlsConfig()
		if err != nil {
			return nil, err
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	mech, err := c.mechanism()
	if err != nil {
		return nil, err
	}
	if mech != nil {
		opts = append(opts, kgo.SASL(mech))
	}
	return opts, nil
}

// clientTimeout is franz-go's own dial timeout and request timeout
// overhead (10 s each by default), which a shorter command timeout
// replaces.
const clientTimeout = 10 * time.Second

// TimeoutOpts returns the options that bound the client's own dial and
// read timeouts by a command's timeout: a context does not shorten them.
func TimeoutOpts(timeout time.Duration) []kgo.Opt {
	bound := min(timeout, clientTimeout)
	return []kgo.Opt{kgo.DialTimeout(bound), kgo.RequestTimeoutOverhead(bound)}
}

// tlsConfig builds the TLS settings; Opts has validated the files. An empty
// TLSServerName leaves kgo.DialTLSConfig to use each broker's host.
func (c *Config) tlsConfig() (*tls.Config, error) {
	return credential.TLS{
		CAFile: c.TLSCAFile, CertFile: c.TLSCertFile, KeyFile: c.TLSKeyFile,
		ServerName: c.TLSServerName, InsecureSkipVerify: c.TLSInsecureSkipVerify,
	}.Build()
}

func checkHostPort(b string) error {
	host, port, err := net.SplitHostPort(b)
	if err != nil {
		return err
	}
	if host == "" {
		return errors.New("empty host")
	}
	if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		return fmt.Errorf("bad port %q", port)
	}
	return nil
}

// readable returns why path cannot be opened for reading; nil for "".
func readable(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	return f.Close()
}

func readPasswordFile(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	p := strings.TrimRight(string(b), "\r\n")
	if p == "" {
		return "", fmt.Errorf("%s: empty", path)
	}
	return p, nil
}
