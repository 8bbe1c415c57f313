package chstore

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/credential"
)

// Defaults of Config.
const (
	DefaultAddr        = "127.0.0.1:9000"
	DefaultDatabase    = "hourglass"
	DefaultUsername    = "default"
	DefaultDialTimeout = 5 * time.Second
)

// Flag names of Config's fields, as Validate names them; each has the
// environment fallback HOURGLASS_ followed by the name in upper case with -
// as _ (HOURGLASS_CLICKHOUSE_ADDR).
const (
	FlagAddr                  = "clickhouse-addr"
	FlagDatabase              = "clickhouse-database"
	FlagUsername              = "clickhouse-user"
	FlagPassword              = "clickhouse-password"
	FlagPasswordFile          = "clickhouse-password-file"
	FlagSecure                = "clickhouse-tls"
	FlagTLSCAFile             = "clickhouse-tls-ca-file"
	FlagTLSCertFile           = "clickhouse-tls-cert-file"
	FlagTLSKeyFile            = "clickhouse-tls-key-file"
	FlagTLSServerName         = "clickhouse-tls-server-name"
	FlagTLSInsecureSkipVerify = "clickhouse-tls-insecure-skip-verify"
	FlagDialTimeout           = "clickhouse-dial-timeout"
)

// Config is how to reach ClickHouse over its native protocol. Zero fields
// take the defaults named on them (see WithDefaults).
type Config struct {
	// Addr is the server's native protocol address, host:port; default
	// DefaultAddr (127.0.0.1:9000). --clickhouse-addr.
	Addr string `yaml:"addr"`
	// Database holds Hourglass's tables; Migrate creates it. Default
	// DefaultDatabase ("hourglass"). --clickhouse-database.
	Database string `yaml:"database"`
	// Username is the ClickHouse user; default DefaultUsername
	// ("default"). --clickhouse-user.
	Username string `yaml:"username"`
	// Password is the user's password; default none.
	// --clickhouse-password, --clickhouse-password-file.
	Password credential.Secret `yaml:"password"`
	// Secure connects with TLS (the server's tcp_port_secure, usually
	// 9440). It is implied by any TLS setting. Default false.
	// --clickhouse-tls.
	Secure bool `yaml:"secure"`
	// TLS are the TLS client settings; the zero value uses the system
	// roots. --clickhouse-tls-*.
	TLS credential.TLS `yaml:"tls"`
	// DialTimeout bounds connecting; default DefaultDialTimeout (5s).
	// --clickhouse-dial-timeout.
	DialTimeout time.Duration `yaml:"dial_timeout"`
}

