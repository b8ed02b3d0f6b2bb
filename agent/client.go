package agent

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/cache"
	"github.com/hetquic/hetquic/agent/idlebody"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/tunnel"
	"github.com/hetquic/hetquic/agent/tunnelgate"
	"github.com/hetquic/hetquic/agent/uploadreplay"
	"github.com/hetquic/hetquic/agent/wire"
)

// DefaultTunnelIdle is how quiet a tunnel must be before it may be closed
// for a waiting app, and only when every tunnel slot is taken.
const DefaultTunnelIdle = tunnelgate.DefaultIdle

// AppRule says how ct-client tells apps apart (for scheduling priority and
// per-app counters): by the request's target host, by the local port the
// app connected to, or by the value of a request header.
type AppRule struct {
	Kind   string // "host", "port" or "header"
	Header string // for "header"
}

// ParseAppRule parses "host", "port" or "header:NAME".
func ParseAppRule(s string) (AppRule, error) {
	switch {
	case s == "host" || s == "port":
		return AppRule{Kind: s}, nil
	case strings.HasPrefix(s, "header:") && len(s) > len("header:"):
		return AppRule{Kind: "header", Header: http.CanonicalHeaderKey(s[len("header:"):])}, nil
	}
	return AppRule{}, fmt.Errorf("app rule %q: want host, port or header:NAME", s)
}

// ClientConfig configures a ct-client.
type ClientConfig struct {
	// Server is ct-server's UDP host:port, ServerName its TLS name.
	Server     string
	ServerName string
	TLS        *tls.Config // RootCAs; NextProtos is set to wire.ALPN
	// CAFile, if set, is a PEM file of certificates to trust for ct-server,
	// read again before every dial: a ct-server that made a new
	// self-signed certificate is trusted as soon as the file is replaced,
	// without restarting ct-client. It replaces TLS.RootCAs.
	CAFile string
	Token  string // bearer token ct-server knows this client by
	// Paths are the local interfaces: one always-on connection each.
	Paths []LocalPath
	// Scheduler places requests on paths (default: pathchoice.DefaultScheduler).
	Scheduler pathchoice.Scheduler
	AppRule   AppRule        // default: by host
	Priority  map[string]int // app → priority (default 1)
	// AppPaths pins apps to paths by name (app → path): their requests
	// and tunnels go there while it is up and not suspected, elsewhere
	// when it is not (a pin is a preference, never a reason to fail).
	AppPaths map[string]string
	// StallTimeout is how long a response may go without a byte before
	// its path is checked, and the stream moved if the path is dead
	// (default DefaultStallTimeout, 0.8 s). See Client.forward.
	StallTimeout time.Duration
	// SuspectFor is how long a stalled path gets no new requests (default 3 s).
	SuspectFor time.Duration
	// IdleTimeout is QUIC's MaxIdleTimeout; keep-alives go every quarter
	// (default wire.DefaultIdleTimeout).
	IdleTimeout time.Duration
	// ReconnectMin and ReconnectMax bound the reconnection backoff
	// (default 100 ms, doubling to 5 s).
	ReconnectMin, ReconnectMax time.Duration
	// Cache holds prefetched responses (nil: no prefetch).
	Cache *cache.Cache
	QUIC  *quic.Config
	// ListenPacket opens the socket of a path (default: UDP on addr:0).
	// Tests wrap it to impair a path.
	ListenPacket func(addr net.IP) (net.PacketConn, error)
	// MaxAttempts bounds the paths one request may try (default: 2×paths+1);
	// while an outage is held (OutageHold) attempts are not counted.
	MaxAttempts int
	// OutageHold is how long a request or tunnel whose paths all failed
	// waits for one to come back (default wire.DefaultOutageHold): the app
	// sees a stall, and past the hold a reset (or a 502 before any head).
	OutageHold time.Duration
	// StripeMin is the smallest response (Content-Length) fetched over
	// several paths at once in StripeChunk pieces by Range (bandwidth
	// aggregation for one large object; see stripe.go). 0: the default,
	// DefaultStripeMin; < 0: never.
	StripeMin   int64
	StripeChunk int64 // default DefaultStripeChunk
	// HeaderTimeout bounds reading an app's request head (default 5 s):
	// an app that dribbles its head is cut off.
	HeaderTimeout time.Duration
	// InterfacePoll is how often the addresses of paths given by interface
	// name are looked up again (default DefaultInterfacePoll; < 0: never):
	// a path whose interface changed address moves to the new one, one
	// whose interface went away is down until it is back. See
	// watchInterfaces.
	InterfacePoll time.Duration
	// TunnelIdle is how long a CONNECT tunnel may move no byte before its
	// slot may be reclaimed for another tunnel when all of ct-server's
	// tunnel slots are taken (default DefaultTunnelIdle; see package tunnelgate).
	TunnelIdle time.Duration
	// FixedLanes keeps each path at its configured connections. By
	// default ct-client adds connections (up to wire.MaxLanes) to an
	// interface that loses packets at random, and retires them when the
	// loss has gone (lanes.go): one QUIC connection's congestion control
	// reads random loss as congestion (agent/DESIGN.md, "Automatic lanes").
	FixedLanes bool
	// Log receives the noteworthy events, with key/value attributes
	// (default: discarded); its records carry side=ct-client.
	Log *slog.Logger
}

