package pcm

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"

	"github.com/hetquic/hetquic/pathsel"
)

// Transport is an http.RoundTripper that carries requests over PCM-QUIC,
// as quic-go's http3.Transport carries them over one path: a Go program
// gets PCM by setting it as its http.Client's Transport. It keeps one
// Client — one QUIC connection, its local paths and its own selector — per
// origin (host:port of an https URL), dialled on the origin's first
// request, and takes any method and request body.
//
// What a request over Transport gets and does not get, compared with Get:
//   - path choice and measurement: the selector picks the path; the task
//     completion time runs from the request stream to the response body's
//     end (PCM Eq. 3) and is reported when the caller has read the body to
//     EOF, unless the connection moved meanwhile (another request switched
//     paths), when it belongs to no single path and is dropped;
//   - no resumption on another path: a request body is consumed as it is
//     sent and a response body is read at the caller's pace, so a stalled
//     path surfaces as an error, as with http3.Transport (Get resumes GETs).
type Transport struct {
	// Config is every origin's client configuration; Server and ServerName
	// come from the request's URL, and Selector must be nil: each origin
	// gets its own pathsel.Default(), as connections learn per server.
	Config Config

	mu      sync.Mutex
	clients map[string]*Client
	closed  bool
}

var _ http.RoundTripper = (*Transport)(nil)

// RoundTrip sends req over the PCM-QUIC connection of its origin.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := t.client(req)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	return c.RoundTrip(req)
}

// client returns the origin's client, dialling it on first use.
func (t *Transport) client(req *http.Request) (*Client, error) {
	if req.URL == nil || req.URL.Scheme != "https" || req.URL.Host == "" {
		return nil, fmt.Errorf("pcm: %v: want an https URL", req.URL)
	}
	if t.Config.Selector != nil {
		return nil, errors.New("pcm: Transport.Config.Selector must be nil: each origin gets its own")
	}
	host, port := req.URL.Hostname(), req.URL.Port()
	if port == "" {
		port = "443"
	}
	origin := net.JoinHostPort(host, port)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, errors.New("pcm: Transport is closed")
	}
	if c := t.clients[origin]; c != nil {
		return c, nil
	}
	cfg := t.Config
	cfg.Server = origin
	if cfg.ServerName == "" {
		cfg.ServerName = host
	}
	// Dialling under t.mu makes concurrent first requests to one origin
	// share a connection; it holds up other origins' first requests too,
	// which is the simple price.
	c, err := Dial(req.Context(), cfg)
	if err != nil {
		return nil, err
	}
	if t.clients == nil {
		t.clients = map[string]*Client{}
	}
	t.clients[origin] = c
	return c, nil
}

// CloseIdleConnections closes every origin's connection (http.Client calls
// it); the next request dials again.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, c := range t.clients {
		c.Close()
		delete(t.clients, k)
	}
}

// Close closes every connection; later requests fail.
func (t *Transport) Close() error {
	t.CloseIdleConnections()
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return nil
}

// RoundTrip sends req (any method, any body) on the path the selector
// chooses, after moving the connection there if it can: a Client is an
// http.RoundTripper for its one origin. See Transport.
func (c *Client) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	c.reviveRested()
	c.selMu.Lock()
	p, err := c.sel.Choose()
	c.selMu.Unlock()
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	start := c.cfg.Now()
	c.ensureActive(ctx, int(p))
	// The read lock holds the path still while the request goes out and
	// its response head comes back (as fetch does), not while the caller
	// reads the body. quic-go's ClientConn sends any method and body.
	c.mu.RLock()
	active := c.active
	moves := c.switches.Load()
	est := c.cfg.Now() // EstTime (PCM Eq. 3): the stream is opened now
	resp, err := c.h3.RoundTrip(req)
	c.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	resp.Request = req
	m := &measuredBody{ReadCloser: resp.Body, c: c, moves: moves,
		res: Result{Path: active, PathName: c.paths[active].Name, Status: resp.StatusCode, Start: start, Est: est}}
	resp.Body = m
	if req.Method == http.MethodHead {
		m.done() // no body to wait for
	}
	return resp, nil
}

// measuredBody reports the request's task completion time to the selector
// when the body has been read to its end.
type measuredBody struct {
	io.ReadCloser
	c     *Client
	moves int64
	res   Result
	once  sync.Once
}

func (b *measuredBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.res.TotalBytes += int64(n)
	if errors.Is(err, io.EOF) {
		b.done()
	}
	return n, err
}

// done takes the measurement, once: EndTime is now (PCM Eq. 3). A response
// during which the connection moved measured no single path, nor did one
// whose request may have left before the switch to its path took effect
// (moveWatch): both are dropped.
func (b *measuredBody) done() {
	b.once.Do(func() {
		b.res.End = b.c.cfg.Now()
		if b.c.switches.Load() != b.moves || b.c.moves.sentEarly() {
			return
		}
		b.c.selMu.Lock()
		b.c.sel.Observe(pathsel.PathID(b.res.Path), b.res.Sample(b.c.cfg.PerByte))
		b.c.selMu.Unlock()
	})
}

// Close ends the body; one closed before its end gives no measurement.
func (b *measuredBody) Close() error {
	b.once.Do(func() {})
	return b.ReadCloser.Close()
}
