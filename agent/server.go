package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
)

// ClientAuth is one ct-client ct-server accepts: an id for logs and
// metrics, its bearer token, and limits (nil: the server's defaults).
type ClientAuth struct {
	ID     string  `yaml:"id"`
	Token  string  `yaml:"token"`
	Limits *Limits `yaml:"limits"`
}

// ServerConfig configures a ct-server.
type ServerConfig struct {
	// TLS holds the server certificate; NextProtos is set to ALPN.
	TLS *tls.Config
	// QUIC tunes the connections (nil: agent defaults, see quicConfig).
	QUIC *quic.Config
	// Clients are the ct-clients allowed in. There is no anonymous access.
	Clients []ClientAuth
	// Limits applies to clients that carry none of their own.
	Limits Limits
	// Allow lists the upstream app-servers, "host:port" (port 80 when
	// left out). Requests for anything else get 403: ct-server is never an
	// open proxy.
	Allow []string
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
	// Logf receives one line per noteworthy event (default: discarded).
	Logf func(format string, args ...any)
}

// Server is a ct-server. Create it with NewServer, run it with Serve, stop
// it with Close.
type Server struct {
	cfg     ServerConfig
	allow   map[string]bool
	clients []*clientState
	hashes  [][32]byte // sha256 of each client's token, same order
	up      *http.Transport

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu       sync.Mutex
	pc       net.PacketConn
	tr       *quic.Transport
	ln       *quic.Listener
	conns    map[*quic.Conn]*clientState // nil value: not yet authenticated
	sessions map[string]*session         // resumable tunnels by id

	conns0, unauthorized, badRequests, forbidden atomic.Int64
}

