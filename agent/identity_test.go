package agent

import (
	"context"
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/internal/selfsigned"
)

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
	with := func(p *selfsigned.Pair) func(*server.Config) {
		return func(c *server.Config) { c.TLS = &tls.Config{Certificates: []tls.Certificate{p.Cert}} }
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
