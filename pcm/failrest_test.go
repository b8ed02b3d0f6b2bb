package pcm

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestRedialElsewhereRestsNoCutShortPath: a failover's redial that wins
// on another path than the one its migration was probing stops that
// probe. Path 0 (active) and path 1 (the failover's first choice, on the
// round trip the start-up sweep measured) are cut together; the redial
// tries path 1 first too, and wins on path 2 (not validated) a dial
// stagger later.
//
//   - "cut short": path 1 is the fastest, its probe runs out its
//     validation wait (the floor, 250 ms), and the migration probes path
//     3 (validated, 110 ms) as the redial wins: path 3's probe, cut short
//     20 ms after it left, says nothing against it, and it stays live.
//     Before, it rested with path 1.
//   - "late": path 1 (200 ms) is probed first; the redial wins on path 2
//     (210 ms) 460 ms later, when path 1's probe, though not run out
//     (600 ms), is late (probeLateRTTs round trips): path 1 rests. No
//     path was visited: the server sends on path 0 (backToServersPathLocked
//     has nowhere to go).
func TestRedialElsewhereRestsNoCutShortPath(t *testing.T) {
	for _, tc := range []struct {
		name    string
		delays  [4]time.Duration // one way, from each path
		visit   []int            // the paths the connection visits first
		probed  []int            // the paths the migration probes in vain
		resting [4]bool
	}{
		{"cut short", [4]time.Duration{oneWay, 5 * time.Millisecond, oneWay, 100 * time.Millisecond}, []int{3, 0}, []int{1, 3}, [4]bool{true, true, false, false}},
		{"late", [4]time.Duration{oneWay, 190 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}, nil, []int{1}, [4]bool{true, true, false, false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { redialElsewhereCase(t, tc.delays, tc.visit, tc.probed, tc.resting) })
		})
	}
}

func redialElsewhereCase(t *testing.T, delays [4]time.Duration, visit, probed []int, resting [4]bool) {
	pastRealClock()
	n := memnet.New()
	var logs logCount
	roots := memServe(t, n, origin.Handler(nil), nil)
	// The start-up sweep measures every path; no later side probe (one
	// every 100 s) shows path 1 dead before the failover does.
	cfg := memConfig(t, n, 4, Config{Probes: Probes{PerSecond: 0.01}, Logf: logs.logf}, roots)
	for i, d := range delays {
		n.SetDelay(memPath(i), d)
	}
	c := dialConfig(t, cfg)
	time.Sleep(time.Second) // the sweep's answers are in
	visitPaths(t, c, visit...)
	if c.Active() != 0 {
		t.Fatalf("active %d, want 0", c.Active())
	}
	n.SetDrop(memPath(0), true)
	n.SetDrop(memPath(1), true)
	res, err := c.GetOn(context.Background(), 0, "/bytes/100", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Path != 2 || c.Active() != 2 {
		t.Fatalf("the request ended on path %d, the connection on %d; want both on path 2 (the redial's); log:\n%s", res.Path, c.Active(), logs.String())
	}
	for p := range 4 {
		want := 0
		for _, q := range probed {
			if q == p {
				want = 1
			}
		}
		if got := logs.count(fmt.Sprintf("failover to p%d failed", p)); got != want {
			t.Fatalf("%d failed probes of path %d, want %d; log:\n%s", got, p, want, logs.String())
		}
	}
	if r := c.Resting(); [4]bool(r) != resting {
		t.Errorf("resting %v, want %v; log:\n%s", r, resting, logs.String())
	}
}

// TestFailoverRestsNoPathAnsweredMeanwhile: a failover's probe of a path
// that answers meanwhile rests it no more (the evidence rule:
// silenceTellsLocked). The paths and the cut are redialElsewhereCase's
// "late" row (path 0 cut, the redial wins on path 2 while path 1's probe
// is late), but path 1 is alive: only the client's sockets it had not
// used before the failover find it silent (the migration's probe, the
// redial's handshake: a burst, or a middlebox that drops new flows),
// while its side connection carries a side probe asked as the failover
// begins, answered within its round trip (380 ms), before the redial
// wins (460 ms). Path 1 must stay live; it rested before. The "late" row
// of TestRedialElsewhereRestsNoCutShortPath is the other half: a path
// that answers nothing still rests, so a failover that never rests fails
// that row and the rule before fails this test. Fake time.
func TestFailoverRestsNoPathAnsweredMeanwhile(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		pastRealClock()
		n := memnet.New()
		f := &newFlowDrop{addr: memPath(1), seen: map[uint16]bool{}}
		var logs logCount
		roots := memServe(t, n, origin.Handler(nil), f.wrap)
		var c *Client
		logf := func(format string, args ...any) {
			logs.logf(format, args...)
			if strings.HasSuffix(fmt.Sprintf(format, args...), "; failing over") {
				f.armed.Store(true)
				c.prober.Ask(1)
			}
		}
		cfg := memConfig(t, n, 4, Config{Probes: Probes{PerSecond: 0.01}, Logf: logf}, roots)
		for i, d := range [4]time.Duration{oneWay, 190 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond} {
			n.SetDelay(memPath(i), d)
		}
		c = dialConfig(t, cfg)
		time.Sleep(time.Second) // the sweep's answers are in
		n.SetDrop(memPath(0), true)
		if _, err := c.GetOn(context.Background(), 0, "/bytes/100", nil); err != nil {
			t.Fatal(err)
		}
		if logs.count("failover to p1 failed") != 1 || c.Active() != 2 {
			t.Fatalf("want path 1's probe failed and the connection on path 2 (the redial's), on %d; log:\n%s", c.Active(), logs.String())
		}
		if r := c.Resting(); r[1] {
			t.Errorf("resting %v: path 1 rested though its side probe was answered during the failover; log:\n%s", r, logs.String())
		}
	})
}

// newFlowDrop wraps a server's socket: once armed, it drops every
// datagram from or to addr whose client port it had not seen before.
type newFlowDrop struct {
	addr  netip.Addr
	armed atomic.Bool
	mu    sync.Mutex
	seen  map[uint16]bool
}

func (f *newFlowDrop) wrap(pc net.PacketConn) net.PacketConn { return newFlowConn{pc, f} }

// drops says whether a datagram from or to a drops, and notes a's port
// while not armed.
func (f *newFlowDrop) drops(a net.Addr) bool {
	ap := a.(*net.UDPAddr).AddrPort()
	if ap.Addr().Unmap() != f.addr {
		return false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.armed.Load() {
		f.seen[ap.Port()] = true
		return false
	}
	return !f.seen[ap.Port()]
}

type newFlowConn struct {
	net.PacketConn
	f *newFlowDrop
}

func (c newFlowConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		n, addr, err := c.PacketConn.ReadFrom(b)
		if err != nil || !c.f.drops(addr) {
			return n, addr, err
		}
	}
}

func (c newFlowConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if c.f.drops(addr) {
		return len(b), nil
	}
	return c.PacketConn.WriteTo(b, addr)
}
