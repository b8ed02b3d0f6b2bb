// Package selfsigned makes throwaway TLS certificates for tests, the demo
// and "hetquic serve --self-signed": QUIC cannot run without TLS, and the
// bench runs on machines with no CA.
package selfsigned

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
	"time"
)

// Pair is a self-signed server certificate and a pool that trusts it.
type Pair struct {
	Cert tls.Certificate
	Pool *x509.CertPool
}

// New makes a certificate valid for a day for localhost, 127.0.0.0/8's
// usual addresses and the given extra names or IP addresses.
func New(names ...string) (*Pair, error) { return NewValid(24*time.Hour, names...) }

// NewValid is New with a validity of its own: a certificate kept across
// restarts (the agent's --state-dir) lives longer than a test's.
func NewValid(validity time.Duration, names ...string) (*Pair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "hetquic self-signed"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(validity),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, n)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &Pair{
		Cert: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf},
		Pool: pool,
	}, nil
}

// PEM returns the certificate and its private key in PEM, for servers that
// read files (hetquic serve --write-ca, the aioquic interop server).
func (p *Pair) PEM() (cert, key []byte, err error) {
	der, err := x509.MarshalPKCS8PrivateKey(p.Cert.PrivateKey)
	if err != nil {
		return nil, nil, err
	}
	cert = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.Cert.Certificate[0]})
	key = pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	return cert, key, nil
}