// NewServer checks cfg and builds a server.
func NewServer(cfg ServerConfig) (*Server, error) {
	if cfg.TLS == nil || len(cfg.TLS.Certificates) == 0 && cfg.TLS.GetCertificate == nil {
		return nil, errors.New("agent server: TLS certificate required")
	}
	if len(cfg.Clients) == 0 {
		return nil, errors.New("agent server: no clients configured (there is no anonymous access)")
	}
	if cfg.HeaderTimeout == 0 {
		cfg.HeaderTimeout = 10 * time.Second
	}
	if cfg.UpstreamTimeout == 0 {
		cfg.UpstreamTimeout = 30 * time.Second
	}
	if cfg.HelloTimeout == 0 {
		cfg.HelloTimeout = 5 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s := &Server{cfg: cfg, allow: map[string]bool{}, conns: map[*quic.Conn]*clientState{}, sessions: map[string]*session{}}
	for _, a := range cfg.Allow {
		hp, err := normHostPort(a, "80")
		if err != nil {
			return nil, fmt.Errorf("agent server: allow %q: %w", a, err)
		}
		s.allow[hp] = true
	}
	seen := map[string]bool{}
	for i, c := range cfg.Clients {
		if c.ID == "" || len(c.Token) < 16 {
			return nil, fmt.Errorf("agent server: client %d: needs an id and a token of at least 16 characters", i+1)
		}
		if seen[c.ID] {
			return nil, fmt.Errorf("agent server: client id %q twice", c.ID)
		}
		seen[c.ID] = true
		lim := cfg.Limits
		if c.Limits != nil {
			lim = *c.Limits
		}
		s.clients = append(s.clients, &clientState{id: c.ID, limits: lim})
		s.hashes = append(s.hashes, sha256.Sum256([]byte(c.Token)))
	}
	for _, u := range cfg.Prefetch {
		hp, err := upstreamOf(u)
		if err != nil {
			return nil, fmt.Errorf("agent server: prefetch %q: %w", u, err)
		}
		if !s.allow[hp] {
			return nil, fmt.Errorf("agent server: prefetch %q: upstream %s is not in the allow-list", u, hp)
		}
	}
	s.up = &http.Transport{
		Proxy:                  nil, // never chain to another proxy from the environment
		DialContext:            (&net.Dialer{Timeout: cfg.UpstreamTimeout}).DialContext,
		DisableCompression:     true, // pass bytes through as the app-server sent them
		MaxIdleConnsPerHost:    64,
		IdleConnTimeout:        30 * time.Second,
		ResponseHeaderTimeout:  cfg.UpstreamTimeout,
		MaxResponseHeaderBytes: MaxHeaderBytes,
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// quicConfig is the agent's QUIC configuration: the paper keeps each
// connection alive with KeepAlivePeriod = MaxIdleTimeout/4 (§IV-B).
func quicConfig(base *quic.Config, idle time.Duration, streams int64) *quic.Config {
	var c quic.Config
	if base != nil {
		c = *base
	}
	if c.MaxIdleTimeout == 0 {
		c.MaxIdleTimeout = idle
	}
	if c.KeepAlivePeriod == 0 {
		c.KeepAlivePeriod = c.MaxIdleTimeout / 4
	}
	if c.HandshakeIdleTimeout == 0 {
		c.HandshakeIdleTimeout = 3 * time.Second
	}
	if c.MaxIncomingStreams == 0 {
		c.MaxIncomingStreams = streams
	}
	if c.MaxStreamReceiveWindow == 0 {
		c.MaxStreamReceiveWindow = streamWindow // tunnel resume relies on it (tunnel.go)
	}
	if c.InitialStreamReceiveWindow == 0 || c.InitialStreamReceiveWindow > c.MaxStreamReceiveWindow {
		c.InitialStreamReceiveWindow = min(512<<10, c.MaxStreamReceiveWindow)
	}
	return &c
}

// unauthorizedLinger is how long a refused connection stays open for its
// 401 response to arrive; the connection is closed with codeUnauthorized
// after it either way.
const unauthorizedLinger = 100 * time.Millisecond

// DefaultIdleTimeout is the agent's QUIC MaxIdleTimeout; keep-alives go
// every quarter of it.
const DefaultIdleTimeout = 20 * time.Second

// Serve accepts connections on pc until Close. It takes pc over and closes
// it on return.
func (s *Server) Serve(pc net.PacketConn) error {
	tlsConf := s.cfg.TLS.Clone()
	tlsConf.NextProtos = []string{ALPN}
	tlsConf.MinVersion = tls.VersionTLS13
	tr := &quic.Transport{Conn: pc}
	ln, err := tr.Listen(tlsConf, quicConfig(s.cfg.QUIC, DefaultIdleTimeout, 1000))
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
	s.mu.Unlock()
	for {
		conn, err := ln.Accept(s.ctx)
		if err != nil {
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
			conn.CloseWithError(codeShutdown, "shutting down")
			return nil
		}
		s.conns[conn] = nil
		s.wg.Add(1)
		s.mu.Unlock()
		s.conns0.Add(1)
		go s.handleConn(conn)
	}
}

// Close stops accepting, closes every connection and waits for every
// goroutine of the server.
func (s *Server) Close() error {
	s.mu.Lock()
	s.cancel()
	for c := range s.conns {
		c.CloseWithError(codeShutdown, "ct-server shutting down")
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

// authenticate returns the client whose token matches, comparing every
// token in constant time.
func (s *Server) authenticate(token string) *clientState {
	h := sha256.Sum256([]byte(token))
	var found *clientState
	for i, ch := range s.hashes {
		if subtle.ConstantTimeCompare(h[:], ch[:]) == 1 {
			found = s.clients[i]
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
	cs, wantPush := s.hello(conn)
	if cs == nil {
		s.unauthorized.Add(1)
		s.cfg.Logf("ct-server: %s: unauthorized, closing", conn.RemoteAddr())
		// A moment for the 401 to arrive before the connection goes.
		sleepCtx(s.ctx, unauthorizedLinger)
		conn.CloseWithError(codeUnauthorized, "unauthorized")
		return
	}
	s.mu.Lock()
	if _, ok := s.conns[conn]; ok {
		s.conns[conn] = cs
	}
	s.mu.Unlock()
	s.cfg.Logf("ct-server: client %s connected from %s", cs.id, conn.RemoteAddr())
	var wg sync.WaitGroup
	defer wg.Wait()
	if wantPush {
		for _, u := range s.cfg.Prefetch {
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

// hello reads and checks the first stream of a connection.
func (s *Server) hello(conn *quic.Conn) (*clientState, bool) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.HelloTimeout)
	defer cancel()
	str, err := conn.AcceptStream(ctx)
	if err != nil {
		return nil, false
	}
	defer str.Close()
	str.SetReadDeadline(time.Now().Add(s.cfg.HelloTimeout))
	req, err := newHeadReader(str).readRequest()
	if err != nil {
		errorResponse(str, http.StatusBadRequest, "bad hello")
		return nil, false
	}
	t, err := ParseTarget(req)
	if err != nil || t.Kind != KindHello {
		errorResponse(str, http.StatusUnauthorized, "first stream must be "+pathHello)
		return nil, false
	}
	token, ok := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
	cs := s.authenticate(token)
	if !ok || cs == nil {
		errorResponse(str, http.StatusUnauthorized, "unknown token")
		return nil, false
	}
	resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{hdrClient: {cs.id}}, ContentLength: 0, Body: http.NoBody}
	if err := resp.Write(str); err != nil {
		return nil, false
	}
	return cs, req.Header.Get(hdrWantPush) == "1"
}

func (s *Server) handleStream(conn *quic.Conn, cs *clientState, str *quic.Stream) {
	closeStr := true // a tunnel session owns its stream
	defer func() {
		if closeStr {
			str.Close()
		}
	}()
	headDeadline := time.Now().Add(s.cfg.HeaderTimeout)
	str.SetReadDeadline(headDeadline)
	hr := newHeadReader(str)
	req, err := hr.readRequest()
	if err != nil {
		s.badRequests.Add(1)
		code, reason := http.StatusBadRequest, "malformed request"
		if errors.Is(err, ErrHeaderTooLarge) {
			code, reason = http.StatusRequestHeaderFieldsTooLarge, "request head too large"
		} else if isTimeout(err) || !time.Now().Before(headDeadline) {
			code, reason = http.StatusRequestTimeout, "request head timeout"
		}
		s.cfg.Logf("ct-server: client %s: bad stream: %v", cs.id, err)
		str.CancelRead(codeOK)
		errorResponse(str, code, reason)
		return
	}
	str.SetReadDeadline(time.Time{})
	t, err := ParseTarget(req)
	if err != nil {
		s.badRequests.Add(1)
		str.CancelRead(codeOK)
		errorResponse(str, http.StatusBadRequest, err.Error())
		return
	}
	switch t.Kind {
	case KindHello:
		errorResponse(str, http.StatusBadRequest, "hello only on the first stream")
		return
	case KindPing:
		resp := &http.Response{StatusCode: http.StatusOK, ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, ContentLength: 4, Body: io.NopCloser(strings.NewReader("pong"))}
		resp.Write(str)
		return
	}
	if !s.allow[t.Upstream] {
		s.forbidden.Add(1)
		s.cfg.Logf("ct-server: client %s: upstream %s not allowed", cs.id, t.Upstream)
		str.CancelRead(codeOK)
		errorResponse(str, http.StatusForbidden, "upstream "+t.Upstream+" is not allowed")
		return
	}
	if t.Kind == KindPrefetch {
		resp := &http.Response{StatusCode: http.StatusAccepted, ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{}, ContentLength: 0, Body: http.NoBody}
		resp.Write(str)
		s.push(conn, cs, t.URL)
		return
	}
	if t.Kind == KindConnect && req.Header.Get(hdrSession) != "" && req.Header.Get(hdrSession) != "new" {
		closeStr = false
		s.resumeSession(str, hr, cs, req)
		return
	}
	if !cs.acquire() {
		str.CancelRead(codeOK)
		errorResponse(str, http.StatusTooManyRequests, "per-client limit reached")
		return
	}
	if t.Kind == KindConnect && req.Header.Get(hdrSession) == "new" {
		closeStr = false
		s.openSession(str, hr, cs, t.Upstream) // releases the slot when the session ends
		return
	}
	defer cs.release()
	lw := &limitedWriter{w: str, c: cs, done: s.ctx.Done()}
	var werr error
	if t.Kind == KindConnect {
		werr = s.tunnel(str, hr, lw, t.Upstream)
	} else {
		werr = s.forward(str, req, lw)
	}
	if werr != nil {
		if errors.Is(werr, errQuota) {
			s.cfg.Logf("ct-server: client %s: byte quota exhausted", cs.id)
		}
		str.CancelWrite(codeLimit)
	}
}

// forward sends req to its upstream and the response back on str. It
// returns an error only when the response could not be delivered whole.
func (s *Server) forward(str *quic.Stream, req *http.Request, w io.Writer) error {
	ctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(str.Context(), cancel)
	defer stop()
	out := req.WithContext(ctx)
	out.RequestURI = ""
	out.Header = req.Header.Clone()
	removeHopHeaders(out.Header)
	resp, err := s.up.RoundTrip(out)
	if err != nil {
		str.CancelRead(codeOK)
		return errorResponse(w, http.StatusBadGateway, "upstream: "+shortErr(err))
	}
	defer resp.Body.Close()
	removeHopHeaders(resp.Header)
	return resp.Write(w)
}

// tunnel connects str to a TCP connection to upstream (CONNECT).
func (s *Server) tunnel(str *quic.Stream, hr *headReader, w io.Writer, upstream string) error {
	d := net.Dialer{Timeout: s.cfg.UpstreamTimeout}
	up, err := d.DialContext(str.Context(), "tcp", upstream)
	if err != nil {
		str.CancelRead(codeOK)
		return errorResponse(w, http.StatusBadGateway, "upstream: "+shortErr(err))
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
		io.Copy(up, hr.br) // the client's bytes, including any read ahead
		if tc, ok := up.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	_, err = io.Copy(w, up)
	if err != nil {
		str.CancelRead(codeOK)
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
		str.CancelRead(codeShutdown)
		<-done
	}
	return err
}

// push fetches url and pushes it to the client on a unidirectional stream.
func (s *Server) push(conn *quic.Conn, cs *clientState, rawURL string) {
	ctx, cancel := context.WithTimeout(s.ctx, s.cfg.UpstreamTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return
	}
	resp, err := s.up.RoundTrip(req)
	if err != nil {
		s.cfg.Logf("ct-server: prefetch %s: %v", rawURL, err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.cfg.Logf("ct-server: prefetch %s: status %d, not pushed", rawURL, resp.StatusCode)
		return
	}
	ustr, err := conn.OpenUniStreamSync(ctx)
	if err != nil {
		return
	}
	removeHopHeaders(resp.Header)
	resp.Header.Set(hdrPushURL, rawURL)
	if err := resp.Write(&limitedWriter{w: ustr, c: cs, done: s.ctx.Done()}); err != nil {
		ustr.CancelWrite(codeLimit)
		return
	}
	ustr.Close()
}

func shortErr(err error) string {
	msg := err.Error()
	if len(msg) > 200 {
		msg = msg[:200]
	}
	return msg
}
