package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/stripe"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/resume"
)

// Striping: one large response fetched over several paths at once. The
// paper keeps each app's stream on one path and aggregates bandwidth only
// across apps (§V-B2); a single large object then moves at one path's
// rate. For a GET whose response is at least StripeMin bytes and whose
// app-server accepts byte ranges, ct-client keeps the first StripeChunk
// bytes of the original response, then fetches the rest as Range requests
// over every connected path and hands the pieces to the app in order. How
// large each piece is, which path takes it, how far ahead of the app the
// paths may run (the reorder window) and when a piece that holds the app
// up is requested again on a faster path is the policy of package
// stripesched; package stripe runs it. Each piece is an ordinary request, so a
// piece whose path fails moves like any other (stream migration). Memory
// is bounded by the window (stripesched.MaxWindow at most).
const (
	DefaultStripeMin   = 2 << 20
	DefaultStripeChunk = 256 << 10
	// stripeWorkers bounds the pieces one path has in flight for one
	// stripe; stripesched.Take's pipelining rule normally stops earlier,
	// once the path's queue covers its round trip and a piece.
	stripeWorkers = 6
)

var errStriped = errors.New("continuing striped")

// stripePlan is what a fetch's first attempt knows of striping: the
// response's length once it is stripeable, and the stripe then started.
type stripePlan struct {
	total int64
	run   *stripeRun
}

// stripeable: a 200 with a length worth splitting, ranges accepted, and a
// second path to split over.
func (c *Client) stripeable(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && resp.ContentLength >= c.cfg.StripeMin &&
		strings.Contains(resp.Header.Get("Accept-Ranges"), "bytes") && resp.Header.Get("Content-Encoding") == "" &&
		c.Ready() >= 2 && resp.ContentLength > c.cfg.StripeChunk
}

// bufferWriter is the http.ResponseWriter a piece is fetched into.
// received, if set, hears of each body write (the stripe's queue per path
// counts bytes still to come, not whole pieces: a path's pieces share it
// and land together, and a queue counted in pieces emptied at once and
// left the path idle for a round trip).
type bufferWriter struct {
	h        http.Header
	status   int
	buf      bytes.Buffer
	received func(n int)
}

func (b *bufferWriter) Header() http.Header { return b.h }
func (b *bufferWriter) WriteHeader(code int) {
	if b.status == 0 {
		b.status = code
	}
}
func (b *bufferWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	if b.received != nil {
		b.received(len(p))
	}
	return b.buf.Write(p)
}

// stripeRun is a striped download of one app request: the engine
// (package stripe) and what the client needs to finish it.
type stripeRun struct {
	*stripe.Run
	host *stripeHost
}

// stripeHost is the client as a stripe's Host for one request: its pieces
// are Range requests for r's URL with r's headers, of the same version.
type stripeHost struct {
	c         *Client
	r         *http.Request
	hdr       http.Header
	validator string
	total     int64 // the object's length (the original's Content-Length)
	sr        pathchoice.Request
}

// Paths and Pins: the client's paths now (ReloadPaths appends, so an ID
// stays the same path); a stripe joins those added while it runs.
func (h *stripeHost) Paths() int { return len(h.c.pathList()) }
func (h *stripeHost) Pins(from, to int) []int {
	return h.c.stripePins(h.sr, h.c.pathList()[from:to])
}
func (h *stripeHost) Reinjected() { h.c.reinjections.Add(1) }

func (h *stripeHost) EndgameCopied(size int64) {
	h.c.endgameCopies.Add(1)
	h.c.endgameCopyBytes.Add(size)
}

func (h *stripeHost) Blocked() { h.c.stripeBlocks.Add(1) }

// Measured folds a stripe's measurement of path id into the path's rate
// as one of its own samples (path.foldRate).
func (h *stripeHost) Measured(id int, rate float64) { h.c.pathList()[id].foldRate(rate) }

// Path reads path id's state under its lock, and its connection's.
func (h *stripeHost) Path(id int) (stripe.PathState, bool) {
	p := h.c.pathList()[id]
	p.mu.Lock()
	conn := p.conn
	st := stripe.PathState{Outstanding: p.outstanding, Rate: p.rate, HeldUntil: p.suspectUntil, Link: iface(p.Name), InOrder: p.inOrder,
		StreamWindow: h.c.streamWindow, FirstWindow: h.c.firstWindow}
	p.mu.Unlock()
	if conn == nil || conn.Context().Err() != nil || p.retired.Load() {
		return st, false
	}
	cs := conn.ConnectionStats()
	st.RTT, st.MinRTT, st.Cwnd = cs.SmoothedRTT, cs.MinRTT, int64(cs.CongestionWindow)
	return st, true
}

func (h *stripeHost) Fetch(ctx context.Context, pin int, r stripe.Request) ([]byte, error) {
	return h.c.fetchPiece(ctx, h.r, h.hdr, h.validator, h.sr, pin, h.total, r)
}

// pieceMark is a piece request's wire.HdrPiece: none to a ct-server that
// did not advertise the order on the request's connection (it would not
// honour it, and one from before it passes it upstream); next: the app
// waits on the piece now.
func pieceMark(inOrder, next bool) string {
	switch {
	case !inOrder:
		return ""
	case next:
		return wire.PieceNext
	}
	return wire.PieceInOrder
}

// startStripe begins fetching bytes [from, total) of r's response over
// all paths (stripe.Start) while the original response's own stream, on
// path orig, still delivers the bytes before from to the app. finish
// hands the rest to the app; abandon stops it.
func (c *Client) startStripe(w http.ResponseWriter, r *http.Request, hdr http.Header, sr pathchoice.Request, orig int, from, total int64) *stripeRun {
	c.stripes.Add(1)
	h := &stripeHost{c: c, r: r, hdr: hdr, validator: resume.Validator(w.Header()), total: total, sr: sr}
	return &stripeRun{Run: stripe.Start(r.Context(), h, orig, from, total), host: h}
}

