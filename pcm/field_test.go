package pcm

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/pathsel"
)

// stickyConn is the server's socket of a server that follows a client only
// to an address it has never seen, and otherwise keeps sending to the last
// new one — what picoquic and qh3 do (pcm/README.md). It counts the bytes
// it sent to each client IP: the ground truth of which path carried what.
type stickyConn struct {
	net.PacketConn
	mu   sync.Mutex
	seen map[netip.AddrPort]bool
	last net.Addr
	sent map[netip.Addr]int64
}

func (s *stickyConn) WriteTo(b []byte, to net.Addr) (int, error) {
	ap, _ := addrPort(to)
	s.mu.Lock()
	if !s.seen[ap] {
		s.seen[ap], s.last = true, to
	}
	dst := s.last
	da, _ := addrPort(dst)
	s.sent[da.Addr()] += int64(len(b))
	s.mu.Unlock()
	return s.PacketConn.WriteTo(b, dst)
}

func (s *stickyConn) snapshot() map[netip.Addr]int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.sent)
}

// mostBetween is the address the server sent the most to between two
// snapshots.
func mostBetween(before, after map[netip.Addr]int64) netip.Addr {
	var best netip.Addr
	var most int64
	for a, n := range after {
		if d := n - before[a]; d > most {
			best, most = a, d
		}
	}
	return best
}

// Against a server that does not follow switches, every response is
// credited to the path the server really sent it on (checked against the
// server's own count), a response that came back on another path than its
// request's gives the selector no sample, the client counts them and,
// after two, stays on the path the server sends to — where every later
// response is credited again. Fake time, in-memory network.
func TestNotFollowingServer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var sticky *stickyConn
		roots := memServe(t, n, origin.Handler(nil), func(c net.PacketConn) net.PacketConn {
			sticky = &stickyConn{PacketConn: c, seen: map[netip.AddrPort]bool{}, sent: map[netip.Addr]int64{}}
			return sticky
		})
		var warnings []string
		var wmu sync.Mutex
		cfg := memConfig(t, n, 3, Config{Selector: polling(3), Logf: func(f string, a ...any) {
			wmu.Lock()
			warnings = append(warnings, fmt.Sprintf(f, a...))
			wmu.Unlock()
		}}, roots)
		c := dialConfig(t, cfg)
		ctx := context.Background()
		unfollowed := 0
		for i := range 12 {
			before := sticky.snapshot()
			var body strings.Builder
			res, err := c.Get(ctx, "/bytes/20000", &body)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			checkPattern(t, []byte(body.String()), 20000)
			truth := mostBetween(before, sticky.snapshot())
			t.Logf("request %d: chosen %d, sent on %d, carried by %d (server sent to %v), credited %v", i, res.Chosen, res.Path, res.Carrier, truth, res.Credited)
			if res.Carrier < 0 || c.Paths()[res.Carrier].Addr != truth {
				t.Errorf("request %d: credited to carrier %d, but the server sent it to %v", i, res.Carrier, truth)
			}
			if res.Credited != res.Followed() {
				t.Errorf("request %d: credited %v, sent on %d, carried by %d", i, res.Credited, res.Path, res.Carrier)
			}
			if !res.Followed() {
				unfollowed++
			}
		}
		st := c.Stats()
		if unfollowed != notFollowedLimit || st.Unfollowed != notFollowedLimit || st.Pinned < 0 {
			t.Errorf("%d responses unfollowed, stats %+v: want %d and a pinned path", unfollowed, st, notFollowedLimit)
		}
		if len(warnings) == 0 || !strings.Contains(strings.Join(warnings, "\n"), "did not follow") {
			t.Errorf("no warning names the unfollowed switch: %q", warnings)
		}
	})
}