// Client is a ct-client: a local HTTP proxy whose requests ride QUIC
// streams to ct-server over the host's interfaces.
type Client struct {
	cfg ClientConfig
	// streamWindow is the most a stream to ct-server's receive window
	// grows to (quicConfig), for the stripes (stripe.PathState.StreamWindow):
	// the original's stream, read as fast as it arrives, reaches it.
	streamWindow int64
	// firstWindow is the receive window a stream to ct-server starts
	// with (quicConfig), for the stripes (stripe.PathState.FirstWindow):
	// each piece is a new stream.
	firstWindow int64
	// replayPool holds the request bodies kept for a replay (agent/uploadreplay).
	replayPool uploadreplay.Pool
	// paths are every path this client has had, by id: a path removed by
	// ReloadPaths stays (retired) so that ids stay indices. Written only
	// under pathsMu, by a new slice each time; read by pathList.
	paths   []*path
	pathsMu sync.RWMutex
	cache   *cache.Cache

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu             sync.Mutex
	changeCh       chan struct{} // closed and replaced when a path comes or goes
	servers        map[*http.Server]struct{}
	socksListeners map[net.Listener]struct{}
	tunnels        map[net.Conn]struct{}
	active         map[net.Conn]bool // app connections with a request in progress (trackConn)
	apps           map[string]*appStats
	closed         bool
	watching       bool // watchInterfaces runs

	pushAsked                         atomic.Bool
	pushed, migrations                atomic.Int64
	stripes, limitRetries             atomic.Int64
	stripeFallbacks, aborts           atomic.Int64
	reinjections                      atomic.Int64 // stripe pieces requested again on a faster path
	endgameCopies, endgameCopyBytes   atomic.Int64 // slower paths' far pieces copied to an idle path at a stripe's end (stripe.Host.EndgameCopied), and their bytes
	takeOvers                         atomic.Int64 // originals whose path failed before their cut, finished by the stripe (stripe.Run.TakeOver)
	stripeBlocks                      atomic.Int64 // slower paths' stripe pieces that blocked the window (stripe.Host.Blocked)
	uploadReplays                     atomic.Int64 // requests sent again from their first byte (replaybody.go)
	m                                 *clientMetrics
	slots                             atomic.Pointer[chan struct{}] // see setMaxStreams
	gate                              *tunnelgate.Gate              // CONNECT slots, fair between apps
	pol                               clientPolicy                  // what Reload replaces
	udp                               wire.DatagramRoutes           // UDP flows by connection and stream
	stallDetectNanos, stallDetections atomic.Int64
	resumeNanos                       atomic.Int64
}

type appStats struct{ requests, bytes, failures atomic.Int64 }

