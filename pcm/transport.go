package pcm

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/hetquic/hetquic/internal/resume"
)

// Transport is an http.RoundTripper that carries requests over PCM-QUIC,
// as quic-go's http3.Transport carries them over one path: a Go program
// gets PCM by setting it as its http.Client's Transport. It keeps one
// Client — one QUIC connection, its local paths and its own selector — per
// origin (host:port of an https URL), dialled on the origin's first
// request, and takes any method and request body.
//
// As http3.Transport it dials an origin again when its connection has
// ended (closed by the server, idle timeout, lost): the request that finds
// it dead, or fails because it died, goes on a new connection (a request
// with a body only if the body can be replayed: GetBody). Dials of
// different origins run at the same time; concurrent first requests to
// one origin share one dial.
//
// What a request over Transport gets and does not get, compared with Get:
//   - path choice and measurement: the selector picks the path (moving
//     only when no request awaits its response head: Client.begin); the task
//     completion time runs from the request stream to the response body's
//     end (PCM Eq. 3) and is reported when the caller has read the body to
//     EOF, unless the response came back on another path (Result.Carrier);
//     ResultOf(resp) returns it;
//   - a response body in the caller's hands, unread or being read, holds
//     no path: the connection moves only while no request awaits its
//     response head (Client.begin), and QUIC carries an open body's
//     stream along;
//   - failover: a path that stalls (nothing acknowledged for the stall
//     timeout while a request waits) is given up, the connection moves to
//     the best live path, and replayable requests in flight (idempotent,
//     with a body GetBody can make anew) are sent again there, and a GET
//     body being read resumes from the byte where it stopped (same
//     version only); other requests fail with a PathStalledError naming
//     the path.
type Transport struct {
	// Config is every origin's client configuration; Server and ServerName
	// come from the request's URL, and Selector must be nil: each origin
	// gets its own selector of Config.Strategy, as connections learn per
	// server.
	Config Config

	// The fields of http3.Transport, so that a program that sets them can
	// swap this Transport in. TLSClientConfig and QUICConfig are
	// Config.TLS and Config.QUIC under http3's names (set one or the
	// other); EnableDatagrams, MaxResponseHeaderBytes, DisableCompression
	// and Logger have http3.Transport's meaning (Config holds them too).
	// Dial must be nil: PCM opens its sockets itself, one per local path
	// (Config.ListenPacket), and a dial function hands back a connection
	// on one path only; a non-nil Dial fails every request with that
	// reason.
	TLSClientConfig        *tls.Config
	QUICConfig             *quic.Config
	Dial                   func(ctx context.Context, addr string, tlsCfg *tls.Config, cfg *quic.Config) (*quic.Conn, error)
	EnableDatagrams        bool
	MaxResponseHeaderBytes int
	DisableCompression     bool
	Logger                 *slog.Logger

	mu      sync.Mutex
	origins map[string]*originConn
	closed  bool
	// down names, per origin, the paths its last connection found down
	// when it ended: the redial tries them last.
	down map[string]map[string]bool
}

// originConn is one origin's connection, or the dial that makes it: ready
// is closed when the dial has ended, with c or err set. held counts the
// requests that waited for the dial (under Transport.mu).
type originConn struct {
	ready chan struct{}
	c     *Client
	err   error
	held  int
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip sends req over the PCM-QUIC connection of its origin.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.RoundTripOpt(req, http3.RoundTripOpt{})
}

