package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/idlebody"
	"github.com/hetquic/hetquic/agent/wire"
)

// ClientAuth is one ct-client ct-server accepts: an id for logs and
// metrics, its bearer token, and limits (nil: the server's defaults).
type ClientAuth struct {
	ID     string  `yaml:"id"`
	Token  string  `yaml:"token"`
	Limits *Limits `yaml:"limits"`
}

// Config configures a ct-server.
type Config struct {
	// TLS holds the server certificate; NextProtos is set to wire.ALPN.
	TLS *tls.Config
	// QUIC tunes the connections (nil: agent defaults, see wire.QUICConfig).
	QUIC *quic.Config
	// Clients are the ct-clients allowed in. There is no anonymous access.
	Clients []ClientAuth
	// Limits applies to clients that carry none of their own.
	Limits Limits
	// Allow lists the upstream app-servers, "host:port" (port 80 when
	// left out). Requests for anything else get 403: ct-server is never an
	// open proxy.
	Allow []string
	// AllowInternal lists the internal addresses (10.1.2.3) and prefixes
	// (192.168.0.0/24) an allow-listed name may resolve to; any other
	// loopback, link-local, private, metadata… address is refused
	// (egress.go). Allow entries that are IP literals need no entry here.
	AllowInternal []string
	// Resolver resolves upstream names (default net.DefaultResolver).
	Resolver Resolver
	// Prefetch lists http:// URLs fetched and pushed to every client that
	// asks for pushes in its hello (they must be allowed upstreams too).
	Prefetch []string
	// HeaderTimeout bounds reading a stream's request head (default 10 s):
	// a client that dribbles its head is cut off.
	HeaderTimeout time.Duration
	// UpstreamTimeout bounds dialling an app-server and waiting for its
	// response head (default 30 s).
	UpstreamTimeout time.Duration
	// HelloTimeout bounds the wait for a new connection's hello (default 5 s).
	HelloTimeout time.Duration
	// Dial opens connections to app-servers (default: a net.Dialer with
	// UpstreamTimeout). Tests give an in-memory network, so that fake time
	// (testing/synctest) covers the upstream side too.
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// MemoryBudget bounds the memory all clients' work may reserve
	// (StreamCost per request, TunnelCost per tunnel); new work beyond it
	// gets 503 with Retry-After (default DefaultMemoryBudget, < 0 none).
	MemoryBudget int64
	// MaxPreAuth bounds connections that have not said hello yet, in total
	// and per source address (defaults DefaultMaxPreAuth and
	// DefaultMaxPreAuthPerSource): one more is closed at once.
	MaxPreAuth, MaxPreAuthPerSource int
	// MaxPrefetchUpstream bounds the prefetch fetches running at once
	// over all clients (default 16): hints wait for a turn.
	MaxPrefetchUpstream int
	// AllowWeakTokens accepts client tokens below identity.MinTokenBits (tests of
	// old configurations only).
	AllowWeakTokens bool
	// PiecesRoundRobin makes ct-server one from before wire.HdrPiece: it
	// neither advertises the piece order (wire.HdrPieceOrder) nor honours
	// or removes the header, and sends a connection's streams round-robin
	// (tests of a new ct-client against an old ct-server).
	PiecesRoundRobin bool
	// Log receives the noteworthy events, with key/value attributes
	// (default: discarded); its records carry side=ct-server.
	Log *slog.Logger
}

// Server is a ct-server. Create it with NewServer, run it with Serve, stop
// it with Close.
type Server struct {
	cfg Config
	pol atomic.Pointer[policy] // who may connect, where to (Reload replaces it)
	up  *http.Transport

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	pc       net.PacketConn
	tr       *quic.Transport
	ln       *quic.Listener
	conns    map[*quic.Conn]*clientState // nil value: not yet authenticated
	sessions map[string]*session         // resumable tunnels by id
	udp      wire.DatagramRoutes         // UDP flows by connection and stream

	preauth    int                // connections before hello, in total
	preauthBy  map[netip.Addr]int // and per source address
	logins     loginBackoff
	tarpit     int                  // failed hellos whose answer is being held (loginFailed)
	tarpitBy   map[netip.Prefix]int // and per back-off source
	reserved   atomic.Int64         // memory reserved by all clients' work
	draining   atomic.Bool
	prefetchGo chan struct{} // a token per running prefetch fetch
	m          *serverMetrics

	conns0, unauthorized, badRequests, forbidden atomic.Int64
}

