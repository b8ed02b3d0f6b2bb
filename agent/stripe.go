package agent

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/stripesched"
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
// stripesched; this file runs it. Each piece is an ordinary request, so a
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

// piece is bytes [off, end] of a striped object, requested on one path
// and, if it held the app up, again on a faster one (the first copy in
// wins and cancels the other).
type piece struct {
	off, end int64
	path     int       // the path of its first request
	start    time.Time // when it was first requested
	copies   int       // requests made for it (guarded by stripeRun.mu)
	running  int       // of them still running (guarded by stripeRun.mu)
	ctx      context.Context
	cancel   context.CancelFunc
	data     []byte
	err      error
	done     chan struct{} // closed once data or err is set
	landed   bool          // done is closed (guarded by stripeRun.mu)
}

func (p *piece) size() int64 { return p.end - p.off + 1 }

// stripeRun is one striped download in progress.
type stripeRun struct {
	c         *Client
	r         *http.Request
	hdr       http.Header
	validator string
	sr        pathchoice.Request
	ctx       context.Context
	cancel    context.CancelFunc
	wg        sync.WaitGroup
	total     int64
	// The original response's stream delivers the bytes before the
	// first piece (from) itself, on path origPath; origAt is how far it
	// got and cutAt where it is to stop: from, or sooner once a faster
	// path fetches its remainder (prefix).
	from, origAt, cutAt int64
	origPath            int
	began               time.Time // when the original's head arrived
	prefix              bool      // the remainder was requested on another path

	mu        sync.Mutex
	next      int64         // first byte not yet requested
	delivered int64         // first byte not yet given to the app
	pieces    []*piece      // requested and not yet given to the app, in order
	kick      chan struct{} // closed and replaced when a piece lands or is delivered
	alive     int           // workers still in the stripe
	staffed   map[int]int   // workers per path still in the stripe
	queued    map[int]int64 // bytes requested per path and not yet received
	est       map[int]*rateEst
}

// startStripe begins fetching bytes [from, total) of r's response over
// all paths while the original response's own stream still delivers the
// bytes before from to the app: waiting for those first (on what may be
// the slowest path) before asking for the rest once cost a stripe most of
// its gain. finish hands the rest to the app; abandon stops it.
func (c *Client) startStripe(w http.ResponseWriter, r *http.Request, hdr http.Header, sr pathchoice.Request, orig int, from, total int64) *stripeRun {
	c.stripes.Add(1)
	ctx, cancel := context.WithCancel(r.Context())
	s := &stripeRun{c: c, r: r, hdr: hdr, validator: resume.Validator(w.Header()), sr: sr, ctx: ctx, cancel: cancel, total: total,
		next: from, delivered: from, from: from, cutAt: from, origPath: orig, began: time.Now(), kick: make(chan struct{}),
		staffed: map[int]int{}, queued: map[int]int64{}, est: map[int]*rateEst{}}
	pins := c.stripePins(sr)
	for _, pin := range pins {
		s.staffed[pin]++
	}
	s.alive = len(pins)
	for _, pin := range pins {
		s.wg.Go(func() { s.work(pin) })
	}
	return s
}

// abandon stops a stripe whose original response failed before its first
// piece: the fetch moves on as any other.
func (s *stripeRun) abandon() {
	s.cancel()
	s.wg.Wait()
}

// original is the original stream's progress: it has given the app n
// bytes; it returns where it is to stop.
func (s *stripeRun) original(n int64) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.origAt = n
	return s.cutAt
}

// finish writes the striped bytes to w in order once the original stream
// has given the app its n bytes; it returns all body bytes written for
// the request.
func (s *stripeRun) finish(w http.ResponseWriter, n int64) (int64, error) {
	c, r := s.c, s.r
	written, ferr := s.deliver(w, n)
	s.abandon()
	if ferr != nil && errors.Is(ferr, errPieceRefused) && r.Context().Err() == nil {
		// ct-server keeps refusing pieces (its limits): finish on one
		// stream, which needs no more slots than the response had.
		c.stripeFallbacks.Add(1)
		c.cfg.Log.Info("striping refused; finishing on one stream", "url", r.URL.String(), "at_byte", written, "err", ferr)
		return c.forwardFrom(w, r, s.sr, written, true)
	}
	if ferr != nil {
		c.cfg.Log.Warn("striped fetch failed", "url", r.URL.String(), "at_byte", written, "err", ferr)
		c.abortApp(w, r) // the head is out: cut, never short
	}
	return written, nil
}

