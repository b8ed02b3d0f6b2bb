package agent

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
)

// pipeNet is an in-memory stream network (net.Pipe) for the app and
// app-server sides of an agent on memnet: with it, every goroutine of a
// test waits on channels and timers only, which testing/synctest needs.
type pipeNet struct {
	mu sync.Mutex
	ls map[string]*pipeListener
}

type pipeListener struct {
	addr string
	ch   chan net.Conn
	done chan struct{}
	once sync.Once
}

type pipeAddr string

func (a pipeAddr) Network() string { return "pipe" }
func (a pipeAddr) String() string  { return string(a) }

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr(l.addr) }

func (n *pipeNet) listen(addr string) *pipeListener {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.ls == nil {
		n.ls = map[string]*pipeListener{}
	}
	l := &pipeListener{addr: addr, ch: make(chan net.Conn), done: make(chan struct{})}
	n.ls[addr] = l
	return l
}

// Dial connects to the listener on addr.
func (n *pipeNet) Dial(ctx context.Context, _, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.ls[addr]
	n.mu.Unlock()
	if l == nil {
		return nil, fmt.Errorf("pipe dial %s: connection refused", addr)
	}
	a, b := net.Pipe()
	select {
	case l.ch <- b:
		return a, nil
	case <-l.done:
	case <-ctx.Done():
	}
	a.Close()
	b.Close()
	return nil, fmt.Errorf("pipe dial %s: connection refused", addr)
}

// memAgent is ct-client and ct-server on memnet (paths 10.8.0.1…,
// ct-server 10.9.0.1:443), an app-server at memApp (origin's handlers and
// /up) and the proxy at proxy:8080, all in memory: for tests under
// testing/synctest, where every timeout costs no real time.
type memAgent struct {
	n      *memnet.Network
	pn     *pipeNet
	s      *server.Server
	c      *Client
	hc     *http.Client
	pair   *selfsigned.Pair
	closed []func()
	// leaked counts the requests that reached the app-server with ct's
	// own wire.HdrPiece (ct-server is to remove it).
	leaked atomic.Int64
}

var memCTServer = netip.MustParseAddrPort("10.9.0.1:443")

// memApp is the app-server's address (the pipe network's name for it).
const memApp = "10.6.0.80:80"

func memPath(i int) LocalPath {
	return LocalPath{Name: fmt.Sprintf("m%d", i), Addr: netip.AddrFrom4([4]byte{10, 8, 0, byte(1 + i)})}
}

// memIfacePath is m's path of interface memPath(i), found by its name:
// lanes (agent/lanes.go) extend the client's path list, so a place in it
// is no interface's identity.
func (m *memAgent) memIfacePath(i int) *path {
	for _, p := range m.c.pathList() {
		if p.Name == memPath(i).Name {
			return p
		}
	}
	return nil
}

// ifaceBytes is the bytes each of the interfaces memPath(0)…memPath(n-1)
// has carried, its lanes' (retired ones' too) summed into it by name.
func (m *memAgent) ifaceBytes(n int) []int64 {
	bytes := make([]int64, n)
	for _, p := range m.c.pathList() {
		for i := range bytes {
			if iface(p.Name) == memPath(i).Name {
				bytes[i] += p.bytes.Load()
			}
		}
	}
	return bytes
}

// lanesAdded is how many lanes m's client has ever added (agent/lanes.go):
// the paths it has had beyond the n interfaces it was started with.
func (m *memAgent) lanesAdded(n int) int { return len(m.c.pathList()) - n }