// NewClient opens one socket per path and starts keeping a connection up
// on each. Requests wait for a path (up to a few seconds) until one is up.
func NewClient(cfg ClientConfig) (*Client, error) {
	if cfg.Server == "" {
		return nil, errors.New("agent client: no server address")
	}
	if len(cfg.Paths) == 0 {
		return nil, errors.New("agent client: no local paths")
	}
	if cfg.Token == "" {
		return nil, errors.New("agent client: no token")
	}
	cfg.StallTimeout = cmp.Or(cfg.StallTimeout, DefaultStallTimeout)
	cfg.SuspectFor = cmp.Or(cfg.SuspectFor, 3*time.Second)
	cfg.IdleTimeout = cmp.Or(cfg.IdleTimeout, wire.DefaultIdleTimeout)
	cfg.ReconnectMin = cmp.Or(cfg.ReconnectMin, 100*time.Millisecond)
	cfg.ReconnectMax = cmp.Or(cfg.ReconnectMax, 5*time.Second)
	cfg.MaxAttempts = cmp.Or(cfg.MaxAttempts, 2*len(cfg.Paths)+1)
	cfg.OutageHold = cmp.Or(cfg.OutageHold, wire.DefaultOutageHold)
	cfg.StripeMin = cmp.Or(cfg.StripeMin, DefaultStripeMin)
	if cfg.StripeChunk <= 0 {
		cfg.StripeChunk = DefaultStripeChunk
	}
	cfg.HeaderTimeout = cmp.Or(cfg.HeaderTimeout, 5*time.Second)
	cfg.TunnelIdle = cmp.Or(cfg.TunnelIdle, DefaultTunnelIdle)
	cfg.InterfacePoll = cmp.Or(cfg.InterfacePoll, DefaultInterfacePoll)
	if cfg.AppRule.Kind == "" {
		cfg.AppRule.Kind = "host"
	}
	cfg.Log = cmp.Or(cfg.Log, discard).With("side", "ct-client")
	if cfg.ListenPacket == nil {
		cfg.ListenPacket = func(ip net.IP) (net.PacketConn, error) {
			return net.ListenUDP("udp", &net.UDPAddr{IP: ip})
		}
	}
	if cfg.Scheduler == nil {
		s, err := pathchoice.NewScheduler(pathchoice.DefaultScheduler, len(cfg.Paths), 1)
		if err != nil {
			return nil, err
		}
		cfg.Scheduler = s
	}
	c := &Client{cfg: cfg, cache: cfg.Cache, changeCh: make(chan struct{}),
		servers: map[*http.Server]struct{}{}, socksListeners: map[net.Listener]struct{}{}, tunnels: map[net.Conn]struct{}{},
		active: map[net.Conn]bool{}, apps: map[string]*appStats{}, gate: tunnelgate.New(tunnelgate.DefaultSlots, cfg.TunnelIdle, nil)}
	qc := c.quicConfig()
	c.streamWindow, c.firstWindow = int64(qc.MaxStreamReceiveWindow), int64(qc.InitialStreamReceiveWindow)
	c.pol.p.Store(&ClientPolicy{Token: cfg.Token, AppRule: cfg.AppRule, Priority: cfg.Priority, AppPaths: cfg.AppPaths})
	c.gate.OnReclaim = func(app string, idle time.Duration) {
		cfg.Log.Info("idle tunnel closed for a waiting app (every tunnel slot taken)", "app", app, "idle", idle.Round(time.Millisecond))
	}
	c.m = newClientMetrics(c)
	names := map[string]bool{}
	for i, lp := range cfg.Paths {
		if names[lp.Name] {
			c.closeSockets()
			return nil, fmt.Errorf("agent client: path name %q twice", lp.Name)
		}
		names[lp.Name] = true
		pc, err := cfg.ListenPacket(net.IP(lp.Addr.AsSlice()))
		if err != nil {
			c.closeSockets()
			return nil, fmt.Errorf("agent client: path %s: bind %s: %w", lp.Name, lp.Addr, err)
		}
		c.paths = append(c.paths, newPath(i, lp, pc))
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.mu.Lock()
	for _, p := range c.paths {
		c.startPath(p)
	}
	if !cfg.FixedLanes {
		c.wg.Go(c.keepLanes)
	}
	c.mu.Unlock()
	return c, nil
}

func (c *Client) closeSockets() {
	for _, p := range c.pathList() {
		p.tr.Close()
		p.pc.Close()
	}
}

// Close stops the proxy listeners, closes every tunnel, connection and
// socket, and waits for every goroutine of the client. App connections
// with a request or tunnel in progress are reset (see Shutdown for a
// drain).
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.cancel()
	// A response or tunnel cut here is incomplete: reset, never a FIN
	// an app could take for the end of its data.
	for conn := range c.active {
		tunnel.ResetOnClose(conn)
	}
	for s := range c.servers {
		s.Close()
	}
	for l := range c.socksListeners {
		l.Close()
	}
	for t := range c.tunnels {
		tunnel.ResetOnClose(t)
		t.Close()
	}
	c.mu.Unlock()
	c.wg.Wait()
	c.closeSockets()
	return nil
}