// stripePins lists the workers' paths, stripeWorkers per connected path
// the request may use: an app pinned to a path (AppPaths) stays there,
// and backup paths wait while a primary is up.
func (c *Client) stripePins(sr pathchoice.Request) []int {
	var pins []int
	views, _ := c.snapshot()
	primary := pathchoice.PrimaryUp(views, nil, time.Now())
	for _, p := range c.paths {
		pinned := sr.Pin > 0 && p.id != sr.Pin-1
		if p.current() != nil && (p.Role != RoleBackup || !primary) && !pinned {
			for range stripeWorkers {
				pins = append(pins, p.id)
			}
		}
	}
	return pins
}

// deliver writes the pieces to w in order as they land; it returns the
// offset reached and why it stopped short, if it did.
func (s *stripeRun) deliver(w http.ResponseWriter, written int64) (int64, error) {
	rc := http.NewResponseController(w)
	for written < s.total {
		p, err := s.head()
		if err != nil {
			return written, err
		}
		if p.end < written { // the original stream got there first
			p.cancel()
			s.pop(written)
			continue
		}
		select {
		case <-p.done:
		case <-s.ctx.Done():
			return written, s.ctx.Err()
		}
		if p.err != nil {
			return written, p.err
		}
		if _, err := w.Write(p.data[written-p.off:]); err != nil {
			return written, err
		}
		rc.Flush()
		written = p.end + 1
		p.data = nil
		s.pop(written)
	}
	return written, nil
}

// pop drops the head piece: the app has the bytes before written.
func (s *stripeRun) pop(written int64) {
	s.mu.Lock()
	s.pieces = s.pieces[1:]
	s.delivered = max(s.delivered, written)
	s.wake()
	s.mu.Unlock()
}

// head waits for the next piece the app needs to be requested.
func (s *stripeRun) head() (*piece, error) {
	for {
		s.mu.Lock()
		if len(s.pieces) > 0 {
			p := s.pieces[0]
			s.mu.Unlock()
			return p, nil
		}
		k := s.kick
		s.mu.Unlock()
		select {
		case <-k:
		case <-s.ctx.Done():
			return nil, s.ctx.Err()
		}
	}
}

// wake tells waiting workers and the writer that something changed; mu held.
func (s *stripeRun) wake() {
	close(s.kick)
	s.kick = make(chan struct{})
}

// work is one worker on path pin: take pieces (or second copies of the
// piece holding the app up) while the policy allows, wait otherwise.
func (s *stripeRun) work(pin int) {
	for {
		p, wait, gone := s.decide(pin)
		switch {
		case gone:
			return
		case p != nil:
			s.fetch(pin, p)
		default:
			select {
			case <-wait:
			case <-time.After(worthPoll):
			case <-s.ctx.Done():
				return
			}
		}
	}
}

// worthPoll is how often a waiting worker looks again when nothing in
// the stripe changed: its paths' estimates move between pieces too.
const worthPoll = 20 * time.Millisecond