// A server that follows (quic-go): every response is carried by the path
// its request was sent on, and credited.
func TestFollowingServerCredited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 3, Config{Selector: polling(3)})
		for i := range 9 {
			res, err := c.Get(context.Background(), "/bytes/20000", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Path != i%3 || res.Carrier != res.Path || !res.Credited {
				t.Errorf("request %d: chosen %d, sent on %d, carried by %d, credited %v", i, i%3, res.Path, res.Carrier, res.Credited)
			}
		}
		if st := c.Stats(); st.Unfollowed != 0 || st.Pinned != -1 {
			t.Errorf("stats %+v", st)
		}
	})
}

// slowHandler is hetquic's origin plus /slowhead, whose head comes after
// 3 s: a long poll, or a handler that answers only after its work.
func slowHandler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("/slowhead", func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(3 * time.Second)
		io.WriteString(w, "late")
	})
	return mux
}

func memTransport(t *testing.T, n *memnet.Network, h http.Handler, cfg Config) (*Transport, *http.Client, string) {
	roots := memServe(t, n, h, nil)
	tr := &Transport{Config: memConfig(t, n, 3, cfg, roots)}
	t.Cleanup(func() { tr.Close() })
	return tr, &http.Client{Transport: tr}, "https://" + memServer.String()
}

func getBody(t *testing.T, hc *http.Client, url string) []byte {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d, %v", url, resp.StatusCode, err)
	}
	return b
}

// A response whose head takes 3 s holds no other request: quick GETs
// meanwhile take one round trip (the connection does not move while a
// request is in flight, so they wait for no switch either).
func TestSlowHeadHoldsNoOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		_, hc, base := memTransport(t, n, slowHandler(), Config{Strategy: pathsel.Config{Strategy: pathsel.Polling}})
		getBody(t, hc, base+"/bytes/10") // dial
		slow := make(chan time.Duration)
		go func() {
			start := time.Now()
			if b := getBody(t, hc, base+"/slowhead"); string(b) != "late" {
				t.Errorf("slow body %q", b)
			}
			slow <- time.Since(start)
		}()
		// The slow request is on its way; it switched paths first (the
		// selector polls), and the first quick GET comes during that switch.
		time.Sleep(5 * time.Millisecond)
		rtt := 2 * oneWay
		for i := range 5 {
			start := time.Now()
			checkPattern(t, getBody(t, hc, fmt.Sprintf("%s/bytes/%d", base, 1000+i)), 1000+i)
			d := time.Since(start)
			t.Logf("quick GET %d: %v", i, d)
			// At most one switch (its probe's round trip and the move)
			// before the GET's own round trip; after it, the round trip.
			if limit := map[bool]time.Duration{true: 2 * rtt, false: rtt}[i == 0]; d > limit {
				t.Errorf("quick GET %d took %v beside a slow head (want ≤ %v; one round trip is %v)", i, d, limit, rtt)
			}
		}
		if d := <-slow; d < 3*time.Second {
			t.Errorf("the slow head came after %v", d)
		}
	})
}

// After the connection ended — idle timeout, or the server closed it — the
// next request dials again and succeeds, at once: the dead connection is
// not probed and no path is blamed for it.
func TestTransportRedials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		pair, err := selfsigned.New()
		if err != nil {
			t.Fatal(err)
		}
		stop := memServePair(t, n, origin.Handler(nil), nil, pair)
		cfg := memConfig(t, n, 3, Config{QUIC: &quic.Config{MaxIdleTimeout: 2 * time.Second}}, &tls.Config{RootCAs: pair.Pool})
		tr := &Transport{Config: cfg}
		defer tr.Close()
		hc := &http.Client{Transport: tr}
		url := "https://" + memServer.String() + "/bytes/100"
		current := func() *Client {
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.origins[memServer.String()].c
		}
		checkPattern(t, getBody(t, hc, url), 100)
		first := current()
		time.Sleep(5 * time.Second) // past the idle timeout
		if first.Err() == nil {
			t.Fatal("the connection outlived its idle timeout")
		}
		start := time.Now()
		checkPattern(t, getBody(t, hc, url), 100)
		second := current()
		// A dial is one round trip, the request another (and a switch's probe).
		if d := time.Since(start); d >= time.Second || second == first {
			t.Errorf("after the idle timeout: %v, new connection %v", d, second != first)
		}
		for i, r := range second.Resting() {
			if r {
				t.Errorf("path %d rests after a redial", i)
			}
		}
		// The server closes: the next request goes on a new connection
		// (the Client's own redial, or a new Client's).
		old := second.s()
		stop()
		memServePair(t, n, origin.Handler(nil), nil, pair)
		synctest.Wait()
		checkPattern(t, getBody(t, hc, url), 100)
		if current().s() == old {
			t.Error("no new connection after the server closed the old one")
		}
	})
}