// Serve runs the proxy on l until Close. Several listeners may be served
// at once (one per app port, for AppRule "port").
func (c *Client) Serve(l net.Listener) error {
	srv := &http.Server{
		Handler:           c,
		ReadHeaderTimeout: c.cfg.HeaderTimeout, // an app dribbling its head is cut off
		IdleTimeout:       AppIdleTimeout,
		ConnState:         c.trackConn,
		MaxHeaderBytes:    wire.MaxHeaderBytes,
		ErrorLog:          nil,
		ConnContext: func(ctx context.Context, conn net.Conn) context.Context {
			return context.WithValue(ctx, appConnKey{}, conn) // for abortApp
		},
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	c.servers[srv] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Ready reports how many paths have a connection now.
func (c *Client) Ready() int {
	n := 0
	for _, p := range c.pathList() {
		if !p.retired.Load() && p.current() != nil {
			n++
		}
	}
	return n
}

// WaitReady waits until n paths are connected.
func (c *Client) WaitReady(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		ch := c.changeCh
		c.mu.Unlock()
		if c.Ready() >= n {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d of %d paths up: %w", c.Ready(), n, ctx.Err())
		}
	}
}

func (c *Client) changed() {
	c.mu.Lock()
	close(c.changeCh)
	c.changeCh = make(chan struct{})
	c.mu.Unlock()
}

// DefaultStallTimeout: the stall decision comes this long after a
// response's last byte (two halves: a quiet read, then an unanswered
// ping), so that stall-to-resume stays under the 1 s with room for
// the re-request's round trip.
const DefaultStallTimeout = 800 * time.Millisecond

// errNoPath: no path to ct-server came up within the outage hold.
var errNoPath = errors.New("no path to ct-server is up")

// pick chooses the path of a request by pathchoice.Choose on a snapshot of
// the paths, waiting (up to OutageHold) for a change while none is up.
// Paths in avoid were tried already by this request.
func (c *Client) pick(ctx context.Context, r pathchoice.Request, avoid map[int]bool) (*path, *quic.Conn, error) {
	return c.pickBy(ctx, r, avoid, time.Now().Add(c.cfg.OutageHold))
}

// pickBy is pick waiting for a path until by at the latest.
func (c *Client) pickBy(ctx context.Context, r pathchoice.Request, avoid map[int]bool, by time.Time) (*path, *quic.Conn, error) {
	deadline := time.NewTimer(time.Until(by))
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch := c.changeCh
		c.mu.Unlock()
		views, conns := c.snapshot()
		if id := pathchoice.Choose(r, views, avoid, time.Now(), c.cfg.Scheduler); id >= 0 {
			return c.pathList()[id], conns[id], nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-deadline.C:
			return nil, nil, errNoPath
		}
	}
}

// snapshot is every path's state for pathchoice, read under the path's
// lock, and the connection each up path had then.
func (c *Client) snapshot() ([]pathchoice.Path, []*quic.Conn) {
	paths := c.pathList()
	views := make([]pathchoice.Path, len(paths))
	conns := make([]*quic.Conn, len(paths))
	for i, p := range paths {
		p.mu.Lock()
		v := pathchoice.Path{View: pathchoice.PathView{ID: p.id, Outstanding: p.outstanding, Streams: p.streams, Weight: p.weight, Rate: p.rate},
			Addr: p.Addr, Primary: p.Role == RolePrimary, SuspectUntil: p.suspectUntil}
		if v.Up = p.conn != nil && p.conn.Context().Err() == nil && !p.retired.Load(); v.Up {
			st := p.conn.ConnectionStats()
			v.View.SRTT = st.SmoothedRTT
			if v.View.Rate == 0 && st.SmoothedRTT > 0 {
				// No sample yet: what the congestion window allows.
				v.View.Rate = float64(st.CongestionWindow) / st.SmoothedRTT.Seconds()
			}
			conns[i] = p.conn
		}
		p.mu.Unlock()
		views[i] = v
	}
	return views, conns
}

// ServeHTTP is the proxy: CONNECT tunnels and absolute-form http:// requests.
func (c *Client) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		c.connect(w, r)
		return
	}
	if !r.URL.IsAbs() || r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "ct-client is a forward proxy: send absolute http:// URLs, or CONNECT for anything else", http.StatusBadRequest)
		return
	}
	if r.URL.User != nil {
		http.Error(w, "ct-client: credentials in the URL are not forwarded", http.StatusBadRequest)
		return
	}
	app := c.identify(r)
	st := c.app(app)
	st.requests.Add(1)
	start := time.Now()
	defer func() { c.m.duration.Observe(time.Since(start).Seconds()) }()
	if c.cache != nil && r.Method == http.MethodGet && c.cache.Serve(w, r, time.Now()) {
		return
	}
	r.Header.Del(wire.HdrPiece) // ct-client sets it on its stripes' pieces only
	n, err := c.forward(w, r, c.request(app))
	st.bytes.Add(n)
	if err != nil {
		st.failures.Add(1)
		c.cfg.Log.Warn("request failed", "method", r.Method, "url", r.URL.String(), "err", err)
	}
}

func (c *Client) identify(r *http.Request) string {
	var local net.Addr
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		local = a
	}
	if rule := c.policy().AppRule; rule.Kind == "header" {
		return appName(r.Header.Get(rule.Header))
	}
	host := r.Host
	if r.URL != nil && r.URL.Host != "" {
		host = r.URL.Host
	}
	return c.identifyTarget(host, local)
}

// identifyTarget names the app of a request for target (host or
// host:port) that came in on the local address local: by the target's
// host or by local's port, as the AppRule says; a request without headers
// (SOCKS5) under a header rule is app "socks".
func (c *Client) identifyTarget(target string, local net.Addr) string {
	switch c.policy().AppRule.Kind {
	case "port":
		if local != nil {
			if _, port, err := net.SplitHostPort(local.String()); err == nil {
				return appName(port)
			}
		}
		return appName("")
	case "header":
		return "socks"
	}
	if h, _, err := net.SplitHostPort(target); err == nil {
		target = h
	}
	return appName(strings.ToLower(target))
}