// Server-wide defaults (Config).
const (
	// DefaultMemoryBudget: what all clients' work may reserve. With the
	// Go heap's overhead the process stays under about twice this.
	DefaultMemoryBudget = 512 << 20
	// DefaultMaxPreAuth: a QUIC connection that has not said hello costs
	// about 70 KB (the issue measured 348 MB for 5000): 256 of them are
	// 18 MB.
	DefaultMaxPreAuth = 256
	// DefaultMaxPreAuthPerSource: a device has a few interfaces with up
	// to wire.MaxLanes connections each, all dialling at once after a restart.
	DefaultMaxPreAuthPerSource = 16
	// retryAfter is the Retry-After of a refusal by a limit that frees as
	// work finishes (all but the byte quota): typically within a second.
	retryAfter = "1"
)

// NewServer checks cfg and builds a server.
func NewServer(cfg Config) (*Server, error) {
	if cfg.TLS == nil || len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil {
		return nil, errors.New("agent server: TLS certificate required")
	}
	cfg.HeaderTimeout = cmp.Or(cfg.HeaderTimeout, 10*time.Second)
	cfg.UpstreamTimeout = cmp.Or(cfg.UpstreamTimeout, wire.DefaultUpstreamTimeout)
	cfg.HelloTimeout = cmp.Or(cfg.HelloTimeout, 5*time.Second)
	if cfg.Dial == nil {
		cfg.Dial = (&net.Dialer{Timeout: cfg.UpstreamTimeout}).DialContext
	}
	cfg.Log = cmp.Or(cfg.Log, slog.New(slog.DiscardHandler)).With("side", "ct-server")
	cfg.MemoryBudget = cmp.Or(cfg.MemoryBudget, DefaultMemoryBudget)
	cfg.MaxPreAuth = cmp.Or(cfg.MaxPreAuth, DefaultMaxPreAuth)
	cfg.MaxPreAuthPerSource = cmp.Or(cfg.MaxPreAuthPerSource, DefaultMaxPreAuthPerSource)
	if cfg.MaxPrefetchUpstream <= 0 {
		cfg.MaxPrefetchUpstream = 16
	}
	s := &Server{cfg: cfg, conns: map[*quic.Conn]*clientState{}, sessions: map[string]*session{},
		preauthBy: map[netip.Addr]int{}, tarpitBy: map[netip.Prefix]int{}, prefetchGo: make(chan struct{}, cfg.MaxPrefetchUpstream)}
	s.m = newServerMetrics(s)
	pol, err := s.newPolicy(Policy{Clients: cfg.Clients, Limits: cfg.Limits, Allow: cfg.Allow,
		AllowInternal: cfg.AllowInternal, Prefetch: cfg.Prefetch}, nil)
	if err != nil {
		return nil, err
	}
	s.pol.Store(pol)
	s.up = &http.Transport{
		Proxy:                  nil,            // never chain to another proxy from the environment
		DialContext:            s.dialUpstream, // resolved, checked, pinned
		DisableCompression:     true,           // pass bytes through as the app-server sent them
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        30 * time.Second,
		ResponseHeaderTimeout:  cfg.UpstreamTimeout,
		MaxResponseHeaderBytes: wire.MaxHeaderBytes,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// unauthorizedLinger is how long a refused connection stays open for its
// 401 response to arrive; the connection is closed with wire.CodeUnauthorized
// after it either way.
const unauthorizedLinger = 100 * time.Millisecond

// Serve accepts connections on pc until Close. It takes pc over and closes
// it on return.
func (s *Server) Serve(pc net.PacketConn) error {
	tlsConf := s.cfg.TLS.Clone()
	tlsConf.NextProtos = []string{wire.ALPN}
	tlsConf.MinVersion = tls.VersionTLS13
	tr := &quic.Transport{Conn: pc, ConnContext: s.admitConn, VerifySourceAddress: s.verifySource}
	ln, err := tr.Listen(tlsConf, wire.QUICConfig(s.cfg.QUIC, wire.DefaultIdleTimeout, 1000))
	if err != nil {
		pc.Close()
		return fmt.Errorf("agent server: listen: %w", err)
	}
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		ln.Close()
		tr.Close()
		pc.Close()
		return nil
	}
	s.tr, s.ln, s.pc = tr, ln, pc
	s.wg.Add(1)
	s.mu.Unlock()
	go s.warnEgress()
	for {
		conn, err := ln.Accept(s.ctx)
		if err != nil {
			if s.draining.Load() {
				<-s.ctx.Done() // Shutdown closed the listener: the old connections drain
			}
			if s.ctx.Err() != nil {
				return nil // Close closes the socket, after the goodbyes
			}
			ln.Close()
			tr.Close()
			pc.Close()
			return fmt.Errorf("agent server: accept: %w", err)
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.CloseWithError(wire.CodeShutdown, "shutting down")
			return nil
		}
		s.conns[conn] = nil
		s.wg.Add(1)
		s.mu.Unlock()
		s.conns0.Add(1)
		go s.handleConn(conn)
	}
}

// preauthSlot is a connection's place under the pre-authentication caps,
// from its first packet until its hello succeeds or it ends.
type preauthSlot struct {
	src  netip.Addr
	once sync.Once
}

type preauthKey struct{}

var errBusy = errors.New("ct-server busy")

// admitConn is the QUIC transport's ConnContext: it runs on a new
// connection's first packet, before the TLS handshake, so a flood of
// handshakes is refused before it costs a key exchange. It applies the
// login back-off and the pre-auth caps and holds the connection's slot
// until releasePreauth.
func (s *Server) admitConn(ctx context.Context, info *quic.ClientInfo) (context.Context, error) {
	src := sourceAddr(info.RemoteAddr)
	s.mu.Lock()
	if refuse := s.preauthRefusal(src, time.Now()); refuse != "" {
		s.mu.Unlock()
		s.m.limitHits.WithLabelValues(refuse).Inc()
		return nil, errBusy
	}
	s.preauth++
	s.preauthBy[src]++
	s.mu.Unlock()
	slot := &preauthSlot{src: src}
	ctx = context.WithValue(ctx, preauthKey{}, slot)
	context.AfterFunc(ctx, func() { s.releasePreauth(slot) }) // handshake failed or connection gone
	return ctx, nil
}

// verifySource asks for QUIC address validation (a Retry round trip)
// once half the pre-auth connections are taken: spoofed sources then
// cannot hold slots.
func (s *Server) verifySource(net.Addr) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.MaxPreAuth > 0 && s.preauth >= s.cfg.MaxPreAuth/2
}

