package console_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/hourglass/hourglass/internal/console"
	"github.com/hourglass/hourglass/internal/testutil/chtest"
)

// issuer is a CA of the test that signs certificates.
type issuer struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newIssuer(t *testing.T, name string) *issuer {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &issuer{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a certificate for 127.0.0.1 signed by i, for a server or
// a client, as PEM certificate and key.
func (i *issuer) issue(t *testing.T, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, ExtKeyUsage: []x509.ExtKeyUsage{usage},
		KeyUsage: x509.KeyUsageDigitalSignature, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, i.cert, &key.PublicKey, i.key)
	if err != nil {
		t.Fatal(err)
	}
	k, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: k})
}

// TestClientCertificates serves the console over TLS with a client CA:
// a client without a certificate, or with one another CA signed, does not
// get through the handshake; one the client CA signed sees the pages, and
// the actions are offered to it without a token.
func TestClientCertificates(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	serverCA, clientCA, otherCA := newIssuer(t, "server CA"), newIssuer(t, "client CA"), newIssuer(t, "other CA")
	srvCert, srvKey := serverCA.issue(t, x509.ExtKeyUsageServerAuth)
	cfg := console.Config{
		Listen: "127.0.0.1:0", AllowActions: true,
		TLS: console.ServerTLS{CertFile: write("server.pem", srvCert), KeyFile: write("server.key", srvKey), ClientCAFile: write("clients.pem", clientCA.pem)},
	}
	srv, err := console.New(cfg, console.Options{Kafka: []kgo.Opt{kgo.SeedBrokers(cluster.ListenAddrs()...)}, Store: chtest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := srv.Serve(ctx, ln); err != nil {
			t.Errorf("serve: %v", err)
		}
	})
	defer func() { cancel(); wg.Wait() }()

	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	get := func(certs ...tls.Certificate) (string, error) {
		cl := &http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: certs, MinVersion: tls.VersionTLS12}}}
		defer cl.CloseIdleConnections()
		resp, err := cl.Get("https://" + ln.Addr().String() + "/task?id=order-1")
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			return "", &statusError{resp.StatusCode}
		}
		return string(b), err
	}
	pair := func(ca *issuer) tls.Certificate {
		c, k := ca.issue(t, x509.ExtKeyUsageClientAuth)
		p, err := tls.X509KeyPair(c, k)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if _, err := get(); err == nil {
		t.Error("a client without a certificate got a page")
	}
	if _, err := get(pair(otherCA)); err == nil {
		t.Error("a client with a certificate of another CA got a page")
	}
	page, err := get(pair(clientCA))
	if err != nil {
		t.Fatalf("a client with a certificate of the client CA: %v", err)
	}
	if !strings.Contains(page, `id="task-actions"`) {
		t.Errorf("the actions are not offered to a client with a certificate:\n%s", page)
	}
}

type statusError struct{ code int }

func (e *statusError) Error() string { return http.StatusText(e.code) }