// RoundTripOpt is RoundTrip with http3.Transport's options:
// OnlyCachedConn fails with http3.ErrNoCachedConn instead of dialling.
func (t *Transport) RoundTripOpt(req *http.Request, opt http3.RoundTripOpt) (*http.Response, error) {
	origin, host, err := t.origin(req)
	if err == nil && opt.OnlyCachedConn && t.cached(origin) == nil {
		err = http3.ErrNoCachedConn
	}
	if err != nil {
		closeBody(req)
		return nil, err
	}
	for retried := false; ; retried = true {
		c, err := t.client(req.Context(), origin, host)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		// c is the client of req's origin: Client.RoundTrip's origin check
		// would only repeat the lookup.
		resp, err := c.roundTrip(req, time.Now(), freshUrgency, nil)
		if err == nil || req.Context().Err() != nil {
			return resp, err
		}
		if !c.unusable(err) {
			return nil, err
		}
		t.forget(origin, c)
		var stalled *PathStalledError
		if retried || !replayable(req) || errors.As(err, &stalled) && !idempotent(req) {
			return nil, err
		}
		c.cfg.Logf("pcm: %s: connection unusable (%v); dialling again", origin, err)
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// origin checks req's URL and returns its origin (host:port) and host.
func (t *Transport) origin(req *http.Request) (origin, host string, err error) {
	if req.URL == nil || req.URL.Scheme != "https" || req.URL.Host == "" {
		return "", "", fmt.Errorf("pcm: %v: want an https URL", req.URL)
	}
	if err := t.check(); err != nil {
		return "", "", err
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port != "" {
		return req.URL.Host, host, nil // host:port already, without building it anew for each request
	}
	return net.JoinHostPort(host, "443"), host, nil
}

// check refuses a Transport whose fields cannot work, in one line.
func (t *Transport) check() error {
	switch {
	case t.Config.Selector != nil:
		return errors.New("pcm: Transport.Config.Selector must be nil: each origin gets its own")
	case t.Dial != nil:
		return errors.New("pcm: Transport.Dial must be nil: PCM opens one socket per local path itself (use Config.ListenPacket)")
	case t.TLSClientConfig != nil && t.Config.TLS != nil:
		return errors.New("pcm: set Transport.TLSClientConfig or Transport.Config.TLS, not both")
	case t.QUICConfig != nil && t.Config.QUIC != nil:
		return errors.New("pcm: set Transport.QUICConfig or Transport.Config.QUIC, not both")
	}
	return nil
}

// config is every origin's Config: t.Config with the http3.Transport
// fields folded in.
func (t *Transport) config() Config {
	cfg := t.Config
	if t.TLSClientConfig != nil {
		cfg.TLS = t.TLSClientConfig
	}
	if t.QUICConfig != nil {
		cfg.QUIC = t.QUICConfig
	}
	cfg.EnableDatagrams = cfg.EnableDatagrams || t.EnableDatagrams
	cfg.DisableCompression = cfg.DisableCompression || t.DisableCompression
	if t.MaxResponseHeaderBytes != 0 {
		cfg.MaxResponseHeaderBytes = t.MaxResponseHeaderBytes
	}
	if t.Logger != nil {
		cfg.Logger = t.Logger
	}
	return cfg
}

// cached is origin's live client, or nil: none, a dial under way, or one
// whose connection has ended.
func (t *Transport) cached(origin string) *Client {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c := t.origins[origin].dialled(); c != nil && c.Err() == nil {
		return c
	}
	return nil
}

// client returns the origin's live client, dialling it (once for all who
// ask meanwhile) when there is none or it has ended. The dial runs outside
// t.mu, so other origins are not held up.
func (t *Transport) client(ctx context.Context, origin, host string) (*Client, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, errors.New("pcm: Transport is closed")
	}
	oc := t.origins[origin]
	if c := oc.dialled(); c != nil && c.Err() != nil {
		if t.down == nil {
			t.down = map[string]map[string]bool{}
		}
		t.down[origin] = c.downPaths()
		c.Close() // ended: dial again, as http3.Transport does
		oc = nil
	}
	if oc == nil {
		oc = &originConn{ready: make(chan struct{})}
		if t.origins == nil {
			t.origins = map[string]*originConn{}
		}
		t.origins[origin] = oc
		go t.dial(oc, origin, host)
	}
	select {
	case <-oc.ready:
	default:
		oc.held++
	}
	t.mu.Unlock()
	select {
	case <-oc.ready:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	return oc.c, oc.err
}

// dial makes an origin's client. It does not run under a request's
// context: the requests that wait for it may give up one by one, and the
// connection is for all of them; the handshake's own timeout bounds it.
func (t *Transport) dial(oc *originConn, origin, host string) {
	cfg := t.config()
	cfg.Server = origin
	t.mu.Lock()
	cfg.avoid = t.down[origin]
	t.mu.Unlock()
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	c, err := Dial(context.Background(), cfg)
	var late *Client // dialled for a Transport closed meanwhile
	t.mu.Lock()
	if err != nil && t.origins[origin] == oc {
		delete(t.origins, origin) // the next request tries again
	}
	if t.closed && c != nil {
		late, c, err = c, nil, errors.New("pcm: Transport is closed")
	}
	if c != nil && oc.held > 1 {
		// Under t.mu, and ready closed before it is released: a request
		// that asks meanwhile is either counted here or finds the dial done.
		c.heldByDial()
	}
	oc.c, oc.err = c, err
	if late == nil {
		close(oc.ready)
		t.mu.Unlock()
		return
	}
	t.mu.Unlock()
	// Outside t.mu: closing waits on the network. Before ready: Close
	// waits for ready, so it returns with this client closed too.
	late.Close()
	close(oc.ready)
}

// dialled is the client of a dial that has ended, or nil (no dial, a dial
// under way, or one that failed). oc.c is written by the dial before it
// closes ready, so reading it after ready is safe.
func (oc *originConn) dialled() *Client {
	if oc == nil {
		return nil
	}
	select {
	case <-oc.ready:
		return oc.c
	default:
		return nil
	}
}

// forget drops origin's client c (if still the current one), remembers
// the paths it found down, and closes it.
func (t *Transport) forget(origin string, c *Client) {
	down := c.downPaths()
	t.mu.Lock()
	if t.origins[origin].dialled() == c {
		delete(t.origins, origin)
		if t.down == nil {
			t.down = map[string]map[string]bool{}
		}
		t.down[origin] = down
	}
	t.mu.Unlock()
	c.Close()
}

// CloseIdleConnections closes every origin's connection (http.Client calls
// it); the next request dials again.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	origins := t.origins
	t.origins = nil
	t.mu.Unlock()
	for _, oc := range origins {
		<-oc.ready
		if oc.c != nil {
			oc.c.Close()
		}
	}
}

// Close closes every connection; later requests fail.
func (t *Transport) Close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
	return nil
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		req.Body.Close()
	}
}

