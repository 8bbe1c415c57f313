package kafka

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/credential"
)

// DefaultBrokers is the default of --brokers: a broker on this machine, such
// as a local kfake.
const DefaultBrokers = "127.0.0.1:9092"

// SASL mechanisms accepted by --sasl-mechanism, case-insensitively.
const (
	SASLPlain       = "plain"         // SASLPlain is SASL/PLAIN; use it only over TLS.
	SASLScramSHA256 = "scram-sha-256" // SASLScramSHA256 is SASL/SCRAM-SHA-256.
	SASLScramSHA512 = "scram-sha-512" // SASLScramSHA512 is SASL/SCRAM-SHA-512.
)

// Flag names registered by RegisterFlags. Each has the environment fallback
// HOURGLASS_ followed by the name upper-cased with - as _, e.g.
// HOURGLASS_TLS_CA_FILE.
const (
	FlagBrokers               = "brokers"
	FlagClientID              = "client-id"
	FlagTLS                   = "tls"
	FlagTLSCAFile             = "tls-ca-file"
	FlagTLSCertFile           = "tls-cert-file"
	FlagTLSKeyFile            = "tls-key-file"
	FlagTLSServerName         = "tls-server-name"
	FlagTLSInsecureSkipVerify = "tls-insecure-skip-verify"
	FlagSASLMechanism         = "sasl-mechanism"
	FlagSASLUser              = "sasl-user"
	FlagSASLPassword          = "sasl-password"
	FlagSASLPasswordFile      = "sasl-password-file"
)

// Config is the connection configuration shared by every Hourglass command.
//
// The zero value connects to no broker; RegisterFlags sets the defaults. A
// Config with only Brokers set connects in plaintext without SASL.
type Config struct {
	// Brokers are the seed brokers, host:port. --brokers,
	// HOURGLASS_BROKERS; default DefaultBrokers (127.0.0.1:9092).
	Brokers []string
	// ClientID is the Kafka client ID, seen in broker logs and quotas.
	// --client-id, HOURGLASS_CLIENT_ID; the default is set by the caller
	// of RegisterFlags. Empty leaves kgo's default (kgo).
	ClientID string

	// TLS enables TLS. It is implied by any other TLS field. --tls,
	// HOURGLASS_TLS; default false.
	TLS bool
	// TLSCAFile is a PEM file of CA certificates to trust instead of the
	// system pool. --tls-ca-file, HOURGLASS_TLS_CA_FILE; default "" (the
	// system pool).
	TLSCAFile string
	// TLSCertFile is a PEM client certificate for mutual TLS; it needs
	// TLSKeyFile. --tls-cert-file, HOURGLASS_TLS_CERT_FILE; default "".
	TLSCertFile string
	// TLSKeyFile is the PEM private key of TLSCertFile. --tls-key-file,
	// HOURGLASS_TLS_KEY_FILE; default "".
	TLSKeyFile string
	// TLSServerName overrides the name the broker certificate is checked
	// against. --tls-server-name, HOURGLASS_TLS_SERVER_NAME; default "" (the
	// host of each broker dialed).
	TLSServerName string
	// TLSInsecureSkipVerify disables broker certificate verification; for
	// tests only. --tls-insecure-skip-verify,
	// HOURGLASS_TLS_INSECURE_SKIP_VERIFY; default false.
	TLSInsecureSkipVerify bool

	// SASLMechanism is "" (no SASL), plain, scram-sha-256 or scram-sha-512,
	// case-insensitive. --sasl-mechanism, HOURGLASS_SASL_MECHANISM; default "".
	SASLMechanism string
	// SASLUser is the SASL user name. --sasl-user, HOURGLASS_SASL_USER;
	// default "".
	SASLUser string
	// SASLPassword is the SASL password. --sasl-password,
	// HOURGLASS_SASL_PASSWORD; default "". Prefer the environment or
	// SASLPasswordFile: a flag shows in the process list.
	SASLPassword string
	// SASLPasswordFile is a file holding the SASL password, such as a
	// mounted Kubernetes secret; a trailing newline is trimmed.
	// --sasl-password-file, HOURGLASS_SASL_PASSWORD_FILE; default "".
	SASLPasswordFile string
}

