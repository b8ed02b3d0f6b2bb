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

	"github.com/hetquic/hetquic/internal/resume"
)

// Striping: one large response fetched over several paths at once. The
// paper keeps each app's stream on one path and aggregates bandwidth only
// across apps (§V-B2); a single large object then moves at one path's
// rate. For a GET whose response is at least StripeMin bytes and whose
// app-server accepts byte ranges, ct-client keeps the first StripeChunk
// bytes of the original response, then fetches the rest as Range requests
// of StripeChunk bytes, two at a time per connected path, and hands the
// pieces to the app in order. Each piece is an ordinary request, so a
// piece whose path fails moves like any other (stream migration). Memory is
// bounded: workers run at most stripeWindow pieces ahead of the app.
const (
	DefaultStripeMin   = 2 << 20
	DefaultStripeChunk = 256 << 10
	stripeWorkers      = 2 // per path: hides the request round trip
)

var errStriped = errors.New("continuing striped")

type stripePlan struct{ total int64 }

// stripeable: a 200 with a length worth splitting, ranges accepted, and a
// second path to split over.
func (c *Client) stripeable(resp *http.Response) bool {
	return resp.StatusCode == http.StatusOK && resp.ContentLength >= c.cfg.StripeMin &&
		strings.Contains(resp.Header.Get("Accept-Ranges"), "bytes") && resp.Header.Get("Content-Encoding") == "" &&
		c.Ready() >= 2 && resp.ContentLength > c.cfg.StripeChunk
}

// bufferWriter is the http.ResponseWriter a piece is fetched into.
type bufferWriter struct {
	h      http.Header
	status int
	buf    bytes.Buffer
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
	return b.buf.Write(p)
}

type piece struct {
	data []byte
	err  error
	done chan struct{}
}

