// Package identity is ct-server's and ct-client's credentials on disk: the
// self-signed TLS identity a ct-server keeps in its state directory, client
// token files (made, checked for their mode) and the estimate of a token's
// strength that ct-server demands. It is apart from both ends because the
// command (hetquic agent token, --state-dir) uses it without starting either.
package identity

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/selfsigned"
)

// IdentityValidity is how long a self-signed ct-server certificate made by
// LoadOrCreateIdentity lasts: long enough that clients given its --ca once
// keep trusting the server across restarts.
const IdentityValidity = 825 * 24 * time.Hour

// Files of a ct-server identity in its state directory.
const (
	identityCert = "ct-server.crt"
	identityKey  = "ct-server.key"
)

// LoadOrCreateIdentity returns the self-signed certificate kept in dir,
// making one (valid for localhost, the loopback addresses and names) on
// first use or when the kept one has expired. The key is written with mode
// 0600 and the directory with 0700. certPEM is the certificate to hand to
// clients (--ca). A ct-server restarted with the same dir keeps its
// identity, so its clients reconnect without a new --ca (a new certificate
// per start would strand them).
func LoadOrCreateIdentity(dir string, now time.Time, names ...string) (cert tls.Certificate, certPEM []byte, created bool, err error) {
	cf, kf := filepath.Join(dir, identityCert), filepath.Join(dir, identityKey)
	certPEM, err = os.ReadFile(cf)
	if err == nil {
		cert, err = tls.X509KeyPair(certPEM, mustRead(kf))
		if err == nil {
			leaf, perr := x509.ParseCertificate(cert.Certificate[0])
			if perr == nil && now.Before(leaf.NotAfter) {
				return cert, certPEM, false, nil
			}
		}
		if err != nil {
			return cert, nil, false, fmt.Errorf("identity %s: %w (remove both files to make a new one)", dir, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return cert, nil, false, fmt.Errorf("identity: %w", err)
	}
	pair, err := selfsigned.NewValid(IdentityValidity, names...)
	if err != nil {
		return cert, nil, false, err
	}
	certPEM, keyPEM, err := pair.PEM()
	if err != nil {
		return cert, nil, false, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return cert, nil, false, fmt.Errorf("identity: %w", err)
	}
	if err := writeFileAtomic(kf, keyPEM, 0o600); err != nil {
		return cert, nil, false, err
	}
	if err := writeFileAtomic(cf, certPEM, 0o644); err != nil {
		return cert, nil, false, err
	}
	return pair.Cert, certPEM, true, nil
}

func mustRead(name string) []byte {
	b, _ := os.ReadFile(name) // a missing key fails in X509KeyPair, naming the problem
	return b
}

// writeFileAtomic writes data to name through a temporary file in the same
// directory, so a crash leaves the old file or the new one, never half.
func writeFileAtomic(name string, data []byte, mode os.FileMode) error {
	f, err := os.CreateTemp(filepath.Dir(name), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := f.Chmod(mode); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), name)
}

// WriteTokenFile writes a new random token of 32 bytes (256 bits,
// base64url) to name with mode 0600, refusing to overwrite a file. It
// returns the token.
func WriteTokenFile(name string, random func([]byte) (int, error)) (string, error) {
	tok, err := NewToken(random)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", fmt.Errorf("token file: %w", err)
	}
	if _, err := f.WriteString(tok + "\n"); err != nil {
		f.Close()
		return "", err
	}
	return tok, f.Close()
}

// NewToken returns a token of 32 random bytes in base64url (43
// characters, 256 bits) read from random (crypto/rand.Read).
func NewToken(random func([]byte) (int, error)) (string, error) {
	var b [32]byte
	if _, err := random(b[:]); err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// CheckTokenFile warns of a token file others can read: it returns a
// warning or "".
func CheckTokenFile(name string) string {
	st, err := os.Stat(name)
	if err != nil {
		return ""
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("token file %s has mode %04o: other users can read it; chmod 600 %s", name, st.Mode().Perm(), name)
	}
	return ""
}

// MinTokenBits is the least estimated entropy of a client token that
// NewServer accepts (unless ServerConfig.AllowWeakTokens): 96 bits keep an
// online guesser, slowed further by the login back-off, hopeless. "hetquic
// agent token" makes 256-bit tokens.
const MinTokenBits = 96

// TokenBits estimates the entropy of a token in bits: its length times the
// smaller of the empirical Shannon entropy per character and log2 of the
// alphabet its characters come from. It is an upper bound for a random
// token and catches the usual weak ones ("aaaa…", a word repeated, a run
// of the alphabet), not every guessable one.
func TokenBits(tok string) float64 {
	if tok == "" {
		return 0
	}
	counts := map[rune]int{}
	var lower, upper, digit, other, hexOnly bool = false, false, false, false, true
	n := 0
	for _, r := range tok {
		counts[r]++
		n++
		switch {
		case r >= 'a' && r <= 'z':
			lower = true
		case r >= 'A' && r <= 'Z':
			upper = true
		case r >= '0' && r <= '9':
			digit = true
		default:
			other = true
		}
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			hexOnly = false
		}
	}
	alphabet := 0
	for _, c := range []struct {
		on   bool
		size int
	}{{lower, 26}, {upper, 26}, {digit, 10}, {other, 32}} {
		if c.on {
			alphabet += c.size
		}
	}
	if hexOnly {
		alphabet = 16
	}
	h := 0.0
	for _, k := range counts {
		p := float64(k) / float64(n)
		h -= p * math.Log2(p)
	}
	return float64(n) * min(h, math.Log2(float64(alphabet)))
}

// ReadTokenFile reads a token file, calling warn when others can read it.
func ReadTokenFile(name string, warn func(string)) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", err
	}
	if w := CheckTokenFile(name); w != "" {
		warn(w)
	}
	return strings.TrimSpace(string(b)), nil
}
