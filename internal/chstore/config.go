package chstore

import (
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/field"
)

// Defaults of Config.
const (
	DefaultAddr        = "127.0.0.1:9000"
	DefaultDatabase    = "hourglass"
	DefaultUsername    = "default"
	DefaultDialTimeout = 5 * time.Second
)

// Config is how to reach ClickHouse over its native protocol. Zero fields
// take the defaults named on them (see WithDefaults).
type Config struct {
	// Addr is the server's native protocol address, host:port; default
	// DefaultAddr (127.0.0.1:9000).
	Addr string `yaml:"addr"`
	// Database holds Hourglass's tables; Migrate creates it. Default
	// DefaultDatabase ("hourglass").
	Database string `yaml:"database"`
	// Username is the ClickHouse user; default DefaultUsername
	// ("default").
	Username string `yaml:"username"`
	// Password is the user's password, inline or from a file that is read
	// again at each connection, so that a rotated secret is picked up;
	// default none.
	Password credential.Secret `yaml:"password"`
	// Secure connects with TLS (the server's tcp_port_secure, usually
	// 9440). It is implied by any TLS setting. Default false.
	Secure bool `yaml:"secure"`
	// TLS are the TLS client settings; the zero value uses the system
	// roots.
	TLS credential.TLS `yaml:"tls"`
	// DialTimeout bounds connecting; default DefaultDialTimeout (5s).
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

// UsesTLS reports whether c connects with TLS: Secure, or any TLS setting.
func (c Config) UsesTLS() bool { return c.Secure || !c.TLS.IsZero() }

// identifier is what Database may be: it is written into statements.
var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate reports every problem with c, each a *field.Error naming the
// field (Addr, Password.File, TLS.CertFile, ...). Call it after
// WithDefaults: a zero field is reported.
func (c Config) Validate() error {
	var errs []error
	bad := func(f, format string, args ...any) { errs = append(errs, field.Errorf(f, format, args...)) }
	if host, port, err := net.SplitHostPort(c.Addr); err != nil || host == "" {
		bad("Addr", "%q: want host:port", c.Addr)
	} else if n, err := strconv.ParseUint(port, 10, 16); err != nil || n == 0 {
		bad("Addr", "%q: bad port %q", c.Addr, port)
	}
	if !identifier.MatchString(c.Database) || len(c.Database) > 200 {
		bad("Database", "%q is not an identifier (letters, digits and _, not starting with a digit)", c.Database)
	}
	if c.Username == "" {
		bad("Username", "must not be empty")
	}
	if err := c.Password.Validate(); err != nil {
		f := "Password"
		if c.Password.File != "" {
			f = "Password.File"
		}
		bad(f, "%v", err)
	}
	if (c.TLS.CertFile == "") != (c.TLS.KeyFile == "") {
		if c.TLS.CertFile == "" {
			bad("TLS.KeyFile", "set without %s", field.Ref("TLS.CertFile"))
		} else {
			bad("TLS.CertFile", "set without %s", field.Ref("TLS.KeyFile"))
		}
	} else if !c.TLS.IsZero() {
		if _, err := c.TLS.Config(); err != nil {
			bad(tlsField(c.TLS), "%v", err)
		}
	}
	if c.DialTimeout <= 0 {
		bad("DialTimeout", "%v: must be positive", c.DialTimeout)
	}
	return errors.Join(errs...)
}

// tlsField names the field of the TLS file most likely at fault.
func tlsField(t credential.TLS) string {
	if t.CAFile != "" {
		return "TLS.CAFile"
	}
	return "TLS.CertFile"
}

// String describes c without its password.
func (c Config) String() string {
	return fmt.Sprintf("clickhouse://%s@%s/%s (tls %t, password %s)", c.Username, c.Addr, c.Database, c.UsesTLS(), c.Password)
}