// sourceAddr is the IP of a remote address (unmapped from ::ffff:).
func sourceAddr(a net.Addr) netip.Addr {
	if ua, ok := a.(*net.UDPAddr); ok {
		if ip, ok := netip.AddrFromSlice(ua.IP); ok {
			return ip.Unmap()
		}
	}
	ap, _ := netip.ParseAddrPort(a.String())
	return ap.Addr().Unmap()
}

// Pre-authentication refusals (labels of ct_server_limit_hits_total).
const (
	limPreAuthTotal   = "preauth_total"
	limPreAuthSource  = "preauth_source"
	limEgress         = "egress_internal" // an upstream resolving to an internal address
	limLoginBackoff   = "login_backoff"   // a failed hello's answer held back
	limLoginUntracked = "login_untracked" // a failure the full back-off table could not record
)

// preauthRefusal says why a new connection from src is refused before its
// hello, or "". Called with s.mu held.
func (s *Server) preauthRefusal(src netip.Addr, now time.Time) string {
	switch {
	case s.cfg.MaxPreAuth > 0 && s.preauth >= s.cfg.MaxPreAuth:
		return limPreAuthTotal
	case s.cfg.MaxPreAuthPerSource > 0 && s.preauthBy[src] >= s.cfg.MaxPreAuthPerSource:
		return limPreAuthSource
	}
	return ""
}

// releasePreauth gives a connection's pre-auth slot back (once).
func (s *Server) releasePreauth(slot *preauthSlot) {
	slot.once.Do(func() {
		s.mu.Lock()
		s.preauth--
		if s.preauthBy[slot.src]--; s.preauthBy[slot.src] <= 0 {
			delete(s.preauthBy, slot.src)
		}
		s.mu.Unlock()
	})
}