// appName bounds an app name taken from a request.
func appName(app string) string {
	if app == "" || len(app) > 64 {
		return "other"
	}
	return app
}

// maxApps bounds the per-app table (the app name comes from requests).
const maxApps = 256

func (c *Client) app(name string) *appStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s, ok := c.apps[name]; ok {
		return s
	}
	if len(c.apps) >= maxApps {
		name = "other"
		if s, ok := c.apps[name]; ok {
			return s
		}
	}
	s := &appStats{}
	c.apps[name] = s
	return s
}

// request is what the scheduler knows of a request of app: its priority
// and the path it is pinned to (AppPaths), if that path exists.
func (c *Client) request(app string) pathchoice.Request {
	r := pathchoice.Request{App: app, Priority: c.priority(app)}
	if name, ok := c.policy().AppPaths[app]; ok {
		for _, p := range c.pathList() {
			if p.Name == name && !p.retired.Load() {
				r.Pin = p.id + 1
				break
			}
		}
	}
	return r
}

func (c *Client) priority(app string) int {
	if p, ok := c.policy().Priority[app]; ok && p > 0 {
		return p
	}
	return 1
}

// stallReader reads a stream with a deadline per read: a read that gets
// nothing for d fails with a timeout.
type stallReader struct {
	s *quic.Stream
	d time.Duration // 0: the stream's own deadline stays (a tunnel's head has one)
	p *path
}

func (r *stallReader) Read(b []byte) (int, error) {
	if r.d > 0 {
		r.s.SetReadDeadline(time.Now().Add(r.d))
	}
	n, err := r.s.Read(b)
	if n > 0 {
		r.p.received(n, time.Now())
	}
	return n, err
}

// errStalled marks an attempt given up because its path went silent.
var errStalled = tunnel.ErrStalled

// errRefused marks a resume ct-server refused for a limit (429, 503).
var errRefused = errors.New("refused by ct-server's limits")

// setMaxStreams makes ct-client keep at most n requests in progress at
// ct-server, the max_streams its hello announced: a burst of requests (or
// a striped response's pieces) then waits here instead of meeting 429s.
func (c *Client) setMaxStreams(n int) {
	if cur := c.slots.Load(); cur != nil && cap(*cur) == n {
		return
	}
	ch := make(chan struct{}, n)
	c.slots.Store(&ch) // holders of an old set release into it
}

