package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/selfsigned"
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

// TestClientRereadsCA: ct-server comes back with a new certificate;
// ct-client says why it cannot connect, and connects once its --ca file
// holds the new certificate, without a restart.
func TestClientRereadsCA(t *testing.T) {
	up := startUpstream(t)
	a, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	b, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	ca := filepath.Join(t.TempDir(), "ca.pem")
	writeCA := func(p *selfsigned.Pair) {
		pem, _, err := p.PEM()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(ca, pem, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	writeCA(a)
	with := func(p *selfsigned.Pair) func(*ServerConfig) {
		return func(c *ServerConfig) { c.TLS = &tls.Config{Certificates: []tls.Certificate{p.Cert}} }
	}
	ts := startServer(t, "", with(a), up.hostport)
	tc := startClient(t, ts, 1, true, func(c *ClientConfig) {
		c.TLS, c.CAFile = &tls.Config{}, ca
		c.ReconnectMax = 200 * time.Millisecond
	})
	addr := ts.addr
	ts.stop(t)
	startServer(t, addr, with(b), up.hostport)
	p := tc.paths[0]
	waitFor(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		return strings.Contains(p.lastErr, "not signed by "+ca)
	}, "a clear reason")
	writeCA(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.WaitReady(ctx, 1); err != nil {
		t.Fatalf("after the new --ca: %v", err)
	}
	if resp, _ := tc.get(t, up.URL+"/bytes/10"); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
}