// Close stops accepting, closes every connection and waits for every
// goroutine of the server.
func (s *Server) Close() error {
	s.mu.Lock()
	s.cancel()
	for c := range s.conns {
		c.CloseWithError(wire.CodeShutdown, "ct-server shutting down")
	}
	ln, tr, pc := s.ln, s.tr, s.pc
	s.mu.Unlock()
	if ln != nil {
		ln.Close()
	}
	s.wg.Wait()
	if tr != nil {
		tr.Close()
		pc.Close()
	}
	s.up.CloseIdleConnections()
	return nil
}

// Shutdown drains the server: new connections and new work are refused
// (503 with Retry-After: ct-client waits and retries, or moves on), the
// requests and tunnels in progress run until they end or ctx does, and
// then everything closes as in Close.
func (s *Server) Shutdown(ctx context.Context) error {
	s.draining.Store(true)
	s.mu.Lock()
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		ln.Close() // no new connections; the socket stays for the old ones
	}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var err error
	for s.reserved.Load() > 0 {
		select {
		case <-tick.C:
			continue
		case <-ctx.Done():
			err = fmt.Errorf("agent server: drain: %w (%d bytes of work still reserved)", ctx.Err(), s.reserved.Load())
		}
		break
	}
	s.Close()
	return err
}

// Health says whether the server takes new work: nil, or why not.
func (s *Server) Health() error {
	if s.draining.Load() {
		return errors.New("draining")
	}
	if s.ctx.Err() != nil {
		return errors.New("closed")
	}
	if b := s.cfg.MemoryBudget; b > 0 && s.reserved.Load() > b*9/10 {
		return fmt.Errorf("memory budget %d%% reserved", s.reserved.Load()*100/b)
	}
	return nil
}

// authenticate returns the client whose token matches, comparing every
// token in constant time.
func (s *Server) authenticate(token string) *clientState {
	h := sha256.Sum256([]byte(token))
	var found *clientState
	pol := s.pol.Load()
	for i, ch := range pol.hashes {
		if subtle.ConstantTimeCompare(h[:], ch[:]) == 1 {
			found = pol.clients[i]
		}
	}
	return found
}

func (s *Server) handleConn(conn *quic.Conn) {
	defer s.wg.Done()
	defer func() {
		s.mu.Lock()
		delete(s.conns, conn)
		s.mu.Unlock()
	}()
	cs, wantPush, refused := s.hello(conn)
	if slot, ok := conn.Context().Value(preauthKey{}).(*preauthSlot); ok {
		s.releasePreauth(slot)
	}
	if cs == nil {
		// A moment for the 401 or 429 to arrive before the connection goes.
		wire.SleepCtx(s.ctx, unauthorizedLinger)
		if refused {
			conn.CloseWithError(wire.CodeLimit, "too many connections")
		} else {
			conn.CloseWithError(wire.CodeUnauthorized, "unauthorized")
		}
		return
	}
	defer cs.dropConn()
	s.mu.Lock()
	if _, ok := s.conns[conn]; ok {
		s.conns[conn] = cs
	}
	s.mu.Unlock()
	s.cfg.Log.Info("client connected", "client", cs.id, "remote", conn.RemoteAddr().String())
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { s.udp.Dispatch(s.ctx, conn) }) // UDP flows' datagrams
	if wantPush {
		for _, u := range s.pol.Load().prefetch {
			wg.Go(func() { s.push(conn, cs, u) })
		}
	}
	for {
		str, err := conn.AcceptStream(s.ctx)
		if err != nil {
			return
		}
		wg.Go(func() { s.handleStream(conn, cs, str) })
	}
}