// decide is one worker's decision (stripesched.Take, then
// stripesched.Reinject for the head piece): a piece to fetch, or a
// channel to wait on, or gone when the worker should leave — its path has
// no connection and other workers remain (the last never leaves with
// pieces left: its fetch moves like any request).
func (s *stripeRun) decide(pin int) (p *piece, wait <-chan struct{}, gone bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ctx.Err() != nil {
		return nil, nil, true
	}
	own, others, all, ok := s.views(pin)
	if !ok {
		if s.alive > 1 {
			s.alive--
			s.staffed[pin]--
			return nil, nil, true
		}
		own = stripesched.Path{Rate: pathchoice.DefaultRate}
	}
	now := time.Now()
	st := stripesched.Stripe{Window: stripesched.Window(append([]stripesched.Path{own}, others...)),
		Ahead: s.next - s.delivered, Left: s.total - s.next}
	if size := stripesched.Take(own, others, st); size > 0 {
		ctx, cancel := context.WithCancel(s.ctx)
		p = &piece{off: s.next, end: s.next + size - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now}
		s.next += size
		s.pieces = append(s.pieces, p)
		return s.start(pin, p, now), nil, false
	}
	if p := s.reinjectPrefix(pin, own, all, now); p != nil {
		return p, nil, false
	}
	if len(s.pieces) > 0 {
		h := s.pieces[0]
		if !h.landed && h.copies == 1 && h.path != pin && stripesched.Reinject(own, h.size(), due(h, all, now)) {
			s.c.reinjections.Add(1)
			return s.start(pin, h, now), nil, false
		}
	}
	return nil, s.kick, false
}

// reinjectPrefix requests on path pin the rest of what the original
// stream still owes when pin would land it sooner (stripesched.Reinject):
// the original stops where the new piece starts, set as far on as the
// original gets meanwhile at its path's rate; mu held.
func (s *stripeRun) reinjectPrefix(pin int, own stripesched.Path, all map[int]stripesched.Path, now time.Time) *piece {
	orig, ok := all[s.origPath]
	left := s.from - s.origAt
	if s.prefix || pin == s.origPath || !ok || left < stripesched.MinPiece {
		return nil
	}
	if d := now.Sub(s.began); d > orig.RTT && s.origAt > 0 {
		// What the original stream has done since its head: a better
		// estimate of its path than one not yet measured.
		orig.Rate = float64(s.origAt) / d.Seconds()
	}
	if !stripesched.Reinject(own, left, float64(left)/orig.Rate) {
		return nil
	}
	off := s.origAt + int64(orig.Rate*own.Done(left))
	if off >= s.from-stripesched.MinPiece/2 {
		return nil
	}
	s.prefix, s.cutAt = true, off
	s.c.reinjections.Add(1)
	ctx, cancel := context.WithCancel(s.ctx)
	p := &piece{off: off, end: s.from - 1, path: pin, ctx: ctx, cancel: cancel, done: make(chan struct{}), start: now}
	s.pieces = append([]*piece{p}, s.pieces...)
	return s.start(pin, p, now)
}

// due is when the head piece h should land, in seconds from now, by what
// is known of its path now (the estimate that placed it may have been
// wrong): its round trip and its bytes at the path's rate from when it was
// requested. A piece already later than that is assumed to take as long
// again as it has taken so far.
func due(h *piece, all map[int]stripesched.Path, now time.Time) float64 {
	elapsed := now.Sub(h.start).Seconds()
	v, ok := all[h.path]
	if !ok {
		return elapsed // its path is gone: as late as it gets
	}
	left := v.RTT.Seconds() + float64(h.size())/v.Rate - elapsed
	if left <= 0 {
		return elapsed
	}
	return left
}

// start counts a request for p on path pin; mu held.
func (s *stripeRun) start(pin int, p *piece, now time.Time) *piece {
	p.copies++
	p.running++
	if s.queued[pin] == 0 {
		s.rate(pin).idle(now)
	}
	s.queued[pin] += p.size()
	return p
}

// fetch requests p on path pin and records what came back.
func (s *stripeRun) fetch(pin int, p *piece) {
	var got int64 // of this copy, counted off the path's queue as they come
	data, err := s.c.fetchPiece(p.ctx, s.r, s.hdr, s.validator, s.sr, pin, p.off, p.end, func(n int) {
		s.mu.Lock()
		k := min(int64(n), p.size()-got)
		got += k
		s.queued[pin] -= k
		s.mu.Unlock()
	})
	now := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	p.running--
	s.queued[pin] -= p.size() - got
	if err == nil {
		s.rate(pin).landed(p.size(), now, s.queued[pin] > 0)
	}
	switch {
	case p.landed:
	case err == nil:
		p.data, p.landed = data, true
		close(p.done)
		p.cancel() // a second copy still running is not needed
	case p.running == 0:
		p.err, p.landed = err, true
		close(p.done)
		p.cancel()
	}
	s.wake()
}

