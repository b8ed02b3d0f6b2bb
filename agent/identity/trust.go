package identity

import (
	"crypto/x509"
	"fmt"
	"os"
	"strings"
)

// LoadCAFile reads a PEM file of certificates to trust.
func LoadCAFile(name string) (*x509.CertPool, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, fmt.Errorf("ca %s: no PEM certificate", name)
	}
	return pool, nil
}

// ExplainDial adds what a user can do to a dial error that is not a
// network one: a certificate the client does not trust (caFile, "" for
// the system's CAs), a server that refused before its handshake, a server
// that does not speak alpn. It returns "" for any other error.
func ExplainDial(err error, caFile, alpn string) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "x509:") && strings.Contains(msg, "unknown authority"):
		src := "the system's CAs"
		if caFile != "" {
			src = caFile + " (re-read before every dial)"
		}
		return fmt.Sprintf(" — ct-server's certificate is not signed by %s: if ct-server made a new self-signed certificate, copy its --write-ca file there (a persistent one: give ct-server --state-dir)", src)
	case strings.Contains(msg, "x509:"):
		return " — ct-server's certificate does not verify: check --server-name and the certificate's names and dates"
	case strings.Contains(msg, "CONNECTION_REFUSED"):
		return " — ct-server refused the connection before its handshake: too many connections that have not said hello, from this address or in all (pre-auth caps), or it is shutting down"
	case strings.Contains(msg, "no application protocol"):
		return " — the server at that address is not a ct-server (ALPN " + alpn + ")"
	}
	return ""
}