// replayable reports whether req can be sent again: no body, or one that
// GetBody makes anew.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// idempotent reports whether sending req twice has the effect of sending
// it once (RFC 9110 §9.2.2), as net/http decides it: the method, or an
// Idempotency-Key header the caller set for a POST.
func idempotent(req *http.Request) bool {
	switch req.Method {
	case "", http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodTrace, http.MethodPut, http.MethodDelete:
		return true
	}
	_, key := req.Header["Idempotency-Key"]
	_, xkey := req.Header["X-Idempotency-Key"]
	return key || xkey
}

// withPriority returns req with the Priority field pr (RFC 9218), or
// req itself when pr is empty or the caller set one: the caller's request
// is never modified (http.RoundTripper).
func withPriority(req *http.Request, pr string) *http.Request {
	if pr == "" || req.Header.Get("Priority") != "" {
		return req
	}
	r := *req
	r.Header = req.Header.Clone()
	if r.Header == nil {
		r.Header = http.Header{}
	}
	r.Header.Set("Priority", pr)
	return &r
}

// rewind returns req ready to be sent again (a fresh body from GetBody).
func rewind(req *http.Request) (*http.Request, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return req, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return nil, err
	}
	r := *req
	r.Body = body
	return &r, nil
}

// unusable reports whether err says the connection cannot carry requests
// any more: it ended, or the server sent GOAWAY (quic-go's http3 reports
// both as "conn unusable" and exports no type for it).
func (c *Client) unusable(err error) bool {
	return c.Err() != nil || strings.Contains(err.Error(), "conn unusable")
}

