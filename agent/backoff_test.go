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

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
)

// TestLoginBackoffHolds: free failures are answered at once, then the
// hold doubles from loginFirstBlock to loginMaxBlock; a source quiet for
// loginForget starts over; IPv6 sources are /64 prefixes.
func TestLoginBackoffHolds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b loginBackoff
		a := netip.MustParseAddr("192.0.2.1")
		for i := range loginFreeFailures {
			if f := b.fail(a, time.Now()); f.until.After(time.Now()) {
				t.Fatalf("failure %d held", i+1)
			}
		}
		for _, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
			b.fail(a, time.Now())
			if got := b.hold(a, time.Now()); got != want {
				t.Fatalf("hold %v, want %v", got, want)
			}
			time.Sleep(want / 2)
			if got := b.hold(a, time.Now()); got != want/2 {
				t.Fatalf("hold %v after %v, want %v", got, want/2, want/2)
			}
		}
		for range 20 {
			b.fail(a, time.Now())
		}
		if got := b.hold(a, time.Now()); got != loginMaxBlock {
			t.Fatalf("hold %v, want the cap %v", got, loginMaxBlock)
		}
		if other := netip.MustParseAddr("192.0.2.2"); b.hold(other, time.Now()) != 0 {
			t.Fatal("another address held")
		}
		time.Sleep(loginForget)
		b.expire(time.Now())
		if b.lru.Len() != 0 || len(b.m) != 0 {
			t.Fatalf("%d entries after loginForget", b.lru.Len())
		}
		if f := b.fail(a, time.Now()); f.n != 1 {
			t.Fatalf("after loginForget: %d failures, want 1", f.n)
		}
		v6a, v6b := netip.MustParseAddr("2001:db8:1:2::1"), netip.MustParseAddr("2001:db8:1:2:ffff::9")
		for range loginFreeFailures + 1 {
			b.fail(v6a, time.Now())
		}
		if b.hold(v6b, time.Now()) != time.Second || b.hold(netip.MustParseAddr("2001:db8:1:3::1"), time.Now()) != 0 {
			t.Fatal("IPv6 not keyed by /64")
		}
	})
}

// TestLoginBackoffEviction: a full table evicts its least recently failed
// entry (not whatever map iteration yields), never one still blocked;
// while the front is blocked, newcomers go untracked.
func TestLoginBackoffEviction(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b loginBackoff
		addr := func(i int) netip.Addr { return netip.AddrFrom4([4]byte{10, byte(i >> 16), byte(i >> 8), byte(i)}) }
		for i := range loginTableSize {
			b.fail(addr(i), time.Now())
			time.Sleep(time.Millisecond)
		}
		b.fail(addr(0), time.Now()) // 0 failed again: now 1 is the least recent
		b.fail(addr(loginTableSize), time.Now())
		if b.m[loginKey(addr(1))] != nil || b.m[loginKey(addr(0))] == nil || b.lru.Len() != loginTableSize {
			t.Fatalf("evicted the wrong entry (len %d)", b.lru.Len())
		}
		// Block the least recent entry (2): it must survive any number of
		// newcomers until its block ends.
		victim := addr(2)
		for range loginFreeFailures + 5 {
			b.fail(victim, time.Now())
		}
		for i := range loginTableSize {
			b.fail(addr(loginTableSize+1+i), time.Now())
		}
		// The victim moved to the back with its failures; the newcomers
		// pushed everything older out, then the victim is at the front.
		if b.m[loginKey(victim)] == nil {
			t.Fatal("a blocked entry was evicted")
		}
		held := b.hold(victim, time.Now())
		before := b.untracked
		if f := b.fail(addr(1<<20), time.Now()); f != nil || b.untracked != before+1 {
			t.Fatal("a newcomer evicted the blocked front entry")
		}
		time.Sleep(held)
		if f := b.fail(addr(1<<20), time.Now()); f == nil || b.m[loginKey(victim)] != nil {
			t.Fatal("the front entry's block ended but it was not evicted")
		}
	})
}

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
		s, err := NewServer(ServerConfig{TLS: &tls.Config{Certificates: []tls.Certificate{pair.Cert}},
			Clients: []ClientAuth{{ID: "alice", Token: testToken}}, Allow: []string{"192.0.2.80:80"}, Log: testLog(t)})
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
			if i < loginFreeFailures && held > time.Second {
				t.Fatalf("free failure %d held %v", i, held)
			}
			if i >= loginFreeFailures && (held < loginFirstBlock || !strings.Contains(reason, "login back-off")) {
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
		time.Sleep(2 * loginMaxBlock)
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*loginMaxBlock)
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