// streamSlot waits for one of the max_streams slots (none: no wait) and
// returns its release.
func (c *Client) streamSlot(ctx context.Context) (func(), error) {
	p := c.slots.Load()
	if p == nil {
		return func() {}, nil
	}
	ch := *p
	select {
	case ch <- struct{}{}:
		return func() { <-ch }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// appConnKey is the context key of the app's TCP connection (Serve's
// ConnContext).
type appConnKey struct{}

// abortApp ends a response that cannot be completed: the app connection is
// reset (RST, SO_LINGER 0), never closed with a FIN, so an app that reads a
// body to the end of the connection cannot mistake a truncated body for a
// whole one. It does not return. A response being fetched into a buffer
// (a stripe piece) only unwinds.
func (c *Client) abortApp(w http.ResponseWriter, r *http.Request) {
	if _, piece := w.(*bufferWriter); !piece {
		c.aborts.Add(1)
		if conn, ok := r.Context().Value(appConnKey{}).(net.Conn); ok {
			tunnel.ResetOnClose(conn)
		}
	}
	panic(http.ErrAbortHandler) // net/http closes the connection
}

// isConnErr says err is the stream or connection failing (not the app or
// ct-server answering): worth another path.
func isConnErr(err error) bool {
	var ae *quic.ApplicationError
	var ie *quic.IdleTimeoutError
	var se *quic.StreamError
	var te *quic.TransportError
	var sr *quic.StatelessResetError
	if errors.As(err, &se) && se.Remote && se.ErrorCode == wire.CodeLimit {
		return false // ct-server enforced a limit: another path gets the same
	}
	return errors.As(err, &ae) || errors.As(err, &ie) || errors.As(err, &se) || errors.As(err, &te) ||
		errors.As(err, &sr) || errors.Is(err, net.ErrClosed) || errors.Is(err, io.ErrUnexpectedEOF)
}

// stallWatch turns per-read timeouts into a decision: is the path dead
// (errStalled) or only the app-server slow (keep reading)?
type stallWatch struct {
	c    *Client
	p    *path
	conn *quic.Conn
	ctx  context.Context
	last time.Time // last byte of this stream
	dead bool
	pkts uint64 // packets the connection had received at the last look
	// sending, if set, says a request body is still going out: then
	// packets received (its acknowledgements) show the path alive.
	sending func() bool
}

func (s *stallWatch) reader(str *quic.Stream) io.Reader {
	s.last = time.Now()
	s.pkts = s.conn.ConnectionStats().PacketsReceived
	return &watchedReader{s: s, r: &stallReader{s: str, d: s.half(), p: s.p}}
}

type watchedReader struct {
	s *stallWatch
	r *stallReader
}

func (w *watchedReader) Read(b []byte) (int, error) {
	for {
		n, err := w.r.Read(b)
		if n > 0 {
			w.s.last = time.Now()
		}
		if err == nil || !idlebody.IsTimeout(err) || n > 0 {
			return n, err
		}
		if !w.s.alive() {
			w.s.dead = true
			return 0, errStalled
		}
	}
}

// half is each of the two waits of stall detection: StallTimeout/2, or
// two smoothed RTTs on a path slower than that.
func (s *stallWatch) half() time.Duration {
	return max(s.c.cfg.StallTimeout/2, 2*s.conn.ConnectionStats().SmoothedRTT)
}

// alive: while a body goes out, the connection received packets since
// the last look; another stream of the path got bytes lately; or a ping
// answers. A request given up meanwhile gets no verdict: its probe ends
// early, unanswered, which is its owner's doing, not the path's.
// When none of these, this stream moves, the path is suspected, and confirmDead
// takes a second look before closing the connection (a dead connection is
// replaced, not nursed; the idle timeout would take MaxIdleTimeout to say
// the same).
func (s *stallWatch) alive() bool {
	half := s.half()
	if n := s.conn.ConnectionStats().PacketsReceived; n != s.pkts && s.sending != nil && s.sending() {
		// The path delivers packets (acknowledgements of an upload in
		// progress, say): alive, whatever this stream's response does.
		s.pkts = n
		return true
	}
	s.p.mu.Lock()
	recent := time.Since(s.p.lastRecv) < half
	s.p.mu.Unlock()
	if recent || transportAlive(s.ctx, s.conn, half) {
		return true
	}
	if s.ctx.Err() != nil {
		// The probe was cut short by the request's end (wire.TransportPing
		// stops with its context), not left unanswered: no verdict (the
		// reader finds its stream cancelled and ends).
		return true
	}
	// Other streams may have got bytes while the ping went unanswered (a
	// busy or starved process is slow, not dead): the path is dead only if
	// all of it stayed silent for the whole StallTimeout.
	s.p.mu.Lock()
	recent = time.Since(s.p.lastRecv) < s.c.cfg.StallTimeout
	s.p.mu.Unlock()
	if recent {
		return true
	}
	detect := time.Since(s.last)
	s.c.stallDetectNanos.Add(int64(detect))
	s.c.stallDetections.Add(1)
	s.c.suspect(s.p)
	s.c.confirmDead(s.p, s.conn)
	return false
}

// confirmDead checks a path a stream just left (in the background): one
// more ping with the whole StallTimeout, and if it goes unanswered while
// the path still received nothing, the connection is closed — every other
// stream on it moves, and the path redials. A second look keeps a process
// that was merely starved of CPU (every timer late) from closing healthy
// connections, which would move every stream at once.
func (c *Client) confirmDead(p *path, conn *quic.Conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || p.checking {
		return
	}
	p.checking = true
	c.wg.Go(func() {
		defer func() {
			c.mu.Lock()
			p.checking = false
			c.mu.Unlock()
		}()
		if transportAlive(c.ctx, conn, max(c.cfg.StallTimeout, 2*conn.ConnectionStats().SmoothedRTT)) {
			return
		}
		p.mu.Lock()
		silent := time.Since(p.lastRecv) >= c.cfg.StallTimeout
		p.mu.Unlock()
		if silent && c.ctx.Err() == nil {
			c.cfg.Log.Warn("path silent and ping unanswered; closing its connection", "path", p.Name)
			conn.CloseWithError(wire.CodeStalled, "path stalled")
		}
	})
}

// transportAlive probes conn below the streams (wire.TransportPing): any
// QUIC packet back within timeout says the path lives. A ping on a stream
// waits behind what an app can hold up (ct-server's stream limit, flow
// control filled by tunnels the app never reads), and once made healthy
// paths look dead; only a peer without datagrams gets the stream ping.
func transportAlive(ctx context.Context, conn *quic.Conn, timeout time.Duration) bool {
	alive, probed := wire.TransportPing(ctx, conn, timeout)
	if !probed {
		return wire.Ping(ctx, conn, timeout)
	}
	return alive
}

func (s *stallWatch) explain(err error) error {
	if s.dead || errors.Is(err, errStalled) {
		return fmt.Errorf("%w: nothing for %v", errStalled, time.Since(s.last).Round(time.Millisecond))
	}
	return err
}

// suspect keeps new requests off p for SuspectFor.
func (c *Client) suspect(p *path) {
	p.stalls.Add(1)
	p.mu.Lock()
	p.suspectUntil = time.Now().Add(c.cfg.SuspectFor)
	p.mu.Unlock()
}

// rateSampleBytes is how much of a response makes one rate sample: enough
// that one RTT of waiting for the first byte does not dominate.
const rateSampleBytes = 256 << 10

var copyBufs = sync.Pool{New: func() any { b := make([]byte, 32<<10); return &b }}

// connect tunnels a CONNECT through ct-server as a resumable session (see
// package tunnel): when its path fails, the tunnel moves to another path with
// no byte lost or duplicated.
func (c *Client) connect(w http.ResponseWriter, r *http.Request) {
	target, err := wire.NormHostPort(r.RequestURI, "")
	if err != nil {
		http.Error(w, "ct-client: CONNECT target: "+err.Error(), http.StatusBadRequest)
		return
	}
	app := c.identify(r)
	st := c.app(app)
	o, code, err := c.openAppTunnel(r.Context(), app, target, st)
	if err != nil {
		if code == http.StatusTooManyRequests || code == http.StatusServiceUnavailable {
			w.Header().Set("Retry-After", "1")
		}
		http.Error(w, "ct-client: "+err.Error(), code)
		return
	}
	if o.resp.StatusCode != http.StatusOK {
		for k, vs := range o.resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(o.resp.StatusCode)
		io.Copy(w, io.LimitReader(o.resp.Body, 64<<10))
		o.refused()
		return
	}
	appConn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		o.abandon(wire.CodeOK)
		return
	}
	// The app's bytes sent right after its head are in brw's buffer.
	var first io.Reader = appConn
	if brw.Reader.Buffered() > 0 {
		first = io.MultiReader(io.LimitReader(brw.Reader, int64(brw.Reader.Buffered())), appConn)
	}
	c.attachApp(o, appConn, []byte("HTTP/1.1 200 Connection established\r\n\r\n"), first, st)
}

// openedTunnel is a tunnel admitted by the gate and opened at ct-server
// (resp says how ct-server answered), not yet joined to its app.
type openedTunnel struct {
	c    *Client
	t    *tunnel.Tunnel
	str  *quic.Stream
	hr   *wire.HeadReader
	resp *http.Response
	p    *path
	slot *tunnelgate.Ticket
}

// refused ends a tunnel ct-server answered with other than 200.
func (o *openedTunnel) refused() {
	o.resp.Body.Close()
	o.abandon(wire.CodeOK)
}

// abandon drops the stream and gives the slot back.
func (o *openedTunnel) abandon(code quic.StreamErrorCode) {
	o.str.CancelRead(code)
	o.str.CancelWrite(code)
	o.c.gate.Release(o.slot)
}

// openAppTunnel is the common start of CONNECT and SOCKS5 CONNECT: a slot
// from the tunnel gate (fair between apps), then a tunnel stream on a
// path. On failure it returns the HTTP status that says why (429: the
// app's share is exhausted, 503: no slot freed, 502: ct-server
// unreachable) and the reason for the app.
func (c *Client) openAppTunnel(ctx context.Context, app, target string, st *appStats) (*openedTunnel, int, error) {
	st.requests.Add(1)
	slot, err := c.gate.Acquire(ctx, app)
	if err != nil {
		st.failures.Add(1)
		c.cfg.Log.Warn("CONNECT not admitted", "target", target, "app", app, "err", err)
		if errors.Is(err, tunnelgate.ErrShareExhausted) {
			return nil, http.StatusTooManyRequests, err
		}
		return nil, http.StatusServiceUnavailable, err
	}
	t := tunnel.New(tunnelHost{c}, target, c.request(app), slot)
	str, hr, resp, p, err := c.openTunnel(ctx, t)
	if err != nil {
		c.gate.Release(slot)
		st.failures.Add(1)
		c.cfg.Log.Warn("CONNECT failed", "target", target, "err", err)
		return nil, http.StatusBadGateway, errors.New("ct-server unreachable")
	}
	if resp.StatusCode != http.StatusOK {
		st.failures.Add(1)
	}
	return &openedTunnel{c: c, t: t, str: str, hr: hr, resp: resp, p: p, slot: slot}, 0, nil
}

// attachApp joins an opened tunnel to the app's connection: it writes
// reply (the proxy protocol's success answer) and carries bytes both ways
// until the tunnel ends, moving it between paths as it must.
func (c *Client) attachApp(o *openedTunnel, appConn net.Conn, reply []byte, first io.Reader, st *appStats) {
	defer c.gate.Release(o.slot)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		appConn.Close()
		o.abandon(wire.CodeShutdown)
		return
	}
	c.tunnels[appConn] = struct{}{}
	c.mu.Unlock()
	// Reclaimed (idle while others wait): a FIN, as a server ends an idle
	// keep-alive connection; the slot is free at once.
	c.gate.Attach(o.slot, func() { c.gate.Release(o.slot); appConn.Close() })
	defer func() {
		c.mu.Lock()
		delete(c.tunnels, appConn)
		c.mu.Unlock()
		appConn.Close()
	}()
	if _, err := appConn.Write(reply); err != nil {
		o.abandon(wire.CodeOK)
		return
	}
	o.t.Run(appConn, o.resp.Header.Get(wire.HdrSession), o.str, o.hr.Rest(), tunnelPath{o.p}, first, func(n int) { st.bytes.Add(int64(n)) })
}