// hello reads and checks the first stream of a connection. refused says
// the token was good but the client has MaxConns connections already.
// Every other failure goes through loginFailed, which may hold its answer
// back (login back-off).
func (s *Server) hello(conn *quic.Conn) (cs *clientState, wantPush, refused bool) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.HelloTimeout)
	defer cancel()
	str, err := conn.AcceptStream(ctx)
	if err != nil {
		s.loginFailed(conn, nil, 0, "no hello")
		return nil, false, false
	}
	defer str.Close()
	str.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	req, err := wire.NewHeadReader(str).ReadRequest()
	if err != nil {
		s.loginFailed(conn, str, http.StatusBadRequest, "bad hello")
		return nil, false, false
	}
	t, err := wire.ParseTarget(req)
	if err != nil || t.Kind != wire.KindHello {
		s.loginFailed(conn, str, http.StatusUnauthorized, "first stream must be "+wire.PathHello)
		return nil, false, false
	}
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	cs = s.authenticate(token) // first: a correct token is never held back
	if !ok || cs == nil {
		s.loginFailed(conn, str, http.StatusUnauthorized, "unknown token")
		return nil, false, false
	}
	if !cs.addConn() {
		s.m.limitHits.WithLabelValues(limConns).Inc()
		s.cfg.Log.Warn("connection limit; refusing one", "client", cs.id, "max_conns", cs.currentLimits().MaxConns, "remote", conn.RemoteAddr().String())
		wire.ErrorResponse(str, http.StatusTooManyRequests, "too many connections")
		return nil, false, true
	}
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{wire.HdrClient: {cs.id}}, ContentLength: 0, Body: http.NoBody}
	if n := cs.currentLimits().MaxStreams; n > 0 { // ct-client keeps to it rather than meet 429s
		resp.Header.Set(wire.HdrMaxStreams, strconv.Itoa(n))
	}
	if n := cs.currentLimits().tunnelSlots(); n > 0 { // ct-client queues CONNECTs beyond it
		resp.Header.Set(wire.HdrMaxTunnels, strconv.Itoa(n))
	}
	if !s.cfg.PiecesRoundRobin { // ct-client counts on the order only then
		resp.Header.Set(wire.HdrPieceOrder, "1")
	}
	if err := resp.Write(str); err != nil {
		cs.dropConn()
		return nil, false, true
	}
	return cs, req.Header.Get(wire.HdrWantPush) == "1", false
}

// loginFailed records a failed hello and answers it on str (nil: no
// stream to answer on) with code and reason. Once its source is backing
// off, the answer is held until the source's block ends (loginBackoff),
// with the connection's pre-auth slot given back first so that the held
// connections of a guesser never keep a good client behind the same
// address from connecting.
func (s *Server) loginFailed(conn *quic.Conn, str *quic.Stream, code int, reason string) {
	s.unauthorized.Add(1)
	src, now := sourceAddr(conn.RemoteAddr()), time.Now()
	s.mu.Lock()
	f := s.logins.fail(src, now)
	var snap *loginFailures // f as of now: other hellos update f under s.mu
	var hold time.Duration
	if f != nil {
		c := *f
		snap = &c
		hold = max(f.until.Sub(now), 0)
		if hold > 0 && (s.tarpitBy[f.src] >= loginTarpitPerSource || s.tarpit >= loginTarpitTotal) {
			hold = 0 // enough held already: answer at once
		}
		if hold > 0 {
			s.tarpit++
			s.tarpitBy[f.src]++
		}
	}
	s.mu.Unlock()
	if f == nil {
		s.m.limitHits.WithLabelValues(limLoginUntracked).Inc()
	}
	if hold > 0 {
		s.m.limitHits.WithLabelValues(limLoginBackoff).Inc()
		if slot, ok := conn.Context().Value(preauthKey{}).(*preauthSlot); ok {
			s.releasePreauth(slot)
		}
		start := time.Now()
		wire.SleepCtx(s.ctx, hold)
		hold = time.Since(start) // less when ct-server closes meanwhile
		s.mu.Lock()
		s.tarpit--
		if s.tarpitBy[f.src]--; s.tarpitBy[f.src] <= 0 {
			delete(s.tarpitBy, f.src)
		}
		s.mu.Unlock()
	}
	reason = snap.refusal(reason, hold)
	s.cfg.Log.Warn("hello refused; closing", "remote", conn.RemoteAddr().String(), "reason", reason)
	if str != nil {
		wire.ErrorResponse(str, code, reason)
	}
}