// A dial that hangs (an origin that never answers) holds up no other
// origin, and concurrent first requests to one origin share one dial.
func TestTransportDials(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var binds atomic.Int32
		roots := memServe(t, n, origin.Handler(nil), nil)
		// Probes off: the start-up sweep's side connections bind sockets
		// of their own, and this counts the dials of requests.
		cfg := memConfig(t, n, 3, Config{QUIC: &quic.Config{HandshakeIdleTimeout: 3 * time.Second}, Probes: Probes{Off: true}}, roots)
		listen := cfg.ListenPacket
		cfg.ListenPacket = func(ip net.IP) (net.PacketConn, error) { binds.Add(1); return listen(ip) }
		tr := &Transport{Config: cfg}
		defer tr.Close()
		hc := &http.Client{Transport: tr}
		hung := make(chan error)
		go func() {
			_, err := hc.Get("https://10.0.0.99:443/bytes/1") // nobody there
			hung <- err
		}()
		synctest.Wait()
		binds.Store(0)
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				checkPattern(t, getBody(t, hc, fmt.Sprintf("https://%s/bytes/%d", memServer, 100+i)), 100+i)
			})
		}
		wg.Wait()
		select {
		case err := <-hung:
			t.Fatalf("the hung dial ended before the other origin was served: %v", err)
		default:
		}
		// One dial: a socket per path and the handshake's own.
		if got := binds.Load(); got != 4 {
			t.Errorf("8 first requests bound %d sockets, want one dial's 4", got)
		}
		if err := <-hung; err == nil {
			t.Error("a request to an origin that never answers succeeded")
		}
	})
}