// RoundTrip sends req (any method, any body) on the path the selector
// chooses, after moving the connection there if it can (Client.begin): a
// Client is an http.RoundTripper for its one origin, and refuses a request
// for another (a redirect to another server must not reach this one).
//
// A request in flight when its path stalls (detectStalls) is sent again on
// the path the connection moved to, if it can be replayed: an idempotent
// method (RFC 9110 §9.2.2) whose body, if any, GetBody makes anew — or any
// method whose head never left (there is no telling here, so only the
// first rule counts). Otherwise it fails at once with a PathStalledError
// naming the path. A stall while the caller reads the body of a GET
// resumes it: the rest is asked for again (Range, If-Range) and appended
// only if it is of the same version (internal/resume), and again at each
// stall after (resumeRest); any other body's read fails with the
// PathStalledError. A failover that takes a new connection (when no other
// path validates, or when it ended more requests than half the streams
// the server allows: creditShortLocked) closes the old one: a GET body in
// the caller's hands then, not being read, resumes on its next read as
// after a stall (any other body's read fails with the PathStalledError),
// where a migration carries it along.
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := c.sameOrigin(req); err != nil {
		closeBody(req)
		return nil, err
	}
	return c.roundTrip(req, time.Now(), freshUrgency, nil)
}

// roundTrip is RoundTrip for a request that began at born (a resume's:
// the download's start) and carries urgency (a failover's rank for a
// resume, priorityField), after its turn t (nil: none) comes (awaitTurn);
// it releases the turn it holds when it returns.
func (c *Client) roundTrip(req *http.Request, born time.Time, urgency int8, t *turn) (*http.Response, error) {
	defer func() { t.release() }()
	for attempt := 0; ; attempt++ {
		resp, stalled, err := c.roundTripOnce(req, born, &urgency, &t)
		if stalled == nil || req.Context().Err() != nil {
			return resp, err
		}
		if !replayable(req) || !idempotent(req) {
			return nil, stalled
		}
		if err := c.Err(); attempt >= c.numPaths() || err != nil {
			// A replayable request given up: the log keeps why.
			c.cfg.Logf("pcm: %s %s: %v; not sent again (attempt %d, connection: %v)", req.Method, req.URL.Path, stalled, attempt+1, err)
			return nil, stalled
		}
		c.cfg.Logf("pcm: %s %s: %v; sending it again", req.Method, req.URL.Path, stalled)
		if req, err = rewind(req); err != nil {
			return nil, err
		}
	}
}