func (s *Server) handleStream(conn *quic.Conn, cs *clientState, str *quic.Stream) {
	closeStr := true // a tunnel session owns its stream
	defer func() {
		if closeStr {
			str.Close()
		}
	}()
	hr, req, t, ok := s.readStreamHead(cs, str)
	if !ok || s.control(str, t) || !s.allowed(cs, str, t) {
		return
	}
	session := req.Header.Get(wire.HdrSession)
	if t.Kind == wire.KindConnect && session != "" && session != "new" {
		closeStr = false
		s.resumeSession(str, hr, cs, req) // the session holds its slot already
		return
	}
	w, cost, ok := s.admitStream(cs, str, t)
	if !ok {
		return
	}
	if t.Kind == wire.KindConnect && session == "new" {
		closeStr = false
		s.openSession(str, hr, cs, t.Upstream) // releases the slot when the session ends
		return
	}
	start := time.Now()
	defer func() {
		s.done(cs, w, cost)
		s.m.duration.WithLabelValues(t.Kind.String()).Observe(time.Since(start).Seconds())
	}()
	s.serveWork(conn, cs, str, hr, req, t)
}

// readStreamHead reads and classifies a stream's request within
// HeaderTimeout; on failure it answers the stream and ok is false.
func (s *Server) readStreamHead(cs *clientState, str *quic.Stream) (hr *wire.HeadReader, req *http.Request, t wire.Target, ok bool) {
	headDeadline := time.Now().Add(s.cfg.HeaderTimeout)
	str.SetReadDeadline(headDeadline)
	hr = wire.NewHeadReader(str)
	req, err := hr.ReadRequest()
	if err != nil {
		s.badRequests.Add(1)
		code, reason := http.StatusBadRequest, "malformed request"
		if errors.Is(err, wire.ErrHeaderTooLarge) {
			code, reason = http.StatusRequestHeaderFieldsTooLarge, "request head too large"
		} else if idlebody.IsTimeout(err) || !time.Now().Before(headDeadline) {
			code, reason = http.StatusRequestTimeout, "request head timeout"
		}
		s.cfg.Log.Warn("bad stream", "client", cs.id, "err", err)
		str.CancelRead(wire.CodeOK)
		wire.ErrorResponse(str, code, reason)
		return nil, nil, t, false
	}
	str.SetReadDeadline(time.Time{})
	if t, err = wire.ParseTarget(req); err != nil {
		s.badRequests.Add(1)
		str.CancelRead(wire.CodeOK)
		wire.ErrorResponse(str, http.StatusBadRequest, err.Error())
		return nil, nil, t, false
	}
	return hr, req, t, true
}

// control answers the control requests that need no upstream (a late
// hello, a ping); it reports whether t was one.
func (s *Server) control(str *quic.Stream, t wire.Target) bool {
	switch t.Kind {
	case wire.KindHello:
		wire.ErrorResponse(str, http.StatusBadRequest, "hello only on the first stream")
		return true
	case wire.KindPing:
		resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, ContentLength: 4, Body: io.NopCloser(strings.NewReader("pong"))}
		resp.Write(str)
		return true
	}
	return false
}

// allowed says t's upstream is in the allow-list, answering 403 if not.
func (s *Server) allowed(cs *clientState, str *quic.Stream, t wire.Target) bool {
	if s.pol.Load().allow[t.Upstream] {
		return true
	}
	s.forbidden.Add(1)
	s.cfg.Log.Warn("upstream not allowed", "client", cs.id, "upstream", t.Upstream)
	str.CancelRead(wire.CodeOK)
	wire.ErrorResponse(str, http.StatusForbidden, "upstream "+t.Upstream+" is not allowed")
	return false
}

// admitStream takes the slot and memory t's work costs, answering the
// limit that refused it if one did.
func (s *Server) admitStream(cs *clientState, str *quic.Stream, t wire.Target) (w work, cost int64, ok bool) {
	w, cost = workRequest, int64(StreamCost)
	switch t.Kind {
	case wire.KindConnect:
		w, cost = workTunnel, TunnelIdleCost
	case wire.KindPrefetch:
		w = workPrefetch
	}
	code, lim := s.admit(cs, w, cost)
	if code == 0 {
		return w, cost, true
	}
	s.cfg.Log.Warn("stream refused by a limit", "client", cs.id, "kind", t.Kind, "limit", lim)
	str.CancelRead(wire.CodeOK)
	h := http.Header{}
	if lim != limBytes { // the others free as work ends; the quota does not
		h.Set("Retry-After", retryAfter)
	}
	wire.ErrorResponseH(str, code, h, "limit reached: "+lim)
	return w, cost, false
}

