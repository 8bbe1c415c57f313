package credential

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
)

// TLS is a TLS client configuration. The zero value means no TLS settings
// of ours: a closer then uses its driver's or URL's own (a Postgres DSN's
// sslmode, an https:// URL with the system roots).
type TLS struct {
	// CAFile is a PEM file of CA certificates to trust instead of the
	// system pool.
	CAFile string `yaml:"ca_file"`
	// CertFile is a PEM client certificate for mutual TLS; it needs KeyFile.
	CertFile string `yaml:"cert_file"`
	// KeyFile is the PEM private key of CertFile.
	KeyFile string `yaml:"key_file"`
	// ServerName overrides the name the server certificate is checked
	// against; default the host dialed.
	ServerName string `yaml:"server_name"`
	// InsecureSkipVerify disables certificate verification; for tests only.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
}

// IsZero reports whether no field is set.
func (t TLS) IsZero() bool { return t == TLS{} }

// Validate reports a key without a certificate (or the reverse) and
// unreadable or invalid files, naming the YAML key.
func (t TLS) Validate() []error {
	var errs []error
	if (t.CertFile == "") != (t.KeyFile == "") {
		errs = append(errs, errors.New("tls.cert_file and tls.key_file go together"))
	}
	if !t.IsZero() {
		if _, err := t.Config(); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// Config returns the *tls.Config; nil for the zero TLS.
func (t TLS) Config() (*tls.Config, error) {
	if t.IsZero() {
		return nil, nil
	}
	return t.Build()
}

// Build returns the *tls.Config of t, also for the zero TLS: TLS 1.2 or
// newer, the CA pool of CAFile or else the system pool, the client
// certificate when set. An empty ServerName is left empty (kgo.DialTLSConfig
// and net/http fill in the host dialed).
func (t TLS) Build() (*tls.Config, error) {
	tc := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         t.ServerName,
		InsecureSkipVerify: t.InsecureSkipVerify, //nolint:gosec // opt-in, for tests
	}
	if t.CAFile != "" {
		pool, err := LoadCAPool(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("tls.ca_file: %w", err)
		}
		tc.RootCAs = pool
	}
	if t.CertFile != "" && t.KeyFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("tls.cert_file, tls.key_file: %w", err)
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// LoadCAPool reads a PEM file of CA certificates into a pool.
func LoadCAPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s: no PEM certificate found", path)
	}
	return pool, nil
}