// RegisterFlags registers every field of c as a flag on fs with its
// HOURGLASS_* environment fallback, storing defaults into c. clientID is the
// default of --client-id, typically the command name.
func (c *Config) RegisterFlags(fs *cli.FlagSet, clientID string) {
	env := cli.Env
	fs.StringsVar(&c.Brokers, FlagBrokers, env(FlagBrokers), []string{DefaultBrokers},
		"Kafka seed brokers, comma-separated `host:port,...`")
	fs.StringVar(&c.ClientID, FlagClientID, env(FlagClientID), clientID,
		"Kafka client ID, seen in broker logs and quotas")
	fs.BoolVar(&c.TLS, FlagTLS, env(FlagTLS), false,
		"connect to the brokers with TLS (implied by any other --tls-* flag)")
	fs.StringVar(&c.TLSCAFile, FlagTLSCAFile, env(FlagTLSCAFile), "",
		"PEM `file` of CA certificates to trust instead of the system pool")
	fs.StringVar(&c.TLSCertFile, FlagTLSCertFile, env(FlagTLSCertFile), "",
		"PEM client certificate `file` for mutual TLS (needs --tls-key-file)")
	fs.StringVar(&c.TLSKeyFile, FlagTLSKeyFile, env(FlagTLSKeyFile), "",
		"PEM private key `file` of --tls-cert-file")
	fs.StringVar(&c.TLSServerName, FlagTLSServerName, env(FlagTLSServerName), "",
		"`name` to verify the broker certificates against (default: the host dialed)")
	fs.BoolVar(&c.TLSInsecureSkipVerify, FlagTLSInsecureSkipVerify, env(FlagTLSInsecureSkipVerify), false,
		"do not verify broker certificates (tests only)")
	fs.StringVar(&c.SASLMechanism, FlagSASLMechanism, env(FlagSASLMechanism), "",
		"SASL `mechanism`: plain, scram-sha-256 or scram-sha-512 (default: no SASL)")
	fs.StringVar(&c.SASLUser, FlagSASLUser, env(FlagSASLUser), "",
		"SASL `user`")
	fs.StringVar(&c.SASLPassword, FlagSASLPassword, env(FlagSASLPassword), "",
		"SASL `password`; prefer the environment variable or --sasl-password-file")
	fs.StringVar(&c.SASLPasswordFile, FlagSASLPasswordFile, env(FlagSASLPasswordFile), "",
		"`file` holding the SASL password, e.g. a mounted secret; a trailing newline is trimmed")
}

// TLSEnabled reports whether c connects with TLS: TLS is set, or any other
// TLS field is.
func (c *Config) TLSEnabled() bool {
	return c.TLS || c.TLSCAFile != "" || c.TLSCertFile != "" || c.TLSKeyFile != "" ||
		c.TLSServerName != "" || c.TLSInsecureSkipVerify
}

// Validate returns every problem with c, each naming the flag and its
// environment variable through fs.Name (fs may be nil, which names the flag
// only): no brokers, a broker that is not host:port, an unknown SASL
// mechanism, SASL without a user or password, SASL credentials without a
// mechanism, both a password and a password file, a certificate without a
// key or a key without a certificate, and files that cannot be read or
// parsed. It returns nil if c is valid.
func (c *Config) Validate(fs *cli.FlagSet) []error {
	name := func(flag string) string {
		if fs == nil {
			return "--" + flag
		}
		return fs.Name(flag)
	}
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", name(flag), fmt.Sprintf(format, args...)))
	}

	if len(c.Brokers) == 0 {
		bad(FlagBrokers, "no brokers given")
	}
	for _, b := range c.Brokers {
		if err := checkHostPort(b); err != nil {
			bad(FlagBrokers, "broker %q is not host:port: %v", b, err)
		}
	}

	c.checkTLS(name, bad)
	c.checkSASL(name, bad)
	return errs
}