// stripe fetches bytes [from, total) of r's response over all paths and
// writes them to w in order; it returns all body bytes written for r.
func (c *Client) stripe(w http.ResponseWriter, r *http.Request, hdr http.Header, sr Request, from, total int64) (int64, error) {
	c.stripes.Add(1)
	validator := resume.Validator(w.Header())
	size := c.cfg.StripeChunk
	n := int((total - from + size - 1) / size)
	pieces := make([]*piece, n)
	for i := range pieces {
		pieces[i] = &piece{done: make(chan struct{})}
	}
	var pins []int
	primary := c.primaryUp(nil, time.Now())
	for _, p := range c.paths {
		pinned := sr.pin > 0 && p.id != sr.pin-1 // an app pinned to a path (AppPaths) stays there
		if p.current() != nil && (p.Role != RoleBackup || !primary) && !pinned {
			for range stripeWorkers {
				pins = append(pins, p.id)
			}
		}
	}
	window := 2 * len(pins)
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	var mu sync.Mutex
	cond := sync.NewCond(&mu)
	next, delivered := 0, 0
	alive := len(pins)
	// staffed counts each path's workers still in this stripe: a path is
	// compared against (worthPiece) only while it has some, or the
	// workers left would wait for pieces that a path with none takes.
	staffed := map[int]int{}
	for _, pin := range pins {
		staffed[pin]++
	}
	isStaffed := func(id int) bool {
		mu.Lock()
		defer mu.Unlock()
		return staffed[id] > 0
	}
	stop := context.AfterFunc(ctx, func() { mu.Lock(); cond.Broadcast(); mu.Unlock() })
	defer stop()
	// left is the bytes no worker has requested yet.
	left := func() int64 {
		mu.Lock()
		defer mu.Unlock()
		return max(0, total-(from+int64(next)*size))
	}
	var wg sync.WaitGroup
	for _, pin := range pins {
		wg.Go(func() {
			for {
				up := c.worthPiece(ctx, pin, size, left, isStaffed)
				mu.Lock()
				if !up && alive > 1 {
					// The path is gone: the last worker never leaves
					// with pieces left (its fetch moves like any request).
					alive--
					staffed[pin]--
					mu.Unlock()
					return
				}
				for next < n && next >= delivered+window && ctx.Err() == nil {
					cond.Wait()
				}
				if next >= n || ctx.Err() != nil {
					mu.Unlock()
					return
				}
				i := next
				next++
				mu.Unlock()
				off := from + int64(i)*size
				end := min(off+size, total) - 1
				data, err := c.fetchPiece(ctx, r, hdr, validator, sr, pin, off, end)
				pieces[i].data, pieces[i].err = data, err
				close(pieces[i].done)
			}
		})
	}
	rc := http.NewResponseController(w)
	written := from
	var ferr error
	for i := range pieces {
		select {
		case <-pieces[i].done:
		case <-ctx.Done():
			ferr = ctx.Err()
		}
		if ferr == nil {
			ferr = pieces[i].err
		}
		if ferr != nil {
			break
		}
		if _, err := w.Write(pieces[i].data); err != nil {
			ferr = err
			break
		}
		rc.Flush()
		written += int64(len(pieces[i].data))
		pieces[i].data = nil
		mu.Lock()
		delivered++
		cond.Broadcast()
		mu.Unlock()
	}
	cancel()
	wg.Wait()
	if ferr != nil && errors.Is(ferr, errPieceRefused) && r.Context().Err() == nil {
		// ct-server keeps refusing pieces (its limits): finish on one
		// stream, which needs no more slots than the response had.
		c.stripeFallbacks.Add(1)
		c.cfg.Log.Info("striping refused; finishing on one stream", "url", r.URL.String(), "at_byte", written, "err", ferr)
		return c.forwardFrom(w, r, sr, written, true)
	}
	if ferr != nil {
		c.cfg.Log.Warn("striped fetch failed", "url", r.URL.String(), "at_byte", written, "err", ferr)
		c.abortApp(w, r) // the head is out: cut, never short
	}
	return written, nil
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

// pieceView is what the stripe scheduler knows of one path: its smoothed
// RTT, its delivery rate (bytes/s) and the bytes requested on it and not
// yet received (its queue).
type pieceView struct {
	RTT    time.Duration
	Rate   float64
	Queued int64
}

// done is when the path would deliver size more bytes, in seconds from
// now: a round trip for the request, then its queue and the piece.
func (v pieceView) done(size int64) float64 {
	return v.RTT.Seconds() + float64(v.Queued+size)/v.Rate
}

// takePiece is the stripe scheduler's decision, a pure function: should
// path own request the next piece (size bytes) now, with left bytes of the
// object not yet requested by any path (this piece included) and the other
// paths of the stripe in others? The rule is expected completion time, in
// the spirit of ECF (Lim et al., CoNEXT 2017), BLEST (Ferlin et al., IFIP
// Networking 2016) and the thesis's MAMS: a path takes the piece if it
// would deliver it no later than the others could (their queues drained,
// left shared at their summed rate) deliver everything left without it. A
// slower path is thus used while the object is large enough that its
// piece lands before the faster paths would be done anyway, and stays idle
// for the tail, where its piece would arrive after the fast path had
// finished the whole object. With no other path it always takes, and so
// does a path that would deliver the piece no later than any other path
// alone: the others' summed rate is a hypothesis that only holds while
// they take pieces, and with three or more paths and a short tail every
// path could find the others faster together and none would take
// (TestTakePieceSomeoneTakes).
func takePiece(own pieceView, others []pieceView, size, left int64) bool {
	if len(others) == 0 || left <= 0 {
		return true
	}
	var rate float64
	var queued int64
	rtt := others[0].RTT
	best := true // own delivers this piece no later than any other path
	for _, o := range others {
		rate += o.Rate
		queued += o.Queued
		rtt = min(rtt, o.RTT)
		best = best && (o.Rate <= 0 || own.done(size) <= o.done(size))
	}
	if rate <= 0 || best {
		return true
	}
	without := pieceView{RTT: rtt, Rate: rate, Queued: queued}.done(left)
	return own.done(size) <= without
}

// worthPiece waits until path pin should take a piece (takePiece). A path
// busy with other requests waits here rather than leaving the object for
// good (it did once, and a 4 s small download on the fast path then left a
// large one to the slow path alone: 4× slower): it becomes worth it again
// when its queue drains. Only paths with workers of this stripe (staffed)
// are compared: a path whose workers left when its connection dropped is
// often back, redialed, with fresh and flattering estimates, and waiting
// for it once left the last pieces to nobody (the download hung,
// TestMigrateOnConnectionDeath). It returns true when the path should
// take a piece, or when no piece is left or ctx ends (the caller sees
// that), and false only when the path has no connection.
func (c *Client) worthPiece(ctx context.Context, pin int, size int64, left func() int64, staffed func(id int) bool) bool {
	for {
		own, others, ok := c.pieceViews(pin, staffed)
		if !ok {
			return false
		}
		l := left()
		if l <= 0 || takePiece(own, others, min(size, l), l) || !sleepCtx(ctx, worthPoll) {
			return true
		}
	}
}

// worthPoll is how often a waiting worker re-evaluates its path: a small
// fraction of a piece's time on any path worth striping over.
const worthPoll = 20 * time.Millisecond

// pieceViews returns path pin's view and those of the other staffed paths
// that are connected. A path with no rate sample yet is credited what its
// congestion window allows per RTT.
func (c *Client) pieceViews(pin int, staffed func(id int) bool) (own pieceView, others []pieceView, ok bool) {
	for _, p := range c.paths {
		if p.id != pin && !staffed(p.id) {
			continue
		}
		p.mu.Lock()
		conn := p.conn
		out, rate := p.outstanding, p.rate
		p.mu.Unlock()
		if conn == nil || conn.Context().Err() != nil {
			if p.id == pin {
				return pieceView{}, nil, false
			}
			continue
		}
		st := conn.ConnectionStats()
		if rate <= 0 && st.SmoothedRTT > 0 {
			rate = float64(st.CongestionWindow) / st.SmoothedRTT.Seconds()
		}
		if rate <= 0 {
			rate = ectDefaultRate
		}
		v := pieceView{RTT: st.SmoothedRTT, Rate: rate, Queued: out}
		if p.id == pin {
			own, ok = v, true
		} else {
			others = append(others, v)
		}
	}
	return own, others, ok
}

// fetchPiece fetches bytes [off, end] of r's URL, on path pin if it can.
func (c *Client) fetchPiece(ctx context.Context, r *http.Request, hdr http.Header, v string, sr Request, pin int, off, end int64) (data []byte, err error) {
	req := (&http.Request{Method: http.MethodGet, URL: r.URL, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: hdr.Clone(), Host: r.Host, Body: http.NoBody}).WithContext(ctx)
	req.Header.Set("Range", resume.Range{First: off, Last: end}.String())
	if v != "" {
		req.Header.Set("If-Range", v) // every piece of the same version
	}
	sr.pin = pin + 1
	bw := &bufferWriter{h: http.Header{}}
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
