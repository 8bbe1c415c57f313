package chflags

import (
	"errors"
	"testing"

	"github.com/hourglass/hourglass/internal/chstore"
	"github.com/hourglass/hourglass/internal/cli"
	"github.com/hourglass/hourglass/internal/credential"
	"github.com/hourglass/hourglass/internal/field"
)

// TestEveryFieldNamed: every problem of a chstore.Config names a flag,
// none a Go field.
func TestEveryFieldNamed(t *testing.T) {
	for _, c := range []chstore.Config{
		{TLS: credential.TLS{CertFile: "/nonexistent/c"}},
		{Password: credential.Secret{File: "/nonexistent/p"}, TLS: credential.TLS{KeyFile: "/nonexistent/k"}},
		{Addr: "127.0.0.1:9000", Database: "d", Username: "u", DialTimeout: 1, TLS: credential.TLS{CAFile: "/nonexistent/ca"}},
	} {
		err := Check(c)
		if err == nil {
			t.Errorf("%+v: no problems", c)
			continue
		}
		var fe *field.Error
		if errors.As(err, &fe) {
			t.Errorf("a problem names the field %s, not its flag:\n%v", fe.Field, err)
		}
	}
}

// TestProblems: a ClickHouse problem names its flag and environment
// variable, and the other flag its message mentions.
func TestProblems(t *testing.T) {
	var c chstore.Config
	fs := cli.NewFlagSet("recorder", "")
	Register(fs, &c)
	if err := fs.Parse([]string{"--clickhouse-tls-key-file", "/k.pem", "--clickhouse-dial-timeout", "0s"}); err != nil {
		t.Fatal(err)
	}
	want := "--clickhouse-tls-key-file (HOURGLASS_CLICKHOUSE_TLS_KEY_FILE): set without --clickhouse-tls-cert-file\n" +
		"--clickhouse-dial-timeout (HOURGLASS_CLICKHOUSE_DIAL_TIMEOUT): 0s: must be positive"
	if err := fs.Explain(Check(c)); err == nil || err.Error() != want {
		t.Errorf("problems:\n%v\nwant:\n%s", err, want)
	}
}
