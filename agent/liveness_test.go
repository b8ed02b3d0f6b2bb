package agent

import (
	"context"
	"crypto/tls"
	"net/http"
	"net/netip"
	"net/url"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/stripe"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
)

// TestLivenessFromTransport: on fake time over memnet, a peer whose
// streams are all held (one stream allowed, taken by a stream nobody
// reads, as an app's unread tunnels hold ct-server's) answers no stream
// ping, yet its path is alive: transportAlive, which ct-client's stall and
// tunnel checks use, says so from the transport's own packets; once the
// link is cut it says dead.
func TestLivenessFromTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		// A certificate of its own, made on the bubble's clock: testPair's
		// is made in real time and is not yet valid in fake time (2000).
		pair, err := selfsigned.New()
		if err != nil {
			t.Fatal(err)
		}
		srvAddr := netip.MustParseAddrPort("10.9.0.1:443")
		spc, err := n.ListenPacket(srvAddr)
		if err != nil {
			t.Fatal(err)
		}
		defer spc.Close()
		conf := wire.QUICConfig(nil, wire.DefaultIdleTimeout, 1) // one stream at a time
		ln, err := quic.Listen(spc, &tls.Config{Certificates: []tls.Certificate{pair.Cert}, NextProtos: []string{wire.ALPN}}, conf)
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		accepted := make(chan *quic.Conn, 1)
		go func() {
			c, err := ln.Accept(context.Background())
			if err == nil {
				accepted <- c // it never accepts a stream
			}
		}()
		cpc, err := n.ListenPacket(netip.MustParseAddrPort("10.8.0.1:4000"))
		if err != nil {
			t.Fatal(err)
		}
		defer cpc.Close()
		conn, err := quic.Dial(t.Context(), cpc, spc.LocalAddr(), &tls.Config{RootCAs: pair.Pool, ServerName: "localhost", NextProtos: []string{wire.ALPN}}, wire.QUICConfig(nil, wire.DefaultIdleTimeout, 1))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.CloseWithError(0, "")
		sc := <-accepted
		defer sc.CloseWithError(0, "")
		held, err := conn.OpenStreamSync(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		held.Write([]byte("unread")) // the one stream the peer allows, never read
		time.Sleep(time.Second)
		const wait = 400 * time.Millisecond
		if wire.Ping(t.Context(), conn, wait) {
			t.Fatal("a stream ping answered though the peer's streams are all held: the test shows nothing")
		}
		if !transportAlive(t.Context(), conn, wait) {
			t.Fatal("a live path judged dead: its streams are held, its transport answers")
		}
		n.SetDrop(netip.MustParseAddr("10.8.0.1"), true)
		if transportAlive(t.Context(), conn, wait) {
			t.Fatal("a cut path judged alive")
		}
	})
}

// givenUpAttempts is how many given-up requests TestGivenUpRequestIsNoStall
// makes: before the fix each counted a stall with probability 1/2 (a
// select between a free stream slot and the done context), so all of them
// passing by chance had probability 2^-32.
const givenUpAttempts = 32

// TestGivenUpRequestIsNoStall: on fake time over memnet, requests their
// owner gave up before their stream opened — a stripe's piece whose other
// copy landed or whose stripe ended (TestUnreadTunnelsDoNotKillPaths'
// striped GET cancels its slow path's pieces so), an app that hung up —
// and a stall check whose request was given up while the path was quiet
// say nothing of the path: no stall is counted, nothing is suspected. A
// live path was once judged stalled for either, which an app (or the
// goroutine order at a stripe's end) decides, not the network.
func TestGivenUpRequestIsNoStall(t *testing.T) {
	t.Run("open", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startMemAgent(t, 2, nil, nil)
			r := &http.Request{Method: http.MethodGet, URL: &url.URL{Scheme: "http", Host: memApp, Path: "/bytes/1000"}, Host: memApp}
			for range givenUpAttempts {
				ctx, cancel := context.WithCancel(t.Context())
				cancel()
				if _, err := m.c.fetchPiece(ctx, r, http.Header{}, "", pathchoice.Request{}, 0, 1000, wholePiece(t, 999)); err == nil {
					t.Fatal("a piece given up before it began was fetched")
				}
			}
			noStalls(t, m.c)
		})
	})
	t.Run("probe", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			m := startMemAgent(t, 2, nil, nil)
			p := m.c.pathList()[0]
			time.Sleep(2 * DefaultStallTimeout) // the path quiet: no recent bytes vouch for it
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			s := &stallWatch{c: m.c, p: p, conn: p.current(), ctx: ctx, last: time.Now()}
			s.alive()
			noStalls(t, m.c)
		})
	})
}

// wholePiece is a piece request for bytes [0, end] (stripe.Request),
// which hears of no bytes before its stream opened: until then the
// stripe has no piece to count them on, and the failed fetch's own
// error text went to Received and crashed the stripe (-race, once).
func wholePiece(t *testing.T, end int64) stripe.Request {
	var opened atomic.Bool
	return stripe.Request{
		Open: func(open func() error) (int64, int64, error) {
			err := open()
			opened.Store(err == nil)
			return 0, end, err
		},
		Received: func(n int) {
			if !opened.Load() {
				t.Errorf("%d bytes received before the piece's stream opened", n)
			}
		},
	}
}

// noStalls fails t for each path of c with a stall counted or suspected.
func noStalls(t *testing.T, c *Client) {
	t.Helper()
	for _, p := range c.pathList() {
		if n, held := p.stalls.Load(), p.held(time.Now()); n != 0 || held {
			t.Errorf("path %s: %d stalls, suspected %v, for requests given up by their owner", p.Name, n, held)
		}
	}
}