// startServer starts a ct-server of m's at addr (modS, if set, changes
// its config) and has m's close stop it.
func (m *memAgent) startServer(t *testing.T, addr netip.AddrPort, modS func(*server.Config)) *server.Server {
	t.Helper()
	scfg := server.Config{TLS: &tls.Config{Certificates: []tls.Certificate{m.pair.Cert}},
		Clients: []server.ClientAuth{{ID: "alice", Token: testToken}}, Allow: []string{memApp}, // an address: no resolver needed
		Dial: m.pn.Dial, Log: testLog(t)}
	if modS != nil {
		modS(&scfg)
	}
	s, err := server.NewServer(scfg)
	if err != nil {
		t.Fatal(err)
	}
	spc, err := m.n.ListenPacket(addr)
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan struct{})
	go func() { defer close(served); s.Serve(spc) }()
	m.closed = append(m.closed, func() { s.Close(); <-served })
	return s
}

// startMemAgent must run inside the synctest bubble of the test.
func startMemAgent(t *testing.T, paths int, modS func(*server.Config), modC func(*ClientConfig)) *memAgent {
	t.Helper()
	return startShapedAgent(t, paths, nil, modS, modC)
}

// startShapedAgent is startMemAgent on a network that shape (if not nil)
// has set up before ct-server and the client start. A test that sets
// several delays after the paths connected has a path's first RTT sample
// (quic-go ignores those of 0) fall between them at random: a MinRTT
// without ct-server's delay, after which HyStart reads every round as a
// rise and leaves slow start at the initial window on near paths (an
// alone time 1.8× as long in 3 of 4 runs).
func startShapedAgent(t *testing.T, paths int, shape func(*memnet.Network), modS func(*server.Config), modC func(*ClientConfig)) *memAgent {
	t.Helper()
	m := &memAgent{n: memnet.New(), pn: &pipeNet{}}
	if shape != nil {
		shape(m.n)
	}
	t.Cleanup(m.close)
	mux := http.NewServeMux()
	app := origin.Handler(nil)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(wire.HdrPiece) != "" {
			m.leaked.Add(1)
		}
		app.ServeHTTP(w, r)
	})
	mux.HandleFunc("/up", serveUp)
	m.serveHTTP(&http.Server{Handler: mux}, m.pn.listen(memApp))

	// Its own certificate: one made under fake time (year 2000) does not
	// verify outside the bubble, nor testPair's inside it.
	p, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	m.pair = p
	m.s = m.startServer(t, memCTServer, modS)

	ccfg := ClientConfig{Server: memCTServer.String(), ServerName: "localhost", TLS: &tls.Config{RootCAs: p.Pool},
		Token: testToken, ListenPacket: m.n.ListenIP, Log: testLog(t)}
	for i := range paths {
		ccfg.Paths = append(ccfg.Paths, memPath(i))
	}
	if modC != nil {
		modC(&ccfg)
	}
	c, err := NewClient(ccfg)
	if err != nil {
		t.Fatal(err)
	}
	m.c = c
	pl := m.pn.listen("proxy:8080")
	cserved := make(chan struct{})
	go func() { defer close(cserved); c.Serve(pl) }()
	m.closed = append(m.closed, func() { c.Close(); <-cserved })
	proxy, _ := url.Parse("http://proxy:8080")
	tr := &http.Transport{Proxy: http.ProxyURL(proxy), DialContext: m.pn.Dial, DisableCompression: true}
	m.hc = &http.Client{Transport: tr}
	m.closed = append(m.closed, tr.CloseIdleConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, paths); err != nil {
		t.Fatal(err)
	}
	return m
}

func (m *memAgent) serveHTTP(srv *http.Server, l net.Listener) {
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	m.closed = append(m.closed, func() { srv.Close(); <-done })
}

// close stops everything, the last started first.
func (m *memAgent) close() {
	for i := len(m.closed) - 1; i >= 0; i-- {
		m.closed[i]()
	}
	m.closed = nil
}

// rawProxy opens an app connection to the proxy.
func (m *memAgent) rawProxy(t *testing.T) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := m.pn.Dial(context.Background(), "tcp", "proxy:8080")
	if err != nil {
		t.Fatal(err)
	}
	return conn, bufio.NewReader(conn)
}