// tunnelHost is the client as its tunnels' Host.
type tunnelHost struct{ c *Client }

func (h tunnelHost) Pick(ctx context.Context, req pathchoice.Request, avoid map[int]bool) (tunnel.Path, *quic.Conn, error) {
	p, conn, err := h.c.pick(ctx, req, avoid)
	if err != nil {
		return nil, nil, err
	}
	return tunnelPath{p}, conn, nil
}

func (h tunnelHost) Context() context.Context    { return h.c.ctx }
func (h tunnelHost) StallTimeout() time.Duration { return h.c.cfg.StallTimeout }
func (h tunnelHost) MaxAttempts() int            { return h.c.cfg.MaxAttempts }
func (h tunnelHost) OutageHold() time.Duration   { return h.c.cfg.OutageHold }
func (h tunnelHost) Log() *slog.Logger           { return h.c.cfg.Log }
func (h tunnelHost) Moved()                      { h.c.migrations.Add(1) }
func (h tunnelHost) Resumed(d time.Duration)     { h.c.resumeNanos.Store(int64(d)) }
func (h tunnelHost) Aborted()                    { h.c.aborts.Add(1) }

// tunnelPath is a path as a tunnel uses it.
type tunnelPath struct{ p *path }

func (t tunnelPath) ID() int      { return t.p.id }
func (t tunnelPath) Name() string { return t.p.Name }