// checkTLS checks that the TLS files are given in pairs and load.
func (c *Config) checkTLS(name func(string) string, bad func(flag, format string, args ...any)) {
	if c.TLSCertFile != "" && c.TLSKeyFile == "" {
		bad(FlagTLSCertFile, "set without %s", name(FlagTLSKeyFile))
	}
	if c.TLSKeyFile != "" && c.TLSCertFile == "" {
		bad(FlagTLSKeyFile, "set without %s", name(FlagTLSCertFile))
	}
	if c.TLSCAFile != "" {
		if _, err := credential.LoadCAPool(c.TLSCAFile); err != nil {
			bad(FlagTLSCAFile, "%v", err)
		}
	}
	certErr, keyErr := readable(c.TLSCertFile), readable(c.TLSKeyFile)
	if certErr != nil {
		bad(FlagTLSCertFile, "%v", certErr)
	}
	if keyErr != nil {
		bad(FlagTLSKeyFile, "%v", keyErr)
	}
	if c.TLSCertFile != "" && c.TLSKeyFile != "" && certErr == nil && keyErr == nil {
		if _, err := tls.LoadX509KeyPair(c.TLSCertFile, c.TLSKeyFile); err != nil {
			bad(FlagTLSCertFile, "with %s: %v", name(FlagTLSKeyFile), err)
		}
	}
}

// checkSASL checks the mechanism and its credentials.
func (c *Config) checkSASL(name func(string) string, bad func(flag, format string, args ...any)) {
	mech := strings.ToLower(c.SASLMechanism)
	switch mech {
	case "":
		for _, f := range []struct{ flag, v string }{
			{FlagSASLUser, c.SASLUser}, {FlagSASLPassword, c.SASLPassword}, {FlagSASLPasswordFile, c.SASLPasswordFile},
		} {
			if f.v != "" {
				bad(f.flag, "set, but %s is empty", name(FlagSASLMechanism))
			}
		}
	case SASLPlain, SASLScramSHA256, SASLScramSHA512:
		if c.SASLUser == "" {
			bad(FlagSASLUser, "required with %s %s", name(FlagSASLMechanism), mech)
		}
		if c.SASLPassword == "" && c.SASLPasswordFile == "" {
			bad(FlagSASLPassword, "required with %s %s (or set %s)", name(FlagSASLMechanism), mech, name(FlagSASLPasswordFile))
		}
	default:
		bad(FlagSASLMechanism, "unknown mechanism %q: want %s, %s or %s", c.SASLMechanism, SASLPlain, SASLScramSHA256, SASLScramSHA512)
	}
	if c.SASLPassword != "" && c.SASLPasswordFile != "" {
		bad(FlagSASLPassword, "set together with %s: give one", name(FlagSASLPasswordFile))
	}
	if c.SASLPasswordFile != "" {
		if _, err := readPasswordFile(c.SASLPasswordFile); err != nil {
			bad(FlagSASLPasswordFile, "%v", err)
		}
	}
}

// Opts returns the kgo options that connect as c describes: kgo.SeedBrokers,
// kgo.ClientID (when set), kgo.DialTLSConfig when TLS is enabled (TLS 1.2 or
// newer, the CA pool of TLSCAFile or else the system pool, the client
// certificate) and kgo.SASL when a mechanism is set. It reads the files
// named by c, and returns Validate's problems, joined, if c is invalid.
func (c *Config) Opts() ([]kgo.Opt, error) {
	if errs := c.Validate(nil); len(errs) > 0 {
		return nil, errors.Join(errs...)
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
	if c.SASLMechanism != "" {
		pass := c.SASLPassword
		if c.SASLPasswordFile != "" {
			p, err := readPasswordFile(c.SASLPasswordFile)
			if err != nil {
				return nil, fmt.Errorf("--%s: %w", FlagSASLPasswordFile, err)
			}
			pass = p
		}
		switch strings.ToLower(c.SASLMechanism) {
		case SASLPlain:
			opts = append(opts, kgo.SASL(plain.Auth{User: c.SASLUser, Pass: pass}.AsMechanism()))
		case SASLScramSHA256:
			opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: pass}.AsSha256Mechanism()))
		case SASLScramSHA512:
			opts = append(opts, kgo.SASL(scram.Auth{User: c.SASLUser, Pass: pass}.AsSha512Mechanism()))
		}
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

// NoAnswer says that the brokers of c did not answer within a command's
// --timeout, when err is that (ctx ended, or a read or dial timed out);
// else it returns err.
func (c *Config) NoAnswer(ctx context.Context, err error, timeout time.Duration) error {
	if ctx.Err() == nil && !errors.Is(err, os.ErrDeadlineExceeded) {
		return err
	}
	return fmt.Errorf("no answer from --%s %s within --timeout %v: %w", FlagBrokers, strings.Join(c.Brokers, ","), timeout, err)
}

// tlsConfig builds the TLS settings; Opts has validated the files. An empty
// --tls-server-name leaves kgo.DialTLSConfig to use each broker's host.
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
