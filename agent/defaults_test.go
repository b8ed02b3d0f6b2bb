package agent

import (
	"context"
	"crypto/tls"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
)

func TestTokenBits(t *testing.T) {
	for _, tc := range []struct {
		tok  string
		weak bool
	}{
		{"aaaaaaaaaaaaaaaa", true},
		{"passwordpassword", true},
		{"abcdefghijklmnop", true},
		{"0123456789abcdef01", true},
		{"5f2b9c0e7d41a8b36e90c4d2f17a5b83", false}, // openssl rand -hex 16
		{"Zq3vX9kLm2Rt8WpB4nYc7Hs1Jd6Fg0Ae5Ui-Qo_Kx2M", false},
		{testToken, false},
	} {
		if weak := identity.TokenBits(tc.tok) < identity.MinTokenBits; weak != tc.weak {
			t.Errorf("%q: %.0f bits, weak %v, want %v", tc.tok, identity.TokenBits(tc.tok), weak, tc.weak)
		}
	}
	p := testPair(t)
	_, err := server.NewServer(server.Config{TLS: &tls.Config{Certificates: []tls.Certificate{p.Cert}},
		Clients: []server.ClientAuth{{ID: "a", Token: "passwordpassword"}}})
	if err == nil || !strings.Contains(err.Error(), "token too weak") {
		t.Fatalf("weak token: %v", err)
	}
}

// TestServerWideLimits: the memory budget (503 + Retry-After), connections
// per client, pre-auth connections per source address; each bites and is
// counted.
func TestServerWideLimits(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", func(c *server.Config) {
		c.MemoryBudget = server.StreamCost // one request at a time, all clients
		c.Limits = server.Limits{MaxConns: 2}
		c.MaxPreAuthPerSource = 2
		c.HelloTimeout = 2 * time.Second
	}, up.hostport)
	tc := startClient(t, ts, 3, false, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.WaitReady(ctx, 2); err != nil {
		t.Fatal(err)
	}
	// The third path's refused dial is the event: after it, a third
	// connection would have shown.
	overLimit := func() bool {
		var n int64
		for _, p := range tc.paths {
			n += p.dialFailures.Load()
		}
		return n > 0
	}
	waitFor(t, overLimit, "the connection over max_conns refused")
	if n := tc.Ready(); n != 2 {
		t.Fatalf("%d paths connected with max_conns 2", n)
	}
	// Memory budget: a POST (not retried) beside a running request.
	var wg sync.WaitGroup
	wg.Go(func() {
		if resp, err := tc.hc.Get(up.URL + "/slow"); err == nil {
			resp.Body.Close()
		}
	})
	waitFor(t, func() bool { return ts.Usage().Reserved > 0 }, "first request admitted")
	resp, err := tc.hc.Post(up.URL+"/slow", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("over the memory budget: %d (Retry-After %q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
	}
	wg.Wait()
	// Pre-auth: connections that never say hello, from one address.
	var conns []*quic.Conn
	defer func() {
		for _, c := range conns {
			c.CloseWithError(0, "")
		}
	}()
	refused := 0
	for range 4 {
		c, err := quic.DialAddr(ctx, ts.addr, &tls.Config{RootCAs: ts.pool.RootCAs, ServerName: "localhost", NextProtos: []string{wire.ALPN}}, nil)
		var te *quic.TransportError
		if errors.As(err, &te) && te.ErrorCode == quic.ConnectionRefused {
			refused++ // before the TLS handshake
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	if refused != 2 {
		t.Fatalf("%d of 4 hello-less connections from one address refused, want 2", refused)
	}
	var sb strings.Builder
	ts.WriteMetrics(&sb)
	for _, want := range []string{`limit="memory_budget"} 1`, `limit="conns"}`, `limit="preauth_source"}`} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
	for _, l := range []string{"conns", "preauth_source"} { // a refused dial may count once per Initial
		if strings.Contains(sb.String(), `limit="`+l+`"} 0`) {
			t.Errorf("%s limit not counted", l)
		}
	}
}

// TestShutdownDrains: a request in progress finishes, new work gets 503,
// and Shutdown returns once nothing is reserved.
func TestShutdownDrains(t *testing.T) {
	up := startUpstream(t)
	ts := startServer(t, "", nil, up.hostport)
	tc := startClient(t, ts, 1, true, nil)
	slow := make(chan int, 1)
	go func() {
		resp, err := tc.hc.Get(up.URL + "/slow")
		if err != nil {
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	waitFor(t, func() bool { return ts.Usage().Reserved > 0 }, "slow request admitted")
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- ts.Shutdown(ctx)
	}()
	waitFor(t, func() bool { return ts.Health() != nil }, "draining")
	resp, err := tc.hc.Post(up.URL+"/slow", "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("new work while draining: %d, want 503", resp.StatusCode)
	}
	if code := <-slow; code != 200 {
		t.Fatalf("request in progress: %d, want 200", code)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