// Carry counts the tunnel in the path's load (a stream with the app's
// priority as weight) and its tunnels.
func (t tunnelPath) Carry(delta, priority int) {
	t.p.addLoad(0, delta, delta*priority)
	t.p.tunnels.Add(int64(delta))
}

// Reader reads a tunnel's head on the path: the stream's own deadline
// stays, and what arrives counts as the path's.
func (t tunnelPath) Reader(str *quic.Stream) io.Reader { return &stallReader{s: str, d: 0, p: t.p} }

func (t tunnelPath) Usable(now time.Time) (*quic.Conn, bool) {
	conn := t.p.current()
	return conn, conn != nil && !t.p.held(now) && !t.p.retired.Load()
}

// openTunnel opens t's stream on a path, trying others when one fails and
// waiting (as forward does) while ct-server refuses it for its limits.
func (c *Client) openTunnel(ctx context.Context, t *tunnel.Tunnel) (*quic.Stream, *wire.HeadReader, *http.Response, *path, error) {
	avoid := map[int]bool{}
	refusals := 0
	var err error
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		p, conn, perr := c.pick(ctx, t.Request(), avoid)
		if perr != nil {
			return nil, nil, nil, nil, perr
		}
		avoid[p.id] = true
		p.requests.Add(1)
		var (
			str  *quic.Stream
			hr   *wire.HeadReader
			resp *http.Response
		)
		str, hr, resp, err = t.Open(ctx, tunnelPath{p}, conn, 0)
		if err == nil && refusedByLimits(resp) && refusals < limitRetries {
			resp.Body.Close()
			str.CancelRead(wire.CodeOK)
			str.CancelWrite(wire.CodeOK)
			refusals++
			c.limitRetries.Add(1)
			delete(avoid, p.id)
			attempt--
			if !wire.SleepCtx(ctx, min(limitRetryFirst<<refusals, limitRetryMax)) {
				return nil, nil, nil, nil, ctx.Err()
			}
			continue
		}
		if err == nil {
			return str, hr, resp, p, nil
		}
		if !errors.Is(err, errStalled) && !isConnErr(err) {
			break
		}
	}
	return nil, nil, nil, nil, err
}

// refusedByLimits: ct-server's own limits refused the stream for now (429
// or 503 with Retry-After and Ct-Error, which ct-server strips from
// upstream answers).
func refusedByLimits(resp *http.Response) bool {
	return (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) &&
		resp.Header.Get(wire.HdrError) != "" && resp.Header.Get("Retry-After") != ""
}

// discard is the logger of a configuration that sets none.
var discard = slog.New(slog.DiscardHandler)
