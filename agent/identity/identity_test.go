package identity

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestIdentityPersists: a state directory keeps one identity across
// restarts; an expired one is replaced; the key is private.
func TestIdentityPersists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	now := time.Now()
	c1, pem1, created, err := LoadOrCreateIdentity(dir, now)
	if err != nil || !created {
		t.Fatalf("first: created %v, %v", created, err)
	}
	c2, pem2, created, err := LoadOrCreateIdentity(dir, now.Add(time.Hour))
	if err != nil || created || !bytes.Equal(pem1, pem2) || !bytes.Equal(c1.Certificate[0], c2.Certificate[0]) {
		t.Fatalf("restart: created %v, same %v, %v", created, bytes.Equal(pem1, pem2), err)
	}
	st, err := os.Stat(filepath.Join(dir, identityKey))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", st.Mode(), err)
	}
	_, pem3, created, err := LoadOrCreateIdentity(dir, now.Add(IdentityValidity+time.Hour))
	if err != nil || !created || bytes.Equal(pem1, pem3) {
		t.Fatalf("expired: created %v, %v", created, err)
	}
	os.WriteFile(filepath.Join(dir, identityKey), []byte("garbage"), 0o600)
	if _, _, _, err := LoadOrCreateIdentity(dir, now); err == nil || !strings.Contains(err.Error(), "remove both files") {
		t.Fatalf("broken key: %v", err)
	}
}

func TestTokenFile(t *testing.T) {
	name := filepath.Join(t.TempDir(), "ct.token")
	tok, err := WriteTokenFile(name, rand.Read)
	if err != nil {
		t.Fatal(err)
	}
	if TokenBits(tok) < MinTokenBits || len(tok) != 43 {
		t.Fatalf("token %q: %.0f bits", tok, TokenBits(tok))
	}
	if w := CheckTokenFile(name); w != "" {
		t.Fatalf("fresh token file: %s", w)
	}
	if _, err := WriteTokenFile(name, rand.Read); err == nil {
		t.Fatal("overwrote a token file")
	}
	os.Chmod(name, 0o644)
	if w := CheckTokenFile(name); !strings.Contains(w, "chmod 600") {
		t.Fatalf("world-readable token file: %q", w)
	}
}
