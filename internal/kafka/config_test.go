package kafka

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pki is a throwaway CA with a server and a client certificate, as PEM files.
type pki struct {
	dir                           string
	caFile, otherCAFile           string // PEM CA certificates
	caPool                        *x509.CertPool
	serverCert                    tls.Certificate // for 127.0.0.1 and localhost
	clientCertFile, clientKeyFile string
	mismatchedKeyFile             string // the server's key: not the client cert's
	notCertFile                   string // a file with no PEM block
	passwordFile                  string // "pass\n"
	emptyFile                     string // "\n"
	missingFile                   string // does not exist
}

func newPKI(t *testing.T) *pki {
	t.Helper()
	dir := t.TempDir()
	p := &pki{dir: dir}
	write := func(name string, data []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	newKey := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	keyPEM := func(k *ecdsa.PrivateKey) []byte {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	}
	certPEM := func(der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}) }
	now := time.Now()
	newCA := func(cn string) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber:          big.NewInt(1),
			Subject:               pkix.Name{CommonName: cn},
			NotBefore:             now.Add(-time.Hour),
			NotAfter:              now.Add(time.Hour),
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.PublicKey, k)
		if err != nil {
			t.Fatal(err)
		}
		cert, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		return cert, k, certPEM(der)
	}
	ca, caKey, caPEM := newCA("hourglass test CA")
	_, _, otherPEM := newCA("some other CA")
	p.caFile, p.otherCAFile = write("ca.pem", caPEM), write("other-ca.pem", otherPEM)
	p.caPool = x509.NewCertPool()
	p.caPool.AddCert(ca)

	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) ([]byte, []byte) {
		k := newKey()
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			DNSNames:     []string{"localhost"},
			IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return certPEM(der), keyPEM(k)
	}
	serverCert, serverKey := leaf(2, "kfake", x509.ExtKeyUsageServerAuth)
	var err error
	if p.serverCert, err = tls.X509KeyPair(serverCert, serverKey); err != nil {
		t.Fatal(err)
	}
	clientCert, clientKey := leaf(3, "hourglass", x509.ExtKeyUsageClientAuth)
	p.clientCertFile, p.clientKeyFile = write("client.pem", clientCert), write("client-key.pem", clientKey)
	p.mismatchedKeyFile = write("server-key.pem", serverKey)
	p.notCertFile = write("not-a-cert.pem", []byte("hello\n"))
	p.passwordFile = write("password", []byte("pass\n"))
	p.emptyFile = write("empty", []byte("\n"))
	p.missingFile = filepath.Join(dir, "does-not-exist")
	return p
}