// WithDefaults returns c with every zero field that has a default set to it.
func (c Config) WithDefaults() Config {
	if c.Addr == "" {
		c.Addr = DefaultAddr
	}
	if c.Database == "" {
		c.Database = DefaultDatabase
	}
	if c.Username == "" {
		c.Username = DefaultUsername
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	return c
}

// RegisterFlags registers every field of c as a --clickhouse-* flag on fs
// with its HOURGLASS_CLICKHOUSE_* environment fallback, storing the
// defaults into c. The password is taken inline (--clickhouse-password,
// better from the environment) or from a file (--clickhouse-password-file,
// re-read at each connection, so a rotated secret is picked up).
func (c *Config) RegisterFlags(fs *cli.FlagSet) {
	env := cli.Env
	fs.StringVar(&c.Addr, FlagAddr, env(FlagAddr), DefaultAddr, "ClickHouse native protocol `host:port`")
	fs.StringVar(&c.Database, FlagDatabase, env(FlagDatabase), DefaultDatabase, "ClickHouse `database` of Hourglass's tables")
	fs.StringVar(&c.Username, FlagUsername, env(FlagUsername), DefaultUsername, "ClickHouse `user`")
	fs.StringVar(&c.Password.Value, FlagPassword, env(FlagPassword), "",
		"ClickHouse `password`; prefer the environment variable or --"+FlagPasswordFile+": a flag shows in the process list")
	fs.StringVar(&c.Password.File, FlagPasswordFile, env(FlagPasswordFile), "",
		"`file` holding the ClickHouse password, e.g. a mounted secret; a trailing newline is trimmed")
	fs.BoolVar(&c.Secure, FlagSecure, env(FlagSecure), false,
		"connect to ClickHouse with TLS, usually on port 9440 (implied by any other --clickhouse-tls-* flag)")
	fs.StringVar(&c.TLS.CAFile, FlagTLSCAFile, env(FlagTLSCAFile), "", "PEM `file` of CA certificates to trust instead of the system pool")
	fs.StringVar(&c.TLS.CertFile, FlagTLSCertFile, env(FlagTLSCertFile), "", "PEM client certificate `file` (needs --"+FlagTLSKeyFile+")")
	fs.StringVar(&c.TLS.KeyFile, FlagTLSKeyFile, env(FlagTLSKeyFile), "", "PEM private key `file` of --"+FlagTLSCertFile)
	fs.StringVar(&c.TLS.ServerName, FlagTLSServerName, env(FlagTLSServerName), "", "`name` to verify the server certificate against (default: the host dialed)")
	fs.BoolVar(&c.TLS.InsecureSkipVerify, FlagTLSInsecureSkipVerify, env(FlagTLSInsecureSkipVerify), false, "do not verify the ClickHouse certificate (tests only)")
	fs.DurationVar(&c.DialTimeout, FlagDialTimeout, env(FlagDialTimeout), DefaultDialTimeout, "bound on connecting to ClickHouse")
}

// UsesTLS reports whether c connects with TLS: Secure, or any TLS setting.
func (c Config) UsesTLS() bool { return c.Secure || !c.TLS.IsZero() }

// identifier is what Database may be: it is written into statements.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every problem with c, naming the flag of each (see the
// Flag constants). Call it after WithDefaults: a zero field is reported.
func (c Config) Validate() []error {
	var errs []error
	bad := func(flag, format string, args ...any) {
		errs = append(errs, cli.Errorf(flag, format, args...))
	}
	if host, port, err := net.SplitHostPort(c.Addr); err != nil || host == "" {
		bad(FlagAddr, "%q: want host:port", c.Addr)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		bad(FlagAddr, "%q: bad port %q", c.Addr, port)
	}
	if !identifier.MatchString(c.Database) || len(c.Database) > 200 {
		bad(FlagDatabase, "%q is not an identifier (letters, digits and _, not starting with a digit)", c.Database)
	}
	if c.Username == "" {
		bad(FlagUsername, "must not be empty")
	}
	if err := c.Password.Validate(); err != nil {
		flag := FlagPassword
		if c.Password.File != "" {
			flag = FlagPasswordFile
		}
		bad(flag, "%v", err)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		if c.TLS.CertFile == "" {
			bad(FlagTLSKeyFile, "set without --%s", FlagTLSCertFile)
		} else {
			bad(FlagTLSCertFile, "set without --%s", FlagTLSKeyFile)
		}
	} else if !c.TLS.IsZero() {
		if _, err := c.TLS.Config(); err != nil {
			bad(tlsFlag(c.TLS), "%v", err)
		}
	}
	if c.DialTimeout <= 0 {
		bad(FlagDialTimeout, "%v: must be positive", c.DialTimeout)
	}
	return errs
}

// tlsFlag names the flag of the TLS file most likely at fault.
func tlsFlag(t credential.TLS) string {
	if t.CAFile != "" {
		return FlagTLSCAFile
	}
	return FlagTLSCertFile
}

// String describes c without its password.
func (c Config) String() string {
	return fmt.Sprintf("clickhouse://%s@%s/%s (tls %t, password %s)", c.Username, c.Addr, c.Database, c.UsesTLS(), c.Password)
}