// roundTripOnce sends req once, with the Priority field of *urgency
// (priorityField), once its turn comes (*t, awaitTurn), which it releases
// when the request's head has gone out; stalled is set when its path
// stalled under it, and *urgency and *t to what the failover gave its
// replay.
func (c *Client) roundTripOnce(req *http.Request, born time.Time, urgency *int8, t **turn) (*http.Response, *PathStalledError, error) {
	ctx := req.Context()
	c.reviveRested()
	p, err := c.choose()
	if err != nil {
		closeBody(req)
		return nil, nil, err
	}
	start := c.cfg.Now()
	c.awaitTurn(ctx, *urgency, *t)
	active, _, f := c.begin(ctx, int(p), born)
	// One allocation holds what the request measures (the trace's hook
	// included): small GETs are many, and each allocation costs its share
	// of the collector's time (pcm/RESULTS.md, "CPU per 5 KB GET").
	m := &measuredBody{c: c, f: f, moves: c.switches.Load(), turn: *t}
	m.rx = c.rx.snapshotTo(m.rxBuf[:0])
	m.trace.WroteHeaders = m.wroteHeaders
	asked := c.cfg.Now()
	sess := c.s()
	m.sess = sess
	resp, err := sess.h3.RoundTrip(withPriority(req, priorityField(sess, *urgency)).WithContext(httptrace.WithClientTrace(f.ctx, &m.trace)))
	c.land(f)
	(*t).release() // a request that failed before its head went out
	est := asked
	if m.wrote.Load() {
		// EstTime (PCM Eq. 3): the request stream exists and its head has
		// gone out. http3 opens the stream first, waiting for the
		// server's stream credit: under load that wait is the other
		// requests', not the path's, and Get does not count it either.
		est = m.wroteAt
	}
	if err != nil {
		f.cancel(nil)
		if ps := f.stalled(); ps != nil {
			*urgency, *t = c.replayUrgency(f), c.takeTurn(f)
			return nil, ps, ps
		}
		return nil, nil, err
	}
	m.ReadCloser = resp.Body
	m.res = Result{Chosen: int(p), Path: active, PathName: c.pathName(active), Carrier: -1, Status: resp.StatusCode, Start: start, Est: est}
	if req.Method == http.MethodGet && resp.StatusCode == http.StatusOK && req.Header.Get("Range") == "" && replayable(req) {
		m.req, m.st = req, resume.Start(resp) // a stall under the body resumes it
	}
	resp.Body = m
	m.rctx = resultCtx{Context: ctx, m: m}
	resp.Request = req.WithContext(&m.rctx)
	if req.Method == http.MethodHead {
		m.done() // no body to wait for
	}
	return resp, nil, nil
}

// sameOrigin refuses a request whose URL is not this client's origin.
func (c *Client) sameOrigin(req *http.Request) error {
	u := req.URL
	if u == nil || u.Scheme != "https" {
		return fmt.Errorf("pcm: %v: want an https URL of this connection's origin %s", u, c.cfg.Server)
	}
	port := u.Port()
	if port == "" {
		port = "443"
	}
	host, own, _ := net.SplitHostPort(c.cfg.Server)
	name := u.Hostname()
	if port != own || !strings.EqualFold(name, host) && !strings.EqualFold(name, c.cfg.ServerName) {
		return fmt.Errorf("pcm: %s is not this connection's origin %s: use a Transport for several origins", u.Host, c.cfg.Server)
	}
	return nil
}

type resultKey struct{}

// resultCtx is a request's context with its measurement under resultKey:
// what context.WithValue makes, but held in the measuredBody, which a
// request allocates anyway (one allocation less per request: pcm/RESULTS.md,
// "CPU per 5 KB GET").
type resultCtx struct {
	context.Context
	m *measuredBody
}

func (c *resultCtx) Value(key any) any {
	if key == (resultKey{}) {
		return c.m
	}
	return c.Context.Value(key)
}