// views is what the policy knows of path pin and of the other paths that
// have workers in this stripe and a connection; mu held. A path's rate is
// what this stripe measured on it, else the client's estimate, else what
// its congestion window allows per round trip.
func (s *stripeRun) views(pin int) (own stripesched.Path, others []stripesched.Path, all map[int]stripesched.Path, ok bool) {
	all = map[int]stripesched.Path{}
	for _, p := range s.c.paths {
		if p.id != pin && s.staffed[p.id] == 0 {
			continue
		}
		p.mu.Lock()
		conn := p.conn
		out, rate := p.outstanding, p.rate
		p.mu.Unlock()
		if conn == nil || conn.Context().Err() != nil {
			if p.id == pin {
				return own, nil, all, false
			}
			continue
		}
		st := conn.ConnectionStats()
		if e := s.est[p.id]; e != nil && e.rate > 0 {
			rate = e.rate
		}
		if rate <= 0 && st.SmoothedRTT > 0 {
			rate = float64(st.CongestionWindow) / st.SmoothedRTT.Seconds()
		}
		if rate <= 0 {
			rate = pathchoice.DefaultRate
		}
		v := stripesched.Path{RTT: st.SmoothedRTT, Rate: rate, Queued: max(out, s.queued[p.id])}
		all[p.id] = v
		if p.id == pin {
			own, ok = v, true
		} else {
			others = append(others, v)
		}
	}
	return own, others, all, ok
}

// rate is path id's estimator in this stripe; mu held.
func (s *stripeRun) rate(id int) *rateEst {
	e := s.est[id]
	if e == nil {
		e = &rateEst{}
		s.est[id] = e
	}
	return e
}

// rateEst measures a path's delivery rate while the stripe keeps it
// busy: bytes landed over the time since its queue last became non-empty.
// Pieces on one path share it (its streams interleave), so the landing of
// one piece says little, the bytes of a busy period much. The period is
// halved (bytes and time) once longer than rateSpan, so the estimate
// follows a path whose rate changes within about that long.
type rateEst struct {
	from  time.Time // start of the busy period (zero: idle)
	bytes int64     // landed since from
	rate  float64   // bytes/s; 0 until measured
}

// rateSpan is the memory of rateEst: a second holds many pieces of any
// path worth striping over, and a rate that halves shows within it.
const rateSpan = time.Second

// idle marks the start of a busy period at now: the path had nothing of
// the stripe in flight.
func (e *rateEst) idle(now time.Time) { e.from, e.bytes = now, 0 }

// landed counts n bytes landed at now; busy tells whether the path still
// has pieces in flight (else the next request starts a new period).
func (e *rateEst) landed(n int64, now time.Time, busy bool) {
	if !e.from.IsZero() {
		e.bytes += n
		if d := now.Sub(e.from); d > 0 && e.bytes >= stripesched.MinPiece {
			e.rate = float64(e.bytes) / d.Seconds()
			if d > rateSpan {
				e.from, e.bytes = now.Add(-d/2), e.bytes/2
			}
		}
	}
	if !busy {
		e.from = time.Time{}
	}
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

// fetchPiece fetches bytes [off, end] of r's URL, on path pin if it can.
func (c *Client) fetchPiece(ctx context.Context, r *http.Request, hdr http.Header, v string, sr pathchoice.Request, pin int, off, end int64, received func(int)) (data []byte, err error) {
	req := (&http.Request{Method: http.MethodGet, URL: r.URL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr.Clone(), Host: r.Host, Body: http.NoBody}).WithContext(ctx)
	req.Header.Set("Range", resume.Range{First: off, Last: end}.String())
	if v != "" {
		req.Header.Set("If-Range", v) // every piece of the same version
	}
	sr.Pin = pin + 1
	bw := &bufferWriter{h: http.Header{}, received: received}
	func() {
		defer func() {
			if v := recover(); v != nil {
				if v != http.ErrAbortHandler {
					panic(v)
				}
				err = errors.New("piece aborted")
			}
		}()
		_, err = c.forward(bw, req, sr) // waits for a slot on 429/503 itself
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
	return bw.buf.Bytes(), nil
}
