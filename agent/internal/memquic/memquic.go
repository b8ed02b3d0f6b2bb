// Package memquic is the agent's QUIC on emu/memnet for tests under
// testing/synctest: a listener with a fresh self-signed certificate and
// the agent's ALPN and QUIC configuration, and client transports that
// dial it. The packages that reach ct-server through an interface
// (agent/tunnel, agent/socksproxy) test against fakes of ct-server with it.
//
// Everything must be made inside the bubble that uses it: a certificate
// made there is of fake time (the year 2000) and verifies only there.
package memquic

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"sync"
	"testing"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
)

// maxStreams is the listener's and the dialers' incoming stream limit: a
// test opens a few streams at a time.
const maxStreams = 16

// Config is the agent's QUIC configuration as both ends use it.
func Config() *quic.Config { return wire.QUICConfig(nil, wire.DefaultIdleTimeout, maxStreams) }

// Server is a QUIC listener at Addr; ClientTLS trusts it.
type Server struct {
	*quic.Listener
	Addr      netip.AddrPort
	ClientTLS *tls.Config
}

// Listen listens at addr on n until the test ends.
func Listen(t testing.TB, n *memnet.Network, addr netip.AddrPort) *Server {
	t.Helper()
	pair, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	tr := Transport(t, n, addr)
	ln, err := tr.Listen(&tls.Config{Certificates: []tls.Certificate{pair.Cert}, NextProtos: []string{wire.ALPN}}, Config())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &Server{Listener: ln, Addr: addr, ClientTLS: &tls.Config{RootCAs: pair.Pool, ServerName: "localhost", NextProtos: []string{wire.ALPN}}}
}

// Transport is a QUIC transport on a socket at addr (port 0: any), closed
// when the test ends.
func Transport(t testing.TB, n *memnet.Network, addr netip.AddrPort) *quic.Transport {
	t.Helper()
	pc, err := n.ListenPacket(addr)
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close() })
	return tr
}

// Dial connects tr to s.
func (s *Server) Dial(ctx context.Context, tr *quic.Transport) (*quic.Conn, error) {
	return tr.Dial(ctx, net.UDPAddrFromAddrPort(s.Addr), s.ClientTLS, Config())
}

// Serve accepts connections until the listener closes: onConn (if set)
// runs on a goroutine per connection, onStream on one per stream. It
// returns when every one of them has.
func (s *Server) Serve(onConn func(*quic.Conn), onStream func(*quic.Conn, *quic.Stream)) {
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		conn, err := s.Accept(context.Background())
		if err != nil {
			return
		}
		if onConn != nil {
			wg.Go(func() { onConn(conn) })
		}
		wg.Go(func() {
			for {
				str, err := conn.AcceptStream(context.Background())
				if err != nil {
					return
				}
				wg.Go(func() { onStream(conn, str) })
			}
		})
	}
}

// From is the address a connection accepted by s came from.
func From(conn *quic.Conn) netip.Addr {
	return conn.RemoteAddr().(*net.UDPAddr).AddrPort().Addr().Unmap()
}
