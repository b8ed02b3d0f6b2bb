package memquic

import (
	"context"
	"io"
	"net/netip"
	"testing"
	"testing/synctest"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
)

// TestServe: a transport dials the listener with the agent's ALPN; Serve
// hands each connection and each stream on, with the dialer's address;
// it returns once the listener and the connection are closed.
func TestServe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		s := Listen(t, n, netip.MustParseAddrPort("10.9.0.1:443"))
		froms := make(chan netip.Addr, 2)
		served := make(chan struct{})
		go func() {
			defer close(served)
			s.Serve(func(c *quic.Conn) { froms <- From(c) }, func(c *quic.Conn, str *quic.Stream) {
				froms <- From(c)
				io.Copy(str, str)
				str.Close()
			})
		}()
		from := netip.MustParseAddr("10.8.0.1")
		conn, err := s.Dial(context.Background(), Transport(t, n, netip.AddrPortFrom(from, 0)))
		if err != nil {
			t.Fatal(err)
		}
		if p := conn.ConnectionState().TLS.NegotiatedProtocol; p != wire.ALPN {
			t.Fatalf("ALPN %q, want %q", p, wire.ALPN)
		}
		str, err := conn.OpenStreamSync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		str.Write([]byte("ping"))
		str.Close()
		if b, err := io.ReadAll(str); err != nil || string(b) != "ping" {
			t.Fatalf("echo %q %v", b, err)
		}
		for range 2 {
			if got := <-froms; got != from {
				t.Fatalf("served from %v, want %v", got, from)
			}
		}
		conn.CloseWithError(0, "")
		s.Close()
		<-served
	})
}
