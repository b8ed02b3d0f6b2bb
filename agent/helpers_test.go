package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/internal/leakcheck"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
)

const testToken = "test-token-0123456789abcdef"

// impairConn is a test-only path impairment on a net.PacketConn: it drops
// every datagram from and to the addresses in drop (a dead path), and, when
// rate > 0, delivers what it reads no faster than rate bytes per second
// after delay (a bottleneck link, downlink direction).
type impairConn struct {
	net.PacketConn
	mu   sync.Mutex
	drop map[netip.Addr]bool

	rate  float64 // bytes per second; 0: no shaping
	delay time.Duration
	queue chan shaped
	done  chan struct{}
	once  sync.Once
}

type shaped struct {
	b    []byte
	addr net.Addr
	at   time.Time
	err  error
}

func newImpair(pc net.PacketConn) *impairConn {
	return &impairConn{PacketConn: pc, drop: map[netip.Addr]bool{}, done: make(chan struct{})}
}

// shape makes the connection a link of rate bytes/s and one-way delay d
// for what it receives; queue bounds the packets waiting (tail drop).
func (d *impairConn) shape(rate float64, delay time.Duration, queue int) {
	d.rate, d.delay = rate, delay
	q := make(chan shaped, queue)
	d.mu.Lock() // a socket in use may be shaped (ReadFrom reads queue under mu)
	d.queue = q
	d.mu.Unlock()
	go d.pump()
}

// shapedListen is a ClientConfig.ListenPacket whose path sockets are
// bottleneck links (downlink), each as link(ip) says.
func shapedListen(link func(ip net.IP) linkSpec) func(net.IP) (net.PacketConn, error) {
	return func(ip net.IP) (net.PacketConn, error) {
		pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		if err != nil {
			return nil, err
		}
		ic := newImpair(pc)
		l := link(ip)
		ic.shape(l.rate, l.delay, 64)
		return ic, nil
	}
}

func (d *impairConn) pump() {
	var next time.Time
	for {
		buf := make([]byte, 2048)
		n, addr, err := d.PacketConn.ReadFrom(buf)
		now := time.Now()
		if next.Before(now) {
			next = now
		}
		next = next.Add(time.Duration(float64(n) / d.rate * float64(time.Second)))
		select {
		case d.queue <- shaped{buf[:n], addr, next.Add(d.delay), err}:
		default: // queue full: tail drop
		}
		if err != nil {
			return
		}
	}
}

func (d *impairConn) dropped(addr net.Addr) bool {
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.drop[ua.AddrPort().Addr().Unmap()]
}

func (d *impairConn) ReadFrom(b []byte) (int, net.Addr, error) {
	for {
		var (
			n    int
			addr net.Addr
			err  error
		)
		d.mu.Lock()
		q := d.queue
		d.mu.Unlock()
		if q != nil {
			select {
			case p := <-q:
				if w := time.Until(p.at); w > 0 {
					time.Sleep(w)
				}
				n, addr, err = copy(b, p.b), p.addr, p.err
			case <-d.done:
				return 0, nil, net.ErrClosed
			}
		} else {
			n, addr, err = d.PacketConn.ReadFrom(b)
		}
		if err != nil || !d.dropped(addr) {
			return n, addr, err
		}
	}
}

func (d *impairConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if d.dropped(addr) {
		return len(b), nil
	}
	return d.PacketConn.WriteTo(b, addr)
}

func (d *impairConn) Close() error {
	d.once.Do(func() { close(d.done) })
	return d.PacketConn.Close()
}

func (d *impairConn) setDrop(a netip.Addr, on bool) {
	d.mu.Lock()
	d.drop[a] = on
	d.mu.Unlock()
}

// testUpstream is an app-server: origin's /bytes and /echo over HTTP/1.1,
// plus /slow (answers after 1.5 s), /up (an upload's length and SHA-256)
// and /nocache; it counts requests.
type testUpstream struct {
	*httptest.Server
	hostport string
	requests atomic.Int64
	paths    sync.Map // path → *atomic.Int64
}

func startUpstream(t testing.TB) *testUpstream {
	t.Helper()
	u := &testUpstream{}
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(1500 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		io.WriteString(w, "slow but alive")
	})
	mux.HandleFunc("/fresh", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		io.WriteString(w, "fresh content "+strings.Repeat("x", 5000))
	})
	mux.HandleFunc("/up", serveUp)
	mux.HandleFunc("/nostore", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		io.WriteString(w, "secret")
	})
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		v, _ := u.paths.LoadOrStore(r.URL.Path, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(u.Close)
	u.hostport = strings.TrimPrefix(u.URL, "http://")
	return u
}

func (u *testUpstream) count(path string) int64 {
	v, ok := u.paths.Load(path)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// startEcho is a TCP echo server (CONNECT target).
func startEcho(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				io.Copy(c, c)
			})
		}
	})
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return l.Addr().String()
}

type testServer struct {
	*server.Server
	addr string
	pc   *impairConn
	pool *tls.Config
	pair *selfsigned.Pair
	done chan error
	once sync.Once
}

var (
	pairOnce sync.Once
	pair     *selfsigned.Pair
)

