package chflags

import (
	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
)

// clickhouseFields are the flags of chstore.Config's fields.
var clickhouseFields = cli.Fields{
	"Addr":                   "clickhouse-addr",
	"Database":               "clickhouse-database",
	"Username":               "clickhouse-user",
	"Password":               "clickhouse-password",
	"Password.File":          "clickhouse-password-file",
	"Secure":                 "clickhouse-tls",
	"TLS.CAFile":             "clickhouse-tls-ca-file",
	"TLS.CertFile":           "clickhouse-tls-cert-file",
	"TLS.KeyFile":            "clickhouse-tls-key-file",
	"TLS.ServerName":         "clickhouse-tls-server-name",
	"TLS.InsecureSkipVerify": "clickhouse-tls-insecure-skip-verify",
	"DialTimeout":            "clickhouse-dial-timeout",
}

// Register registers every field of c as a --clickhouse-* flag on fs with
// its HOURGLASS_CLICKHOUSE_* environment variable, storing the defaults
// into c. The password is taken inline (--clickhouse-password, better from
// the environment) or from a file (--clickhouse-password-file).
func Register(fs *cli.FlagSet, c *chstore.Config) {
	env := cli.Env
	fs.StringVar(&c.Addr, "clickhouse-addr", env("clickhouse-addr"), chstore.DefaultAddr, "ClickHouse native protocol `host:port`")
	fs.StringVar(&c.Database, "clickhouse-database", env("clickhouse-database"), chstore.DefaultDatabase, "ClickHouse `database` of Hourglass's tables")
	fs.StringVar(&c.Username, "clickhouse-user", env("clickhouse-user"), chstore.DefaultUsername, "ClickHouse `user`")
	fs.StringVar(&c.Password.Value, "clickhouse-password", env("clickhouse-password"), "",
		"ClickHouse `password`; prefer the environment variable or --clickhouse-password-file: a flag shows in the process list")
	fs.StringVar(&c.Password.File, "clickhouse-password-file", env("clickhouse-password-file"), "",
		"`file` holding the ClickHouse password, e.g. a mounted secret; a trailing newline is trimmed")
	fs.BoolVar(&c.Secure, "clickhouse-tls", env("clickhouse-tls"), false,
		"connect to ClickHouse with TLS, usually on port 9440 (implied by any other --clickhouse-tls-* flag)")
	fs.StringVar(&c.TLS.CAFile, "clickhouse-tls-ca-file", env("clickhouse-tls-ca-file"), "", "PEM `file` of CA certificates to trust instead of the system pool")
	fs.StringVar(&c.TLS.CertFile, "clickhouse-tls-cert-file", env("clickhouse-tls-cert-file"), "", "PEM client certificate `file` (needs --clickhouse-tls-key-file)")
	fs.StringVar(&c.TLS.KeyFile, "clickhouse-tls-key-file", env("clickhouse-tls-key-file"), "", "PEM private key `file` of --clickhouse-tls-cert-file")
	fs.StringVar(&c.TLS.ServerName, "clickhouse-tls-server-name", env("clickhouse-tls-server-name"), "", "`name` to verify the server certificate against (default: the host dialed)")
	fs.BoolVar(&c.TLS.InsecureSkipVerify, "clickhouse-tls-insecure-skip-verify", env("clickhouse-tls-insecure-skip-verify"), false, "do not verify the ClickHouse certificate (tests only)")
	fs.DurationVar(&c.DialTimeout, "clickhouse-dial-timeout", env("clickhouse-dial-timeout"), chstore.DefaultDialTimeout, "bound on connecting to ClickHouse")
}

// Check returns the problems of c, each a *cli.FlagError of its
// flag. Call it after WithDefaults, as chstore.Config.Validate.
func Check(c chstore.Config) error {
	return clickhouseFields.Flags(c.Validate(), nil)
}
