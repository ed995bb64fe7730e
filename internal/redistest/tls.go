package redistest

import (
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
	"testing"
	"time"
)

// Certificates are a certificate authority made for one test, a server
// certificate it signed for 127.0.0.1 and a client certificate it signed,
// the CA's and the server's as PEM files in a t.TempDir for redis-server.
type Certificates struct {
	// CAFile, CertFile and KeyFile are the CA's certificate and the
	// server's certificate and key.
	CAFile, CertFile, KeyFile string

	roots  *x509.CertPool
	client tls.Certificate
}

// NewCertificates makes a CA, a server certificate for 127.0.0.1 and a
// client certificate, valid for a day.
func NewCertificates(t testing.TB) *Certificates {
	t.Helper()
	dir := t.TempDir()
	caKey := newKey(t)
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "redistest CA"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatalf("redistest: making the CA certificate: %v", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatalf("redistest: parsing the CA certificate: %v", err)
	}
	sign := func(serial int64, name string, usage x509.ExtKeyUsage, ips []net.IP) ([]byte, *ecdsa.PrivateKey) {
		key := newKey(t)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: name},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatalf("redistest: making the %s certificate: %v", name, err)
		}
		return der, key
	}
	serverDER, serverKey := sign(2, "redistest server", x509.ExtKeyUsageServerAuth, []net.IP{net.IPv4(127, 0, 0, 1)})
	clientDER, clientKey := sign(3, "redistest client", x509.ExtKeyUsageClientAuth, nil)

	c := &Certificates{
		CAFile:   filepath.Join(dir, "ca.crt"),
		CertFile: filepath.Join(dir, "server.crt"),
		KeyFile:  filepath.Join(dir, "server.key"),
		roots:    x509.NewCertPool(),
		client:   tls.Certificate{Certificate: [][]byte{clientDER}, PrivateKey: clientKey},
	}
	c.roots.AddCert(ca)
	writePEM(t, c.CAFile, "CERTIFICATE", caDER)
	writePEM(t, c.CertFile, "CERTIFICATE", serverDER)
	writePEM(t, c.KeyFile, "EC PRIVATE KEY", marshalKey(t, serverKey))
	return c
}

// ClientTLS returns a TLS configuration that trusts the server and
// presents the client certificate.
func (c *Certificates) ClientTLS() *tls.Config {
	cfg := c.ServerOnlyTLS()
	cfg.Certificates = []tls.Certificate{c.client}
	return cfg
}

// ServerOnlyTLS returns a TLS configuration that trusts the server and
// presents no certificate, which a server started WithTLS refuses.
func (c *Certificates) ServerOnlyTLS() *tls.Config {
	return &tls.Config{RootCAs: c.roots, MinVersion: tls.VersionTLS12}
}

// WithTLS makes a standalone server accept only TLS connections, on the
// port that Addr gives, from clients presenting a certificate that c's CA
// signed (--tls-auth-clients yes). Server.Client then connects with
// c.ClientTLS(). StartCluster refuses it.
func WithTLS(c *Certificates) ServerOption {
	return func(cfg *serverConfig) { cfg.tls = c }
}

// tlsArgs returns redis-server's arguments for serving TLS on port, and
// nothing else.
func (c *Certificates) tlsArgs(port string) []string {
	return []string{
		"--port", "0",
		"--tls-port", port,
		"--tls-cert-file", c.CertFile,
		"--tls-key-file", c.KeyFile,
		"--tls-ca-cert-file", c.CAFile,
		"--tls-auth-clients", "yes",
	}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatalf("redistest: generating a key: %v", err)
	}
	return key
}

func marshalKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatalf("redistest: encoding a key: %v", err)
	}
	return der
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatalf("redistest: writing %s: %v", path, err)
	}
}