// ResultOf returns the measurement of a response that came from a
// Transport or Client RoundTrip, once its body has been read to its end
// (or closed, or at once for HEAD); ok is false before, and for a response
// from elsewhere. It finds the measurement through resp.Request, which
// RoundTrip sets and http.Client passes on unchanged.
func ResultOf(resp *http.Response) (res Result, ok bool) {
	if resp == nil || resp.Request == nil {
		return Result{}, false
	}
	m, _ := resp.Request.Context().Value(resultKey{}).(*measuredBody)
	if m == nil {
		return Result{}, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.final, m.ended
}

// measuredBody reports the request's task completion time to the selector
// when the body has been read to its end, and ends the request (Client.end)
// then or when it is closed.
type measuredBody struct {
	io.ReadCloser
	c *Client
	f *flight // takes off again for each read
	// req and st resume a GET whose path stalls under its body (req is
	// nil for any other): the rest is asked for again (Range, If-Range)
	// and appended only if it is of the same version (internal/resume).
	// rest is the body of the latest resume (nil: none), which reads on;
	// a stall under it resumes again from there (resumeRest). nested
	// marks a resume's own body: its stall is the body it continues to
	// resume, not its own (its request carries a Range, and resumes
	// nothing). unfed counts resumes since the last byte.
	req    *http.Request
	st     resume.State
	rest   *measuredBody
	nested bool
	unfed  resumeCount
	moves  int64
	rx     []int64 // the ledger when the request was sent, in rxBuf when it fits
	rxBuf  [inlinePaths]int64
	res    Result    // read and written by the reader only, until done
	rctx   resultCtx // the context of the response's Request (ResultOf)
	once   sync.Once
	// trace reports when the request's head went out (wroteHeaders):
	// wroteAt, published by wrote.
	trace   httptrace.ClientTrace
	wroteAt time.Time
	wrote   atomic.Bool
	// turn is the request's turn among a failover's replays, released
	// when its head has gone out (nil: none).
	turn *turn
	sess *session // the connection the request went on

	mu    sync.Mutex // guards final and ended, which ResultOf reads
	final Result
	ended bool
}

// inlinePaths is how many paths' ledger counts a request keeps without
// an allocation of their own: a multi-homed host rarely has more
// interfaces (Wi-Fi, cellular, Ethernet, a VPN); more still work.
const inlinePaths = 4

// wroteHeaders is the request's httptrace hook: its head has gone out.
func (b *measuredBody) wroteHeaders() {
	b.wroteAt = b.c.cfg.Now()
	b.wrote.Store(true)
	b.turn.release()
}

func (b *measuredBody) Read(p []byte) (int, error) {
	n, err := b.read(p)
	b.res.TotalBytes += int64(n) // before a resume, which asks for the bytes after these
	b.unfed.fed(int64(n))
	if ps := b.stalled(err); ps != nil {
		err = ps
		if !b.nested {
			err = b.resumeRest(ps)
		}
	}
	if errors.Is(err, io.EOF) {
		b.done()
	}
	return n, err
}

// resumeCount counts a download's resumes since its last delivered byte,
// for a GET body read through RoundTrip (resumeRest) and a Get (GetOn)
// alike. A download may take as many in a row as a request's replays
// (Client.roundTrip, one per path); one that delivered bytes since its
// last resume starts the count afresh: each stall is a failover of its
// own. On TestLoadCutAioquic a false verdict resumed a wave's bodies on
// the path that the cut then stalled, which failed 31 of 32 of them when
// a body resumed only once (TestBodyResumesAfterSecondStall); Get, which
// took one attempt per path in all, gave up so at a third stall on two
// paths (TestGetResumesAfterEachStall).
type resumeCount int

// fed records n bytes delivered: any byte starts the count afresh.
func (r *resumeCount) fed(n int64) {
	if n > 0 {
		*r = 0
	}
}

// take counts one resume more of the download of path after the stall
// ps, or says that it has had its last (false), with a log line: the
// caller gets the stall's error.
func (r *resumeCount) take(c *Client, ps error, path string) bool {
	if int(*r) >= c.numPaths() {
		c.cfg.Logf("pcm: %v; the body of %s not resumed again (%d resumes without a byte)", ps, path, *r)
		return false
	}
	*r++
	return true
}

// resumeRest continues the body after the stall ps (its own, or its
// latest resume's): it asks again for the bytes not yet delivered, and
// returns nil when it did, io.EOF when every byte had come, or the error
// the caller gets (ps, when the body cannot resume).
func (b *measuredBody) resumeRest(ps *PathStalledError) error {
	f := b.f // the flight the failover ended: the latest resume's, if any
	if b.rest != nil {
		f = b.rest.f
	}
	defer func() { b.c.forgoRank(f) }() // no effect when its resume took the turn
	if b.req == nil {
		return ps // not a GET of the whole resource: nothing to resume
	}
	if whole(&b.st, b.res.TotalBytes) {
		return io.EOF
	}
	for b.unfed.take(b.c, ps, b.req.URL.Path) {
		rest, err := b.resumeAfter(ps, f)
		if err == nil {
			b.ReadCloser, b.rest = rest, rest
			b.res.Failovers++
			return nil
		}
		if rest != nil {
			f = rest.f // a stall under its skip ended this one
		}
		var again *PathStalledError
		if !errors.As(err, &again) || again == ps {
			if err != ps {
				// The caller gets the stall; the log keeps why the resume failed.
				b.c.cfg.Logf("pcm: %v; resuming the body of %s failed: %v", ps, b.req.URL.Path, err)
			}
			return ps
		}
		ps = again // the resume's path stalled before it delivered a byte
	}
	return ps
}

// stalled is why the read that returned err failed, if a failover caused
// it (nil otherwise): the body's path stalled under the read, or a
// failover closed the body's connection for a new one while the caller
// held the body unread (session.replaced).
func (b *measuredBody) stalled(err error) *PathStalledError {
	if err == nil {
		return nil
	}
	if b.rest != nil {
		// The resume's body reports its own stall as its error (nested).
		var ps *PathStalledError
		errors.As(err, &ps)
		return ps
	}
	if ps := b.f.stalled(); ps != nil {
		return ps
	}
	if errors.Is(err, io.EOF) || b.sess == nil {
		return nil
	}
	return b.sess.replaced.Load()
}

// read reads the body, as a flight while it waits on the network; a
// resumed body is another request's, with its own flight.
func (b *measuredBody) read(p []byte) (int, error) {
	if b.rest != nil {
		return b.ReadCloser.Read(p)
	}
	b.c.resume(b.f)
	n, err := b.ReadCloser.Read(p)
	b.c.land(b.f)
	return n, err
}

// resumeAfter asks again for the rest of a GET whose path stalled under
// its body (Client.RoundTrip sends it on the path the connection moved
// to), with the turn the failover gave f, the flight it ended, and returns
// the new body, positioned after the bytes delivered (and, when skipping
// to there failed, that body, closed, with the error).
func (b *measuredBody) resumeAfter(ps *PathStalledError, f *flight) (*measuredBody, error) {
	if b.req.Context().Err() != nil {
		return nil, ps
	}
	req := b.req.Clone(b.req.Context())
	offset := b.res.TotalBytes
	b.st.Prepare(req.Header, resume.Range{First: offset, Last: -1})
	resp, err := b.c.roundTrip(req, b.f.born, b.c.replayUrgency(f), b.c.takeTurn(f))
	if err != nil {
		return nil, err
	}
	rest := resp.Body.(*measuredBody) // roundTripOnce's, as every response's
	rest.nested = true
	skip, err := b.st.Check(resp, offset)
	if err == nil {
		_, err = io.CopyN(io.Discard, rest, skip)
	}
	if err != nil {
		rest.Close()
		return rest, err
	}
	b.ReadCloser.Close()
	b.c.cfg.Logf("pcm: %v; the body of %s resumed from byte %d", ps, b.req.URL.Path, offset)
	return rest, nil
}

// done takes the measurement, once: EndTime is now (PCM Eq. 3). The
// sample goes to the selector when the response came back on the request's
// path (credit); one during which the connection moved (a failover)
// measured no single path, nor did one whose request may have left before
// the switch to its path took effect (moveWatch): both are dropped.
func (b *measuredBody) done() {
	b.finish(true)
}

func (b *measuredBody) finish(complete bool) {
	b.once.Do(func() {
		c := b.c
		b.res.End = c.cfg.Now()
		b.res.Carrier = c.rx.carrierSince(b.rx)
		if complete && c.switches.Load() == b.moves && !c.s().moves.sentEarly() {
			b.res.bunch = c.bunchOf(b.f)
			c.credit(&b.res)
		}
		b.mu.Lock()
		b.final, b.ended = b.res, true
		b.mu.Unlock()
	})
}

// Close ends the body; one closed before its end gives no sample.
func (b *measuredBody) Close() error {
	b.finish(false)
	err := b.ReadCloser.Close()
	b.f.cancel(nil)
	return err
}