func testPair(t testing.TB) *selfsigned.Pair {
	pairOnce.Do(func() {
		var err error
		if pair, err = selfsigned.New(); err != nil {
			panic(err)
		}
	})
	return pair
}

// startServer runs a ct-server on 127.0.0.1 (addr "" picks a port)
// allowing the given upstreams.
func startServer(t testing.TB, addr string, mod func(*server.Config), allow ...string) *testServer {
	t.Helper()
	p := testPair(t)
	cfg := server.Config{
		TLS:     &tls.Config{Certificates: []tls.Certificate{p.Cert}},
		Clients: []server.ClientAuth{{ID: "alice", Token: testToken}, {ID: "bob", Token: testToken + "-bob"}},
		Allow:   allow,
		Log:     testLog(t),
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := server.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	udp, err := net.ListenPacket("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{Server: s, addr: udp.LocalAddr().String(), pc: newImpair(udp), pool: &tls.Config{RootCAs: p.Pool}, pair: p, done: make(chan error, 1)}
	go func() { ts.done <- s.Serve(ts.pc) }()
	t.Cleanup(func() { ts.stop(t) })
	return ts
}

func (ts *testServer) stop(t testing.TB) {
	ts.once.Do(func() {
		ts.Close()
		select {
		case err := <-ts.done:
			if err != nil {
				t.Errorf("server: %v", err)
			}
		case <-time.After(5 * time.Second):
			t.Errorf("server did not stop")
		}
	})
}

func loopbackPaths(n int) []LocalPath {
	var ps []LocalPath
	for i := range n {
		ps = append(ps, LocalPath{Name: fmt.Sprintf("p%d", i), Addr: netip.AddrFrom4([4]byte{127, 0, 0, byte(21 + i)})})
	}
	return ps
}

type testClient struct {
	*Client
	proxy string // http://host:port of the proxy
	hc    *http.Client
}

// realSocketStallTimeout is the stall timeout of startClient's ct-client:
// on real sockets a loaded machine can pause a healthy path's goroutines
// for longer than DefaultStallTimeout, and a false stall would move or cut
// streams that the test did not mean to touch. A test of stall detection
// sets its own timeout (migrate_test.go) or runs on memnet in fake time
// (stallmem_test.go).
const realSocketStallTimeout = time.Minute

// startClient runs a ct-client with n loopback paths against ts and waits
// for all of them (wait false: does not wait).
func startClient(t testing.TB, ts *testServer, n int, wait bool, mod func(*ClientConfig)) *testClient {
	t.Helper()
	cfg := ClientConfig{
		Server: ts.addr, ServerName: "localhost", TLS: ts.pool, Token: testToken,
		Paths: loopbackPaths(n), Log: testLog(t),
		ReconnectMax: time.Second, StallTimeout: realSocketStallTimeout,
	}
	if mod != nil {
		mod(&cfg)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); c.Serve(l) }()
	proxyURL, _ := url.Parse("http://" + l.Addr().String())
	tr := &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: 256, DisableCompression: true}
	tc := &testClient{Client: c, proxy: l.Addr().String(), hc: &http.Client{Transport: tr, Timeout: 60 * time.Second}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		c.Close()
		<-served
	})
	if wait {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // ends only a client that never connects
		defer cancel()
		if err := c.WaitReady(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	return tc
}

// get fetches u through the proxy and returns status, body.
func (tc *testClient) get(t testing.TB, u string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := tc.hc.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", u, err)
	}
	return resp, body
}

// patternSum is the SHA-256 of origin's /bytes/n.
func patternSum(n int64) [32]byte {
	h := sha256.New()
	buf := make([]byte, 0, 64<<10)
	for i := int64(0); i < n; i++ {
		buf = append(buf, origin.PatternByte(i))
		if len(buf) == cap(buf) {
			h.Write(buf)
			buf = buf[:0]
		}
	}
	h.Write(buf)
	var s [32]byte
	copy(s[:], h.Sum(nil))
	return s
}

// checkGoroutines fails if goroutines started during the test outlive it.
func checkGoroutines(t *testing.T) func() {
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		if n, stacks := leakcheck.Wait(before, 5*time.Second); n > before {
			t.Fatalf("%d goroutines before, %d after:\n%s", before, n, stacks)
		}
	}
}

// testLog is a logger that writes the agent's records to the test's log
// until the test's cleanups run. A goroutine that ends after the test
// function (a proxy handler of net/http, which Close does not wait for)
// may still log; t.Log then races with the test's end, so records after
// the cleanup are dropped.
func testLog(t testing.TB) *slog.Logger {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct {
	t    testing.TB
	mu   sync.Mutex
	done bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(strings.TrimSuffix(string(p), "\n"))
	}
	return len(p), nil
}

// serveUp answers an upload with its length and SHA-256 ("N HEX"), or 400
// when the body broke off.
func serveUp(w http.ResponseWriter, r *http.Request) {
	h := sha256.New()
	n, err := io.Copy(h, r.Body)
	if err != nil {
		http.Error(w, "body: "+err.Error(), http.StatusBadRequest)
		return
	}
	fmt.Fprintf(w, "%d %x", n, h.Sum(nil))
}
