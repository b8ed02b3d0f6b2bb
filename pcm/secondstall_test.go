package pcm

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/netip"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestNoSecondStallAfterFailover: after a failover off a black-holed
// path, that path gets no second stall verdict, and nothing dialled on
// it afterwards (a side probe's connection, a revival check, a redial)
// holds its socket longer than a revival check's handshake may take —
// through the path's rest, its side probe and its revival checks. A side
// probe's connection used to find the stall itself as its probe of the
// cut path timed out (its stall timeout was the probe's), and redialled
// the one path it had: a handshake into the black hole that ran until
// the client closed (TestLoadCutQuicGo showed it against quic-go, at
// 3.1 s after the failover; here at 3.9 s).
func TestNoSecondStallAfterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, cfg, logs, socks := recordedMem(t, 3)
		c := dialConfig(t, cfg)
		base := "https://" + memServer.String()
		steadyGets(t, c, base, 2*time.Second, time.Hour, nil)
		cut := -1
		var failedOver time.Time
		r := steadyGets(t, c, base, 8*time.Second, 100*time.Millisecond, func() {
			cut = c.Active()
			n.SetDrop(memPath(cut), true)
			failedOver = time.Now()
		})
		if r.failed > 0 {
			t.Fatalf("%d of %d GETs failed across the cut: %v", r.failed, r.sent, firstErrs(r.errs))
		}
		name := c.Paths()[cut].Name
		if got := logs.count(fmt.Sprintf("path %s stalled", name), "failing over"); got != 1 {
			t.Errorf("%d stall verdicts on the cut path %s, want 1; the log:\n%s", got, name, logs.String())
		}
		bound := revivalHandshakes * c.cfg.ProbeTimeout
		for _, s := range socks.openedAfter(memPath(cut), failedOver) {
			if s.held > bound {
				t.Errorf("a socket on the cut path, opened %v after the cut, was held %v (closed: %v), want at most %v",
					s.opened.Sub(failedOver), s.held, s.closed, bound)
			}
		}
	})
}

// TestDeadPathSideProbeLeavesNothing: side probes of a path that went
// dead under an open side connection each measure +Inf at the probe
// timeout, find no stall and dial no new connection of their own, and
// leave no socket open on the path: the connection whose probe went
// unanswered is closed, and each later probe's dial ends with its
// timeout. Before, the side connection stayed open (until quic-go's idle
// timeout), and its stall detector, whose timeout was the probe's, could
// fire as a probe timed out and redial the dead path until the client
// closed (TestNoSecondStallAfterFailover).
func TestDeadPathSideProbeLeavesNothing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n, cfg, logs, socks := recordedMem(t, 2)
		const timeout = time.Second // Probes.Timeout's default
		p, err := NewSideProber(cfg, timeout, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		ctx := context.Background()
		if got := p.Probe(ctx, 1); math.IsInf(got, 1) {
			t.Fatal("the live path measured +Inf")
		}
		n.SetDrop(memPath(1), true)
		for i := range 4 {
			time.Sleep(time.Second) // idle between probes, as a path's probes are
			start := time.Now()
			if got := p.Probe(ctx, 1); !math.IsInf(got, 1) {
				t.Errorf("probe %d of the dead path measured %v ms, want +Inf", i, got)
			}
			if d := time.Since(start); d != timeout {
				t.Errorf("probe %d of the dead path took %v, want the timeout %v", i, d, timeout)
			}
		}
		if got := logs.count("stalled"); got > 0 {
			t.Errorf("%d stall lines from side connections:\n%s", got, logs.String())
		}
		if open := socks.open(memPath(1)); open > 0 {
			t.Errorf("%d sockets still open on the dead path after its probes ended", open)
		}
	})
}

// recordedMem starts, in a synctest bubble moved past the real clock
// (pastRealClock), a memnet network serving origin, and returns it with a
// config of k paths over it whose log lines and sockets are recorded.
func recordedMem(t *testing.T, k int) (*memnet.Network, Config, *logCount, *socketLog) {
	pastRealClock()
	n := memnet.New()
	logs := &logCount{}
	socks := &socketLog{listen: n.ListenIP}
	roots := memServe(t, n, origin.Handler(nil), nil)
	cfg := memConfig(t, n, k, Config{Logf: logs.logf}, roots)
	cfg.ListenPacket = socks.listenPacket
	return n, cfg, logs, socks
}

// socketLog records when each socket a client opens is opened and
// closed, by local address.
type socketLog struct {
	listen func(net.IP) (net.PacketConn, error)
	mu     sync.Mutex
	socks  []*loggedSocket
}

type loggedSocket struct {
	net.PacketConn
	log            *socketLog
	addr           netip.Addr
	opened, closed time.Time
}

func (l *socketLog) listenPacket(ip net.IP) (net.PacketConn, error) {
	pc, err := l.listen(ip)
	if err != nil {
		return nil, err
	}
	a, _ := netip.AddrFromSlice(ip)
	s := &loggedSocket{PacketConn: pc, log: l, addr: a.Unmap(), opened: time.Now()}
	l.mu.Lock()
	l.socks = append(l.socks, s)
	l.mu.Unlock()
	return s, nil
}

func (s *loggedSocket) Close() error {
	s.log.mu.Lock()
	if s.closed.IsZero() {
		s.closed = time.Now()
	}
	s.log.mu.Unlock()
	return s.PacketConn.Close()
}

// socketLife is a socket's opening and how long it was held (until now
// when it is still open).
type socketLife struct {
	opened time.Time
	held   time.Duration
	closed bool
}

// openedAfter is the lives of the sockets on addr opened after t.
func (l *socketLog) openedAfter(addr netip.Addr, t time.Time) []socketLife {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []socketLife
	for _, s := range l.socks {
		if s.addr != addr || s.opened.Before(t) {
			continue
		}
		end := s.closed
		if end.IsZero() {
			end = time.Now()
		}
		out = append(out, socketLife{opened: s.opened, held: end.Sub(s.opened), closed: !s.closed.IsZero()})
	}
	return out
}

// open is how many sockets on addr are open.
func (l *socketLog) open(addr netip.Addr) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, s := range l.socks {
		if s.addr == addr && s.closed.IsZero() {
			n++
		}
	}
	return n
}
