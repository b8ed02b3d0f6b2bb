package agent

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
)

// memServerAddr is ct-server's address on the test's in-memory network;
// the guesser and the good client share memNAT, one NAT's public address.
var (
	memServerAddr = netip.MustParseAddrPort("10.0.0.1:4433")
	memNAT        = netip.MustParseAddr("10.0.0.2")
)

// TestGoodClientBesideGuesser: a token guesser and a good ct-client behind
// the same address. The guesser's failures are held back (its answers say
// why) and the good client is never refused, at any point of the
// guesser's back-off (it was once refused for 73 s).
func TestGoodClientBesideGuesser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		pair, err := selfsigned.New()
		if err != nil {
			t.Fatal(err)
		}
		s, err := server.NewServer(server.Config{TLS: &tls.Config{Certificates: []tls.Certificate{pair.Cert}},
			Clients: []server.ClientAuth{{ID: "alice", Token: testToken}}, Allow: []string{"192.0.2.80:80"}, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		spc, err := n.ListenPacket(memServerAddr)
		if err != nil {
			t.Fatal(err)
		}
		n.SetDelay(memServerAddr.Addr(), 5*time.Millisecond)
		done := make(chan error, 1)
		go func() { done <- s.Serve(spc) }()
		held := make(chan int, 1)
		defer func() {
			s.Close()
			if err := <-done; err != nil {
				t.Error(err)
			}
			if code := <-held; code != http.StatusUnauthorized {
				t.Errorf("the guess beside the ct-client was answered %d, want 401 after its hold", code)
			}
		}()
		tlsConf := &tls.Config{RootCAs: pair.Pool, ServerName: "localhost"}
		var lastReason string
		for i := range 12 {
			start := time.Now()
			code, reason := memHello(t, n, tlsConf, fmt.Sprintf("wrong-token-%02d-0123456789", i))
			if code != http.StatusUnauthorized {
				t.Fatalf("guess %d: status %d", i, code)
			}
			held := time.Since(start)
			if i < server.LoginFreeFailures && held > time.Second {
				t.Fatalf("free failure %d held %v", i, held)
			}
			if i >= server.LoginFreeFailures && (held < server.LoginFirstBlock || !strings.Contains(reason, "login back-off")) {
				t.Fatalf("guess %d: held %v, reason %q", i, held, reason)
			}
			lastReason = reason
			// The good client, from the same address, at every step.
			if code, reason := memHello(t, n, tlsConf, testToken); code != http.StatusOK {
				t.Fatalf("good client refused after %d guesses: %d %q", i+1, code, reason)
			}
		}
		if !strings.Contains(lastReason, "12 failed hellos from 10.0.0.2/32") {
			t.Fatalf("reason %q", lastReason)
		}
		// A whole ct-client, while guesses are being held: ready at once.
		go func() {
			code, _ := memHello(t, n, tlsConf, "another-wrong-token-0123456789")
			held <- code
		}()
		c, err := NewClient(ClientConfig{Server: memServerAddr.String(), ServerName: "localhost", TLS: &tls.Config{RootCAs: pair.Pool},
			Token: testToken, Paths: []LocalPath{{Name: "nat", Addr: memNAT}}, ListenPacket: n.ListenIP, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		if err := c.WaitReady(ctx, 1); err != nil || c.paths[0].dialFailures.Load() != 0 {
			t.Fatalf("ct-client: %v, %d dial failures", err, c.paths[0].dialFailures.Load())
		}
		// A ct-client with a revoked token says why it is refused.
		bad, err := NewClient(ClientConfig{Server: memServerAddr.String(), ServerName: "localhost", TLS: &tls.Config{RootCAs: pair.Pool},
			Token: "revoked-token-0123456789abcdef", Paths: []LocalPath{{Name: "nat", Addr: memNAT}}, ListenPacket: n.ListenIP, Log: testLog(t)})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * server.LoginMaxBlock)
		bad.paths[0].mu.Lock()
		why := bad.paths[0].lastErr
		bad.paths[0].mu.Unlock()
		bad.Close()
		if !strings.Contains(why, "refused the token (unauthorized): unknown token (login back-off: ") {
			t.Fatalf("refused ct-client's error: %q", why)
		}
	})
}

// memHello dials ct-server from memNAT and says hello with token: the
// status and Ct-Error of the answer.
func memHello(t *testing.T, n *memnet.Network, tlsConf *tls.Config, token string) (int, string) {
	pc, err := n.ListenPacket(netip.AddrPortFrom(memNAT, 0))
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer pc.Close()
	tr := &quic.Transport{Conn: pc}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*server.LoginMaxBlock)
	defer cancel()
	tc := tlsConf.Clone()
	tc.NextProtos = []string{wire.ALPN}
	conn, err := tr.Dial(ctx, net.UDPAddrFromAddrPort(memServerAddr), tc, &quic.Config{})
	if err != nil {
		t.Errorf("dial: %v", err)
		return 0, ""
	}
	defer conn.CloseWithError(0, "")
	str, err := conn.OpenStreamSync(ctx)
	if err != nil {
		t.Errorf("hello: %v", err)
		return 0, ""
	}
	req, _ := http.NewRequest(http.MethodGet, wire.PathHello, nil)
	req.Host = "ct"
	req.Header.Set("Authorization", "Bearer "+token)
	req.Write(str)
	str.Close()
	resp, err := wire.NewHeadReader(str).ReadResponse(req)
	if err != nil {
		return 0, err.Error()
	}
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get(wire.HdrError)
}
