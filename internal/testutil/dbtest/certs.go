package dbtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"time"
)

// writeCerts writes a fresh CA certificate to caFile and a server
// certificate for 127.0.0.1 and localhost, signed by it, to certFile and
// keyFile. The key is readable by its owner only (Postgres insists);
// uid and gid, when not -1, own the files.
func writeCerts(caFile, certFile, keyFile string, uid, gid int) error {
	caDER, srvDER, keyDER, err := newCerts(time.Now())
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name, typ string
		der       []byte
		mode      os.FileMode
	}{
		{caFile, "CERTIFICATE", caDER, 0o644},
		{certFile, "CERTIFICATE", srvDER, 0o644},
		{keyFile, "PRIVATE KEY", keyDER, 0o600},
	} {
		if err := os.WriteFile(f.name, pem.EncodeToMemory(&pem.Block{Type: f.typ, Bytes: f.der}), f.mode); err != nil {
			return err
		}
		if uid != -1 {
			if err := os.Chown(f.name, uid, gid); err != nil {
				return err
			}
		}
	}
	return nil
}

// newCerts makes a CA certificate and a server certificate for 127.0.0.1
// and localhost signed by it, both valid from an hour before now for a
// day, and returns them and the server's key in DER.
func newCerts(now time.Time) (caDER, srvDER, keyDER []byte, err error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "hourglass test CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	if caDER, err = x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey); err != nil {
		return nil, nil, nil, err
	}
	srvKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	srv := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if srvDER, err = x509.CreateCertificate(rand.Reader, srv, ca, &srvKey.PublicKey, caKey); err != nil {
		return nil, nil, nil, err
	}
	if keyDER, err = x509.MarshalPKCS8PrivateKey(srvKey); err != nil {
		return nil, nil, nil, err
	}
	return caDER, srvDER, keyDER, nil
}