// serveWork serves an admitted stream: a UDP flow, a prefetch hint, a
// plain tunnel or a forwarded request; a broken one is reset (with
// CodeLimit when the byte quota ran out).
func (s *Server) serveWork(conn *quic.Conn, cs *clientState, str *quic.Stream, hr *wire.HeadReader, req *http.Request, t wire.Target) {
	switch t.Kind {
	case wire.KindUDP:
		s.udpFlow(conn, str, t.Upstream)
		return
	case wire.KindPrefetch:
		resp := &http.Response{StatusCode: http.StatusAccepted, ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, ContentLength: 0, Body: http.NoBody}
		resp.Write(str)
		s.push(conn, cs, t.URL)
		return
	}
	lw := &limitedWriter{w: str, c: cs, done: s.ctx.Done()}
	var werr error
	if t.Kind == wire.KindConnect {
		werr = s.tunnel(str, hr, lw, t.Upstream)
	} else {
		if u, ok := wire.PiecePriority(req.Header.Get(wire.HdrPiece)); ok && !s.cfg.PiecesRoundRobin {
			str.SetPriority(u, false) // in the order asked (wire.HdrPiece)
		}
		werr = s.forward(str, req, lw, sendStats(conn))
	}
	if werr != nil {
		code := quic.StreamErrorCode(wire.CodeAborted)
		if errors.Is(werr, errQuota) {
			s.m.limitHits.WithLabelValues(limBytes).Inc()
			s.cfg.Log.Warn("byte quota exhausted", "client", cs.id)
			code = wire.CodeLimit
		}
		str.CancelWrite(code)
	}
}

// admit reserves cost for w of cs: 0, or the status that refuses it
// (503 for the server's memory budget or a drain, 429 for the client's
// limits) and the limit's name.
func (s *Server) admit(cs *clientState, w work, cost int64) (int, string) {
	if s.draining.Load() {
		return http.StatusServiceUnavailable, "draining"
	}
	if b := s.cfg.MemoryBudget; b > 0 && s.reserved.Add(cost) > b {
		s.reserved.Add(-cost)
		s.m.limitHits.WithLabelValues(limMemory).Inc()
		return http.StatusServiceUnavailable, limMemory
	} else if b <= 0 {
		s.reserved.Add(cost)
	}
	if lim := cs.acquire(w, cost); lim != "" {
		s.reserved.Add(-cost)
		s.m.limitHits.WithLabelValues(lim).Inc()
		return http.StatusTooManyRequests, lim
	}
	return 0, ""
}

// reserveBytes takes n more bytes for cs's work already admitted, against
// the server's memory budget and the client's buffer limit; false if
// either refuses them.
func (s *Server) reserveBytes(cs *clientState, n int64) bool {
	if b := s.cfg.MemoryBudget; b > 0 && s.reserved.Add(n) > b {
		s.reserved.Add(-n)
		return false
	} else if b <= 0 {
		s.reserved.Add(n)
	}
	if !cs.reserve(n) {
		s.reserved.Add(-n)
		return false
	}
	return true
}

// done gives back what admit took.
func (s *Server) done(cs *clientState, w work, cost int64) {
	cs.release(w, cost)
	s.reserved.Add(-cost)
}

// sendStats are conn's sending counters for wire.HdrSendStats.
func sendStats(conn *quic.Conn) wire.SendStats {
	cs := conn.ConnectionStats()
	return wire.SendStats{Sent: cs.PacketsSent, Lost: cs.PacketsLost, SRTT: cs.SmoothedRTT, MinRTT: cs.MinRTT}
}

