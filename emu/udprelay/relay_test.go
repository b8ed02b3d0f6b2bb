package udprelay

import (
	"bytes"
	"net"
	"net/netip"
	"runtime"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/internal/leakcheck"
	"github.com/hetquic/hetquic/scenario"
)

func parseScenario(t testing.TB, text string) *scenario.Scenario {
	t.Helper()
	s, err := scenario.Load(fstest.MapFS{"s.yaml": {Data: []byte(text)}}, "s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// echoServer echoes every datagram and records the source addresses seen.
type echoServer struct {
	conn *net.UDPConn
	mu   sync.Mutex
	seen map[netip.AddrPort]int
	done chan struct{}
}

func startEcho(t testing.TB) *echoServer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &echoServer{conn: conn, seen: map[netip.AddrPort]int{}, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		buf := make([]byte, 65536)
		for {
			n, src, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			s.mu.Lock()
			s.seen[src]++
			s.mu.Unlock()
			conn.WriteToUDPAddrPort(buf[:n], src)
		}
	}()
	t.Cleanup(func() { conn.Close(); <-s.done })
	return s
}

func (s *echoServer) addr() netip.AddrPort { return s.conn.LocalAddr().(*net.UDPAddr).AddrPort() }

func (s *echoServer) sources() map[netip.AddrPort]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[netip.AddrPort]int{}
	for k, v := range s.seen {
		out[k] = v
	}
	return out
}

const threePaths = `
name: relay-test
paths:
  - name: fast
    up: {delay_ms: 5}
    down: {delay_ms: 5}
  - name: slow
    up: {delay_ms: 20}
    down: {delay_ms: 30}
  - name: lossy
    up: {loss: 1}
`

// replyWait is how long a test waits for a reply that must come: far
// above the paths' delays, so that only a loaded machine's delay, never the
// relay's, is in the margin. A reply that must not come is awaited for
// noReplyWait: a late one would only make such a check pass, never fail.
const (
	replyWait   = 10 * time.Second
	noReplyWait = 300 * time.Millisecond
)

func roundTrip(t *testing.T, c *net.UDPConn, to netip.AddrPort, msg []byte, wait time.Duration) (time.Duration, bool) {
	t.Helper()
	start := time.Now()
	if _, err := c.WriteToUDPAddrPort(msg, to); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(wait))
	buf := make([]byte, 2048)
	n, _, err := c.ReadFromUDPAddrPort(buf)
	if err != nil {
		return 0, false
	}
	if !bytes.Equal(buf[:n], msg) {
		t.Fatalf("echo %q, want %q", buf[:n], msg)
	}
	return time.Since(start), true
}

func TestRelayPaths(t *testing.T) {
	echo := startEcho(t)
	before := runtime.NumGoroutine()
	r, err := Loopback(parseScenario(t, threePaths), echo.addr(), 1)
	if err != nil {
		t.Fatal(err)
	}
	conns := make([]*net.UDPConn, 3)
	for i := range conns {
		if conns[i], err = r.ListenPath(i); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	// A round trip is never shorter than the path's delays (the relay holds
	// each packet for them); how much longer is the machine's load, which
	// a test does not bound (emu measure reports the relay's accuracy).
	tests := []struct {
		path int
		min  time.Duration
		lost bool
	}{
		{0, 10 * time.Millisecond, false},
		{1, 50 * time.Millisecond, false},
		{2, 0, true},
	}
	for _, tt := range tests {
		wait := replyWait
		if tt.lost {
			wait = noReplyWait
		}
		rtt, ok := roundTrip(t, conns[tt.path], r.Addr(), []byte("hello"), wait)
		if ok == tt.lost {
			t.Errorf("path %d: delivered=%v, want %v", tt.path, ok, !tt.lost)
			continue
		}
		if ok && rtt < tt.min {
			t.Errorf("path %d: RTT %v, shorter than its delays (%v)", tt.path, rtt, tt.min)
		}
	}
	// The server saw one distinct address per delivered path.
	if src := echo.sources(); len(src) != 2 {
		t.Errorf("server saw %d client addresses, want 2: %v", len(src), src)
	}

	// Unknown source: counted, dropped, no reply.
	stranger, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 99)})
	if err != nil {
		t.Fatal(err)
	}
	defer stranger.Close()
	if _, ok := roundTrip(t, stranger, r.Addr(), []byte("who"), noReplyWait); ok {
		t.Error("an unknown source got a reply")
	}
	// Oversized and empty datagrams: counted as malformed, never forwarded.
	conns[0].WriteToUDPAddrPort(make([]byte, emu.DefaultMaxPacket+1), r.Addr())
	conns[0].WriteToUDPAddrPort(nil, r.Addr())
	conns[0].WriteToUDPAddrPort(make([]byte, 9000), r.Addr())
	if _, ok := roundTrip(t, conns[0], r.Addr(), []byte("still alive"), replyWait); !ok {
		t.Error("relay stopped forwarding after malformed packets")
	}
	checkFlowPaths(t, r, echo)
	if st := r.Stats(); st.UnknownSource != 1 {
		t.Errorf("unknown_source %d, want 1", st.UnknownSource)
	}
	es := r.Engine().Stats()
	if got := es[0].Up.Dropped[emu.CauseMalformed]; got != 3 {
		t.Errorf("malformed drops %d, want 3", got)
	}
	if got := es[2].Up.Dropped[emu.CauseLoss]; got != 1 {
		t.Errorf("loss drops on lossy path %d, want 1", got)
	}
	if got := es[1].Down.PacketsOut; got != 1 {
		t.Errorf("slow path down packets_out %d, want 1", got)
	}

	r.Close()
	r.Close() // idempotent
	waitGoroutines(t, before)
}

