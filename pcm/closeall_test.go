package pcm

import (
	"context"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// sockets counts the sockets a client opens through Config.ListenPacket
// (its paths, its dial attempts, its side probes' connections) that are
// still open. Closing a side probe's socket takes sideClose of fake time,
// as a close that waits on the kernel may; the client's own close at once.
// What closes on a goroutine the client left running after Close is then
// still open when Close returns, every time, where without it the check
// would depend on how the goroutines happened to be scheduled.
type sockets struct {
	n *memnet.Network

	mu   sync.Mutex
	open int
}

const sideClose = time.Second

func (s *sockets) listen(ip net.IP) (net.PacketConn, error) {
	pc, err := s.n.ListenIP(ip)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.open++
	s.mu.Unlock()
	// A side connection's socket is opened on the side prober's stack.
	side := strings.Contains(string(debug.Stack()), "(*SideProber).side")
	return &countedConn{PacketConn: pc, s: s, side: side}, nil
}

func (s *sockets) stillOpen() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.open
}

type countedConn struct {
	net.PacketConn
	s    *sockets
	side bool
	once sync.Once
}

func (c *countedConn) Close() error {
	err := c.PacketConn.Close()
	c.once.Do(func() {
		if c.side {
			time.Sleep(sideClose)
		}
		c.s.mu.Lock()
		c.s.open--
		c.s.mu.Unlock()
	})
	return err
}

// TestCloseEndsEverything: when Client.Close or Transport.Close returns,
// every socket the client opened is closed — the side probes' connections
// included — so nothing of the client is left to run, to log through the
// caller's Logf after the caller is gone (a side connection on a cut path
// logged "no other path works" through t.Logf after
// TestFailoverInFakeTime had ended, and the race detector reported it),
// or to hold a socket. Before, the probe goroutine closed the side
// connections when it saw the connection end, after Close had returned.
func TestCloseEndsEverything(t *testing.T) {
	for _, api := range []string{"Client", "Transport"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { closeEndsCase(t, api) })
		})
	}
}

func closeEndsCase(t *testing.T, api string) {
	n := memnet.New()
	socks := &sockets{n: n}
	roots := memServe(t, n, origin.Handler(nil), nil)
	cfg := memConfig(t, n, 3, Config{Logf: t.Logf}, roots)
	cfg.ListenPacket = socks.listen
	var close func() error
	if api == "Client" {
		c, err := Dial(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		close = c.Close
		if _, err := c.Get(context.Background(), "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
	} else {
		tr := &Transport{Config: cfg}
		close = tr.Close
		getBody(t, &http.Client{Transport: tr}, "https://"+memServer.String()+"/bytes/10")
	}
	time.Sleep(2 * time.Second) // the start-up sweep and later probes have their side connections
	if socks.stillOpen() <= 3 {
		t.Fatalf("%d sockets open: the test needs the side probes' connections", socks.stillOpen())
	}
	close()
	if open := socks.stillOpen(); open != 0 {
		t.Errorf("%d sockets still open when %s.Close returned", open, api)
		time.Sleep(time.Minute) // what was left running ends: a clean failure, not the bubble's deadlock panic
	}
}