// forward sends req to its upstream and the response back on str, its
// head carrying st (wire.HdrSendStats). It returns an error only when the
// response could not be delivered whole.
func (s *Server) forward(str *quic.Stream, req *http.Request, w io.Writer, st wire.SendStats) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(str.Context(), cancel)
	defer stop()
	out := req.WithContext(ctx)
	out.RequestURI = ""
	out.Header = req.Header.Clone()
	wire.RemoveHopHeaders(out.Header)
	if !s.cfg.PiecesRoundRobin { // one from before it passed it on
		out.Header.Del(wire.HdrPiece) // ct-client's to ct-server only
	}
	if req.Body != nil && req.Body != http.NoBody {
		body := idlebody.New(req.Body, str.SetReadDeadline) // a stalled body is cut, not waited for
		defer body.Clear()
		out.Body = body
	}
	resp, err := s.up.RoundTrip(out)
	if err != nil {
		str.CancelRead(wire.CodeOK)
		return s.upstreamFailed(w, req.URL.Host, err)
	}
	defer resp.Body.Close()
	wire.RemoveHopHeaders(resp.Header)
	resp.Header.Del(wire.HdrError) // only ct-server's own refusals carry it
	resp.Header.Set(wire.HdrSendStats, st.String())
	return resp.Write(w)
}

// upstreamFailed answers a request whose upstream round trip failed
// before a response head, by whose trouble it was: 403 when the egress
// rules refused its address (the app learns which upstream, the log which
// address), 408 or 400 for the request's own body, 504 for a timeout,
// else 502.
func (s *Server) upstreamFailed(w io.Writer, upstream string, err error) error {
	var ee *EgressError
	var be *idlebody.AppError
	code, reason := http.StatusBadGateway, "upstream unavailable"
	switch {
	case errors.As(err, &ee):
		s.forbidden.Add(1)
		s.m.limitHits.WithLabelValues(limEgress).Inc()
		s.cfg.Log.Warn("upstream refused by the egress rules", "upstream", upstream, "err", ee.Error())
		return wire.ErrorResponse(w, http.StatusForbidden, "upstream "+upstream+" resolves to an internal address")
	case errors.Is(err, idlebody.ErrIdle):
		code, reason = http.StatusRequestTimeout, "request body idle"
	case errors.As(err, &be):
		code, reason = http.StatusBadRequest, "malformed request body"
	case idlebody.IsTimeout(err):
		code, reason = http.StatusGatewayTimeout, "upstream timeout"
	}
	s.cfg.Log.Warn("upstream failed", "upstream", upstream, "err", err)
	return wire.ErrorResponse(w, code, reason)
}

// tunnel connects str to a TCP connection to upstream (CONNECT).
func (s *Server) tunnel(str *quic.Stream, hr *wire.HeadReader, w io.Writer, upstream string) error {
	up, err := s.dialUpstream(str.Context(), "tcp", upstream)
	if err != nil {
		str.CancelRead(wire.CodeOK)
		return s.upstreamFailed(w, upstream, err)
	}
	defer up.Close()
	stop := context.AfterFunc(s.ctx, func() { up.Close() })
	defer stop()
	if _, err := io.WriteString(w, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(up, hr.Rest()) // the client's bytes, including any read ahead
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	_, err = io.Copy(w, up)
	if err != nil {
		str.CancelRead(wire.CodeOK)
		up.Close()
	}
	// The upstream finished sending: FIN the stream (deferred Close) and
	// wait for the client's side to end.
	if err == nil {
		str.Close()
	}
	select {
	case <-done:
	case <-s.ctx.Done():
		str.CancelRead(wire.CodeShutdown)
		<-done
	}
	return err
}

// push fetches url and pushes it to the client on a unidirectional stream.
func (s *Server) push(conn *quic.Conn, cs *clientState, rawURL string) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.UpstreamTimeout)
	defer cancel()
	select { // at most MaxPrefetchUpstream fetches at once, all clients together
	case s.prefetchGo <- struct{}{}:
		defer func() { <-s.prefetchGo }()
	case <-ctx.Done():
		return
	case <-conn.Context().Done():
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return
	}
	resp, err := s.up.RoundTrip(req)
	if err != nil {
		s.cfg.Log.Warn("prefetch failed", "url", rawURL, "err", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.cfg.Log.Info("prefetch not pushed", "url", rawURL, "status", resp.StatusCode)
		return
	}
	ustr, err := conn.OpenUniStreamSync(ctx)
	if err != nil {
		return
	}
	wire.RemoveHopHeaders(resp.Header)
	resp.Header.Set(wire.HdrPushURL, rawURL)
	if err := resp.Write(&limitedWriter{w: ustr, c: cs, done: s.ctx.Done()}); err != nil {
		ustr.CancelWrite(wire.CodeLimit)
		return
	}
	ustr.Close()
}