// checkFlowPaths checks that each address the server saw names its path
// (TestRelayPaths: path 0 sent two delivered datagrams, path 1 one).
func checkFlowPaths(t *testing.T, r *Relay, echo *echoServer) {
	t.Helper()
	for src, n := range echo.sources() {
		if got, ok := r.FlowPath(src); !ok || got != 2-n {
			t.Errorf("FlowPath(%v) = %d, %v; it sent %d datagrams, so path %d", src, got, ok, n, 2-n)
		}
	}
	if _, ok := r.FlowPath(r.Addr()); ok {
		t.Error("FlowPath names a path for the relay's own listen address")
	}
}

// churnIdle is TestRelayChurn's flow idle timeout: short, so that the
// flows expire soon after the last reply, and far longer than a reply
// takes on a loaded machine, so that no flow expires while its reply is on
// the way.
const churnIdle = time.Second

// TestRelayChurn opens many client addresses, lets them expire, and checks
// that nothing is left.
func TestRelayChurn(t *testing.T) {
	echo := startEcho(t)
	before := runtime.NumGoroutine()
	s := parseScenario(t, "name: churn\npaths:\n  - name: a\n  - name: b\n")
	r, err := New(Config{
		Scenario: s, Server: echo.addr(),
		Listen:      netip.MustParseAddrPort("127.0.0.1:0"),
		Paths:       LoopbackPathAddrs(2),
		IdleTimeout: churnIdle,
		MaxFlows:    40,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 60 {
		c, err := r.ListenPath(i % 2)
		if err != nil {
			t.Fatal(err)
		}
		// The first 40 fit under MaxFlows and must get their reply; the
		// others may be refused, unless earlier flows have expired.
		wait := noReplyWait
		if i < 40 {
			wait = replyWait
		}
		_, ok := roundTrip(t, c, r.Addr(), []byte("x"), wait)
		c.Close()
		if !ok && i < 40 {
			t.Fatalf("client %d: no reply", i)
		}
	}
	deadline := time.Now().Add(30 * churnIdle)
	for r.Stats().FlowsActive > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	st := r.Stats()
	if st.FlowsActive != 0 || st.FlowsExpired != st.FlowsOpened {
		t.Errorf("after idle expiry: %+v", st)
	}
	if st.FlowsOpened < 40 {
		t.Errorf("flows_opened %d, want ≥ 40", st.FlowsOpened)
	}
	// The flows' goroutines end; only the relay's own (2) and the
	// engine's (2 per path) remain.
	waitGoroutines(t, before+2+2*2)
	r.Close()
	waitGoroutines(t, before)
}

func waitGoroutines(t *testing.T, want int) {
	t.Helper()
	if n, stacks := leakcheck.Wait(want, replyWait); n > want {
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, want, stacks)
	}
}

func TestRelayBadConfig(t *testing.T) {
	s := parseScenario(t, "name: b\npaths:\n  - name: a\n  - name: b\n")
	server := netip.MustParseAddrPort("127.0.0.1:9")
	for _, cfg := range []Config{
		{Scenario: s, Server: server, Paths: LoopbackPathAddrs(1)},
		{Scenario: s, Server: server, Paths: []netip.Addr{FirstPathAddr, FirstPathAddr}},
		{Scenario: s, Paths: LoopbackPathAddrs(2)},
	} {
		if r, err := New(cfg); err == nil {
			r.Close()
			t.Errorf("New(%+v) succeeded", cfg)
		}
	}
}