// original is the original stream's progress (stripe.Run.Original).
func (s *stripeRun) original(n, k int64) int64 { return s.Original(n, k) }

// abandon stops the stripe (stripe.Run.Abandon).
func (s *stripeRun) abandon() { s.Abandon() }

// finish writes the striped bytes to w in order once the original stream
// has given the app its n bytes; it returns all body bytes written for
// the request.
func (s *stripeRun) finish(w http.ResponseWriter, n int64) (int64, error) {
	c, r := s.host.c, s.host.r
	written, ferr := s.Deliver(w, n)
	s.Abandon()
	if ferr != nil && errors.Is(ferr, errPieceRefused) && r.Context().Err() == nil {
		// ct-server keeps refusing pieces (its limits): finish on one
		// stream, which needs no more slots than the response had.
		c.stripeFallbacks.Add(1)
		c.cfg.Log.Info("striping refused; finishing on one stream", "url", r.URL.String(), "at_byte", written, "err", ferr)
		return c.forwardFrom(w, r, s.host.sr, written, true)
	}
	if ferr != nil {
		c.cfg.Log.Warn("striped fetch failed", "url", r.URL.String(), "at_byte", written, "err", ferr)
		c.abortApp(w, r) // the head is out: cut, never short
	}
	return written, nil
}

// stripePins lists the workers' paths, stripeWorkers per path the request
// may use, connected or not (a path down now gets the stripe's pieces once
// it is back and past its FailbackHold): an app pinned to a path (AppPaths)
// stays there, and backup paths wait while a primary is up.
func (c *Client) stripePins(sr pathchoice.Request, paths []*path) []int {
	var pins []int
	views, _ := c.snapshot()
	primary := pathchoice.PrimaryUp(views, nil, time.Now())
	for _, p := range paths {
		if p.retired.Load() {
			continue
		}
		pinned := sr.Pin > 0 && p.id != sr.Pin-1
		if (p.Role != RoleBackup || !primary) && !pinned {
			for range stripeWorkers {
				pins = append(pins, p.id)
			}
		}
	}
	return pins
}

// errPieceRefused: ct-server kept refusing a piece for its limits (429 or
// 503) through forward's retries.
var errPieceRefused = errors.New("piece refused by ct-server's limits")

// Waiting for a slot after ct-server refused a request for a limit that
// frees as work ends (429 or 503 with Retry-After): limitRetries waits,
// doubling from 2×limitRetryFirst up to limitRetryMax (0.1, 0.2, … 2 s;
// 13 s in all, as long as a large response may hold a slot on a loaded
// machine); then the app gets a 503 (forward), or a striped response goes
// on one stream (stripe). ct-client normally keeps to the max_streams
// ct-server announces (setMaxStreams) and meets no 429 at all.
const (
	limitRetries    = 10
	limitRetryFirst = 50 * time.Millisecond
	limitRetryMax   = 2 * time.Second
)

// fetchPiece fetches the piece pr of r's URL, an object of total bytes,
// on path pin if it can: the bytes [off, end] pr.Open gives once the
// request has its stream (fetch.claim), marked for the connection it is
// on (pieceMark).
func (c *Client) fetchPiece(ctx context.Context, r *http.Request, hdr http.Header, v string, sr pathchoice.Request, pin int, total int64, pr stripe.Request) (data []byte, err error) {
	req := (&http.Request{Method: http.MethodGet, URL: r.URL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr.Clone(), Host: r.Host, Body: http.NoBody}).WithContext(ctx)
	if v != "" {
		req.Header.Set("If-Range", v) // every piece of the same version
	}
	sr.Pin = pin + 1
	bw := &bufferWriter{h: http.Header{}}
	f := c.newFetch(bw, req, sr, 0, false)
	f.next = pr.Next
	var off, end int64
	f.claim = func(open func() error) error {
		first, last, err := pr.Open(open)
		if err == nil && !f.hasRange {
			off, end = first, last
			f.orig, f.hasRange = resume.Range{First: off, Last: end}, true
			bw.buf.Grow(int(end - off + 1)) // one allocation, no copies as it grows (CPU per byte)
			// Only now: what the fetch writes before it has a stream (its
			// own error text, fetch.fail) is not the piece's, which the
			// stripe knows only from here (a nil piece, under -race).
			bw.received = pr.Received
		}
		return err
	}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				err = errors.New("piece aborted")
			}
		}()
		_, err = f.run() // waits for a slot on 429/503 itself
	}()
	if err != nil && !errors.Is(err, errRefused) {
		return nil, err
	}
	if bw.status == http.StatusTooManyRequests || bw.status == http.StatusServiceUnavailable {
		return nil, fmt.Errorf("piece %d-%d: %w (status %d)", off, end, errPieceRefused, bw.status)
	}
	if bw.status != http.StatusPartialContent || int64(bw.buf.Len()) != end-off+1 {
		return nil, fmt.Errorf("piece %d-%d: status %d, %d bytes", off, end, bw.status, bw.buf.Len())
	}
	// Without a validator (no If-Range) only the length tells another
	// version: a piece of an object whose length changed is not the
	// original's.
	if cr, ok := resume.ParseContentRange(bw.h.Get("Content-Range")); !ok || cr.First != off || cr.Last != end || cr.Total != total {
		return nil, fmt.Errorf("piece %d-%d: Content-Range %q, object of %d bytes", off, end, bw.h.Get("Content-Range"), total)
	}
	return bw.buf.Bytes(), nil
}