func TestValidate(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	base := func() Config { return Config{Brokers: []string{DefaultBrokers}, ClientID: "test"} }
	tests := []struct {
		name   string
		modify func(*Config)
		want   []string // one substring per expected error, in order
	}{
		{"default is valid", func(*Config) {}, nil},
		{"several brokers, names and IPv6", func(c *Config) { c.Brokers = []string{"kafka-0.kafka:9092", "[::1]:9093", "10.0.0.1:19092"} }, nil},
		{"no brokers", func(c *Config) { c.Brokers = nil }, []string{"Brokers: no brokers given"}},
		{"broker without port", func(c *Config) { c.Brokers = []string{"kafka", "ok:1"} }, []string{`Brokers: broker "kafka" is not host:port`}},
		{"broker without host", func(c *Config) { c.Brokers = []string{":9092"} }, []string{`broker ":9092" is not host:port: empty host`}},
		{"broker bad port", func(c *Config) { c.Brokers = []string{"k:http", "k:0", "k:70000"} }, []string{`"k:http"`, `"k:0"`, `"k:70000"`}},
		{"tls with CA and client cert", func(c *Config) {
			c.TLSCAFile, c.TLSCertFile, c.TLSKeyFile, c.TLSServerName = p.caFile, p.clientCertFile, p.clientKeyFile, "kafka"
		}, nil},
		{"cert without key", func(c *Config) { c.TLSCertFile = p.clientCertFile }, []string{"TLSCertFile: set without TLSKeyFile"}},
		{"key without cert", func(c *Config) { c.TLSKeyFile = p.clientKeyFile }, []string{"TLSKeyFile: set without TLSCertFile"}},
		{"unreadable CA", func(c *Config) { c.TLSCAFile = p.missingFile }, []string{"TLSCAFile: open " + p.missingFile}},
		{"CA file without a certificate", func(c *Config) { c.TLSCAFile = p.notCertFile }, []string{"TLSCAFile: " + p.notCertFile + ": no PEM certificate found"}},
		{"unreadable cert and key", func(c *Config) { c.TLSCertFile, c.TLSKeyFile = p.missingFile, p.dir+"/nope" }, []string{"TLSCertFile: open", "TLSKeyFile: open"}},
		{"key does not match cert", func(c *Config) { c.TLSCertFile, c.TLSKeyFile = p.clientCertFile, p.mismatchedKeyFile }, []string{"TLSCertFile: with TLSKeyFile: tls: private key does not match public key"}},
		{"sasl scram with password", func(c *Config) { c.SASLMechanism, c.SASLUser, c.SASLPassword = "scram-sha-512", "u", "p" }, nil},
		{"sasl mechanism case-insensitive, password file", func(c *Config) { c.SASLMechanism, c.SASLUser, c.SASLPasswordFile = "PLAIN", "u", p.passwordFile }, nil},
		{"unknown mechanism", func(c *Config) { c.SASLMechanism, c.SASLUser, c.SASLPassword = "gssapi", "u", "p" }, []string{`SASLMechanism: unknown mechanism "gssapi": want plain, scram-sha-256, scram-sha-512, oauthbearer or aws_msk_iam`}},
		{"oauthbearer, token file not read", func(c *Config) { c.SASLMechanism, c.SASLOAuthTokenFile = "OAUTHBEARER", p.missingFile }, nil},
		{"oauthbearer without token file", func(c *Config) { c.SASLMechanism = "oauthbearer" }, []string{"SASLOAuthTokenFile: required with SASLMechanism oauthbearer"}},
		{"oauthbearer with a user and password", func(c *Config) {
			c.SASLMechanism, c.SASLOAuthTokenFile, c.SASLUser, c.SASLPassword = "oauthbearer", p.passwordFile, "u", "p"
		}, []string{"SASLUser: not used with SASLMechanism oauthbearer", "SASLPassword: not used with SASLMechanism oauthbearer"}},
		{"token file with scram", func(c *Config) {
			c.SASLMechanism, c.SASLUser, c.SASLPassword, c.SASLOAuthTokenFile = "scram-sha-512", "u", "p", p.passwordFile
		}, []string{"SASLOAuthTokenFile: set, but SASLMechanism is scram-sha-512, not oauthbearer"}},
		{"token file without mechanism", func(c *Config) { c.SASLOAuthTokenFile = p.passwordFile }, []string{"SASLOAuthTokenFile: set, but SASLMechanism is empty"}},
		{"sasl without user or password", func(c *Config) { c.SASLMechanism = "scram-sha-256" }, []string{
			"SASLUser: required with SASLMechanism scram-sha-256",
			"SASLPassword: required with SASLMechanism scram-sha-256 (or set SASLPasswordFile)",
		}},
		{"password and password file", func(c *Config) {
			c.SASLMechanism, c.SASLUser, c.SASLPassword, c.SASLPasswordFile = "plain", "u", "p", p.passwordFile
		}, []string{"SASLPassword: set together with SASLPasswordFile: give one"}},
		{"unreadable password file", func(c *Config) { c.SASLMechanism, c.SASLUser, c.SASLPasswordFile = "plain", "u", p.missingFile }, []string{"SASLPasswordFile: open"}},
		{"empty password file", func(c *Config) { c.SASLMechanism, c.SASLUser, c.SASLPasswordFile = "plain", "u", p.emptyFile }, []string{"SASLPasswordFile: " + p.emptyFile + ": empty"}},
		{"credentials without mechanism", func(c *Config) { c.SASLUser, c.SASLPassword = "u", "p" }, []string{
			"SASLUser: set, but SASLMechanism is empty",
			"SASLPassword: set, but SASLMechanism",
		}},
		{"everything wrong at once", func(c *Config) {
			c.Brokers = nil
			c.TLSCertFile = p.missingFile
			c.SASLMechanism = "nope"
		}, []string{"Brokers", "TLSCertFile: set without", "TLSCertFile: open", "SASLMechanism"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := base()
			tt.modify(&c)
			errs := joined(c.Validate())
			if len(errs) != len(tt.want) {
				t.Fatalf("Validate = %d errors %q, want %d: %q", len(errs), errs, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				if !strings.Contains(errs[i].Error(), w) {
					t.Errorf("error %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
			if _, err := c.Opts(); (err != nil) != (len(tt.want) > 0) {
				t.Errorf("Opts error = %v, want error: %v", err, len(tt.want) > 0)
			}
		})
	}
}

// joined returns the errors that err joins.
func joined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	if err != nil {
		return []error{err}
	}
	return nil
}

func TestOptsBasic(t *testing.T) {
	t.Parallel()
	c := Config{Brokers: cluster.ListenAddrs(), ClientID: "hourglass-test"}
	opts, err := c.Opts()
	if err != nil {
		t.Fatal(err)
	}
	if len(opts) != 2 {
		t.Errorf("plaintext Opts = %d options, want SeedBrokers and ClientID", len(opts))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.Ping(testCtx(t)); err != nil {
		t.Fatalf("ping: %v", err)
	}
}

func TestTLSConfig(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	c := Config{Brokers: []string{DefaultBrokers}, TLSCAFile: p.caFile, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile, TLSServerName: "kafka"}
	tc, err := c.tlsConfig()
	if err != nil {
		t.Fatal(err)
	}
	if tc.MinVersion != tls.VersionTLS12 || tc.RootCAs == nil || len(tc.Certificates) != 1 || tc.ServerName != "kafka" || tc.InsecureSkipVerify {
		t.Errorf("tls config: min %x roots %v certs %d server name %q insecure %v", tc.MinVersion, tc.RootCAs != nil, len(tc.Certificates), tc.ServerName, tc.InsecureSkipVerify)
	}
	c = Config{Brokers: []string{DefaultBrokers}, TLS: true}
	if tc, err = c.tlsConfig(); err != nil || tc.RootCAs != nil || tc.Certificates != nil {
		t.Errorf("bare --tls: %+v, %v; want the system pool and no client certificate", tc, err)
	}
}

// ping connects with the options of c and pings the broker, bounded by
// timeout.
func ping(t *testing.T, c Config, timeout time.Duration) error {
	t.Helper()
	opts, err := c.Opts()
	if err != nil {
		t.Fatalf("Opts: %v", err)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatalf("new client: %v", err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	return cl.Ping(ctx)
}

// TestOptsTLS connects to a kfake that requires TLS with a client certificate
// signed by a CA generated here.
func TestOptsTLS(t *testing.T) {
	t.Parallel()
	p := newPKI(t)
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.TLS(&tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{p.serverCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.caPool,
	}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()

	// Failures are retried by kgo until the context ends; a short bound
	// keeps them quick. Successes get the full test timeout.
	const failWithin = 2 * time.Second
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"CA and client cert", Config{Brokers: brokers, TLSCAFile: p.caFile, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile}, true},
		{"server name checked against cert", Config{Brokers: brokers, TLSCAFile: p.caFile, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile, TLSServerName: "localhost"}, true},
		{"wrong server name", Config{Brokers: brokers, TLSCAFile: p.caFile, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile, TLSServerName: "kafka.example"}, false},
		{"insecure skip verify", Config{Brokers: brokers, TLSInsecureSkipVerify: true, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile}, true},
		{"no client cert", Config{Brokers: brokers, TLSCAFile: p.caFile}, false},
		{"other CA", Config{Brokers: brokers, TLSCAFile: p.otherCAFile, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile}, false},
		{"system pool", Config{Brokers: brokers, TLS: true, TLSCertFile: p.clientCertFile, TLSKeyFile: p.clientKeyFile}, false},
		{"plaintext", Config{Brokers: brokers}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timeout := failWithin
			if tt.ok {
				timeout = testTimeout
			}
			err := ping(t, tt.cfg, timeout)
			if tt.ok && err != nil {
				t.Fatalf("ping: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("ping succeeded, want failure")
			}
			t.Logf("ping: %v", err)
		})
	}
}

// TestOptsSASL connects to a kfake with SASL and one SCRAM-SHA-256 user.
// kfake answers a failed authentication by closing the connection (a real
// Kafka answers SASL_AUTHENTICATION_FAILED first), so kgo reports EOF there.
func TestOptsSASL(t *testing.T) {
	t.Parallel()
	p := newPKI(t) // for the password file ("pass\n")
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-256", "user", "pass"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	brokers := c.ListenAddrs()

	const failWithin = 2 * time.Second
	tests := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"right password", Config{Brokers: brokers, SASLMechanism: SASLScramSHA256, SASLUser: "user", SASLPassword: "pass"}, true},
		{"password file, newline trimmed", Config{Brokers: brokers, SASLMechanism: "SCRAM-SHA-256", SASLUser: "user", SASLPasswordFile: p.passwordFile}, true},
		{"wrong password", Config{Brokers: brokers, SASLMechanism: SASLScramSHA256, SASLUser: "user", SASLPassword: "wrong"}, false},
		{"unknown user", Config{Brokers: brokers, SASLMechanism: SASLScramSHA256, SASLUser: "nobody", SASLPassword: "pass"}, false},
		{"other mechanism", Config{Brokers: brokers, SASLMechanism: SASLScramSHA512, SASLUser: "user", SASLPassword: "pass"}, false},
		{"no SASL", Config{Brokers: brokers}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			timeout := failWithin
			if tt.ok {
				timeout = testTimeout
			}
			err := ping(t, tt.cfg, timeout)
			if tt.ok && err != nil {
				t.Fatalf("ping: %v", err)
			}
			if !tt.ok && err == nil {
				t.Fatal("ping succeeded, want failure")
			}
			t.Logf("ping: %v", err)
		})
	}
}