// 32 goroutines × 20 requests through one Transport over three loopback
// paths: every body intact, every measurement credited to the path that
// carried it. Run under -race, it is the check that Client is safe for
// concurrent use.
func TestConcurrentRequests(t *testing.T) {
	srv := startOrigin(t)
	tr := &Transport{Config: Config{ServerName: "localhost", TLS: srv.pool, Paths: loopbackPaths(3)}}
	defer tr.Close()
	hc := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	base := "https://" + srv.addr
	var wg sync.WaitGroup
	var credited, moved atomic.Int32
	for g := range 32 {
		wg.Go(func() {
			for i := range 20 {
				size := 500 + 37*g + i
				resp, err := hc.Get(fmt.Sprintf("%s/bytes/%d", base, size))
				if err != nil {
					t.Errorf("goroutine %d request %d: %v", g, i, err)
					return
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Errorf("goroutine %d request %d: %v", g, i, err)
					return
				}
				checkPattern(t, b, size)
				res, ok := ResultOf(resp)
				if !ok || res.Credited && !res.Followed() {
					t.Errorf("goroutine %d request %d: result %+v (ok %v)", g, i, res, ok)
				}
				if res.Credited {
					credited.Add(1)
				}
				if res.Chosen != res.Path {
					moved.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("640 requests: %d credited, %d not on the chosen path (others were in flight)", credited.Load(), moved.Load())
	if credited.Load() == 0 {
		t.Error("no request was credited")
	}
}

// Client.RoundTrip refuses a URL of another origin, so that a redirect
// cannot send a request to the wrong server; bad targets and URLs get
// clear errors.
func TestRefusesOtherOriginsAndBadTargets(t *testing.T) {
	srv := startOrigin(t)
	c := dial(t, srv, Config{})
	_, port, _ := net.SplitHostPort(srv.addr)
	for _, u := range []string{"https://other.example:" + port + "/bytes/1", "http://plain.example/bytes/1", "https://127.0.0.1:1/bytes/1"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		if _, err := c.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "origin") {
			t.Errorf("%s: %v", u, err)
		}
	}
	for _, u := range []string{"https://localhost:" + port + "/bytes/3", "https://127.0.0.1:" + port + "/bytes/3"} {
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		resp, err := c.RoundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		checkPattern(t, b, 3)
	}
	if _, err := c.Get(context.Background(), "bytes/14", nil); err == nil || !strings.Contains(err.Error(), `"bytes/14"`) {
		t.Errorf("Get(bytes/14): %v", err)
	}
}

// A local path whose address cannot be bound (its interface is down) is
// left out with a warning; the others carry the requests.
func TestDownLocalPathSkipped(t *testing.T) {
	srv := startOrigin(t)
	var warned atomic.Bool
	down := netip.MustParseAddr("192.0.2.1") // TEST-NET-1: on no interface
	paths := append([]LocalPath{{Name: "down", Addr: down}}, loopbackPaths(2)...)
	c := dial(t, srv, Config{Paths: paths, Logf: func(f string, a ...any) {
		if strings.Contains(fmt.Sprintf(f, a...), "down left out") {
			warned.Store(true)
		}
	}})
	if got := c.Paths(); len(got) != 2 || got[0].Name != "p0" {
		t.Errorf("paths %v, want p0 and p1", got)
	}
	if !warned.Load() {
		t.Error("no warning about the path left out")
	}
	for i := range 4 {
		getPattern(context.Background(), t, c, i, 1000)
	}
	_, err := Dial(context.Background(), Config{Server: srv.addr, Paths: paths[:1]})
	if err == nil || !strings.Contains(err.Error(), "no local path") {
		t.Errorf("dial with only a down path: %v", err)
	}
}

// Paths come and go while the client runs: an added path is used, a
// removed one never again (the connection first moves off it), and the
// indices stay those of the paths.
func TestAddRemovePathAtRunTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		c := memDial(t, n, 2, Config{Selector: polling(2)})
		ctx := context.Background()
		n.SetDelay(memPath(2), oneWay)
		i, err := c.AddPath(LocalPath{Name: "p2", Addr: memPath(2)})
		if err != nil || i != 2 {
			t.Fatalf("AddPath: %d, %v", i, err)
		}
		used := map[int]bool{}
		for range 6 {
			res, err := c.Get(ctx, "/bytes/3000", nil)
			if err != nil {
				t.Fatal(err)
			}
			used[res.Path] = res.Credited
		}
		if !used[2] {
			t.Errorf("the added path carried no credited request: %v", used)
		}
		active := c.Active()
		if err := c.RemovePath(active); err != nil {
			t.Fatal(err)
		}
		if c.Active() == active {
			t.Fatal("the connection stayed on the removed path")
		}
		for range 6 {
			res, err := c.Get(ctx, "/bytes/3000", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Path == active {
				t.Errorf("a request went on removed path %d", active)
			}
		}
		if err := c.RemovePath(active); err == nil {
			t.Error("removing a removed path succeeded")
		}
	})
	srv := startOrigin(t)
	c := dial(t, srv, Config{Rebind: true})
	if _, err := c.AddPath(LocalPath{Name: "x", Addr: netip.MustParseAddr("127.0.0.14")}); err == nil || !strings.Contains(err.Error(), "rebind") {
		t.Errorf("AddPath in rebind mode: %v", err)
	}
}
