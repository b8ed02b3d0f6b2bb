package agent

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/stripe"
	"github.com/hetquic/hetquic/agent/stripesched"
	"github.com/hetquic/hetquic/internal/resume"
)

// Speculative pieces. A stripe starts once the original's head is in (its
// length is not known before), and its other paths then ask for their
// first pieces: their bytes came a round trip of the original's path and
// one of their own after the start, and on sockets a striped download lost
// a median 82 ms of the summed rate at its start against 28 ms for one
// path alone (agent/RESULTS.md, session 19). So beside a GET that may go
// on striped, ct-client asks each other path at once for a piece past the
// original's part (speculate): a Range request whose answer is used only
// when the original's head makes the response stripeable and the answer
// is the same object (specPiece.check). Anything else drops it, and the
// stripe asks for those bytes as it would have (stripe.Pre).
//
// The pieces start at specOffset, where an object too small to stripe
// has ended: for such an object a speculative request costs one 416 with
// no body. A server that ignores Range answers 200, and the request is
// stopped at its head. No path that is metered, a backup or not connected
// speculates, nor a request pinned to one path.

// errSpecDropped: a speculative piece that cannot be used.
var errSpecDropped = errors.New("speculative piece dropped")

// specMaxPiece bounds one speculative piece (the memory it may hold before
// the stripe starts, per path): 1 MiB is 80 ms at 100 Mbit/s, about the
// start-up the speculation covers.
const specMaxPiece = 1 << 20

// specOffset is where the speculative pieces start: past the original's
// part (StripeChunk) and at the smallest object that stripes (StripeMin).
func (c *Client) specOffset() int64 { return max(c.cfg.StripeMin, c.cfg.StripeChunk) }

// specPiece is one speculative Range request in flight.
type specPiece struct {
	c        *Client
	path     int
	off, end int64 // as asked (the object may end sooner)
	asked    time.Time
	cancel   context.CancelFunc
	head     chan struct{} // closed once status and hdr are set, or done
	done     chan struct{} // closed once data and err are set
	headOnce sync.Once

	mu       sync.Mutex
	status   int
	hdr      http.Header
	pending  int       // bytes received before the stripe attached (attach)
	received func(int) // the stripe's count of bytes received, once attached
	data     []byte
	err      error
}

// speculate sends a speculative piece on each path, other than the
// original's path orig, that a stripe of r would use now (stripePins) and
// that may carry a piece before it is known to shorten the download: not
// metered, not a backup, connected. Each is sized to what its path
// delivers in the two round trips the stripe would otherwise take to ask
// for it (the original's and its own).
//
// Only a path measured faster than the original's speculates. Where the
// original's path is the swiftest, the stripe extends the original over
// the next bytes (stripe's Run.take) and a piece ahead of it cuts it
// there: the bytes in flight past the cut are lost and the path waits for
// its next piece, about a round trip of the fastest path against a round
// trip of a slower one gained. On fake time (the 2 : 1 row, 20 MB, the
// original on the 80 Mbit/s path) speculating on the slower path took
// 0.948 of the summed rate against 0.962 without; with the original on
// the slower path (40/5 ms + 80/20 ms) it gained: 0.94 against 0.93.
func (f *fetch) speculate(orig *path) []*specPiece {
	c := f.c
	if f.sr.Pin > 0 || c.Ready() < 2 {
		return nil
	}
	origRTT := connRTT(orig)
	orig.mu.Lock()
	origRate := orig.rate
	orig.mu.Unlock()
	off := c.specOffset()
	var specs []*specPiece
	seen := map[int]bool{orig.id: true}
	paths := c.pathList()
	for _, id := range c.stripePins(f.sr, paths) {
		p := paths[id]
		if seen[id] || p.Role == RoleMetered || p.current() == nil {
			continue
		}
		seen[id] = true
		p.mu.Lock()
		rate := p.rate
		p.mu.Unlock()
		if rate <= origRate {
			continue // not measured yet (no size to give it), or no faster than the original's path
		}
		size := int64(rate * (origRTT + connRTT(p)).Seconds())
		size = min(max(size, stripesched.MinPiece), specMaxPiece)
		specs = append(specs, c.startSpec(f, id, off, off+size-1))
		off += size
	}
	return specs
}

// connRTT is p's smoothed round trip now (0 without a connection).
func connRTT(p *path) time.Duration {
	if conn := p.current(); conn != nil {
		return conn.ConnectionStats().SmoothedRTT
	}
	return 0
}

// startSpec requests bytes [off, end] of f's URL on path pin.
func (c *Client) startSpec(f *fetch, pin int, off, end int64) *specPiece {
	ctx, cancel := context.WithCancel(f.ctx)
	sp := &specPiece{c: c, path: pin, off: off, end: end, asked: time.Now(), cancel: cancel,
		head: make(chan struct{}), done: make(chan struct{})}
	bw := &bufferWriter{h: http.Header{}, received: sp.got}
	bw.head = func(status int) bool {
		sp.mu.Lock()
		sp.status, sp.hdr = status, bw.h.Clone()
		sp.mu.Unlock()
		sp.headOnce.Do(func() { close(sp.head) })
		if status != http.StatusPartialContent {
			cancel() // no body wanted: stop it at its head
		}
		return status == http.StatusPartialContent
	}
	go func() {
		err := c.fetchInto(ctx, bw, f.r, f.hdr, "", f.sr, pin, off, end)
		sp.mu.Lock()
		sp.data, sp.err = bw.buf.Bytes(), err
		sp.mu.Unlock()
		sp.headOnce.Do(func() { close(sp.head) })
		close(sp.done)
	}()
	return sp
}

// got counts n bytes received: to the stripe once attached, else kept.
func (sp *specPiece) got(n int) {
	sp.mu.Lock()
	recv := sp.received
	if recv == nil {
		sp.pending += n
	}
	sp.mu.Unlock()
	if recv != nil {
		recv(n)
	}
}

// check says whether the answer's head is bytes [off, last] of the
// original's object: a 206 from off to last of total, with the
// original's ETag and Last-Modified (both absent where the original had
// none, as the stripe's own pieces then carry no If-Range) and no
// content coding.
func (sp *specPiece) check(orig http.Header, last, total int64) error {
	sp.mu.Lock()
	status, h := sp.status, sp.hdr
	sp.mu.Unlock()
	if status != http.StatusPartialContent {
		return fmt.Errorf("%w: status %d", errSpecDropped, status)
	}
	cr, ok := resume.ParseContentRange(h.Get("Content-Range"))
	switch {
	case !ok || cr.First != sp.off || cr.Last != last || cr.Total != total:
		return fmt.Errorf("%w: Content-Range %q for %d-%d/%d", errSpecDropped, h.Get("Content-Range"), sp.off, last, total)
	case h.Get("Etag") != orig.Get("Etag") || h.Get("Last-Modified") != orig.Get("Last-Modified"):
		return fmt.Errorf("%w: another version", errSpecDropped)
	case h.Get("Content-Encoding") != "":
		return fmt.Errorf("%w: content coding", errSpecDropped)
	}
	return nil
}

// pre is the stripe's view of sp for an object of total bytes whose
// original head is orig: its bytes once check passes and all came, else
// an error (the stripe then asks for them itself); false when the object
// ends before sp's first byte.
func (sp *specPiece) pre(orig http.Header, total int64) (stripe.Pre, bool) {
	last := min(sp.end, total-1)
	if sp.off >= total {
		return stripe.Pre{}, false
	}
	fetch := func(ctx context.Context, received func(int)) ([]byte, error) {
		defer context.AfterFunc(ctx, sp.cancel)()
		select {
		case <-sp.head:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if err := sp.check(orig, last, total); err != nil {
			sp.cancel()
			sp.c.specsDropped.Add(1)
			return nil, err
		}
		sp.attach(received)
		select {
		case <-sp.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		sp.mu.Lock()
		defer sp.mu.Unlock()
		if sp.err != nil || int64(len(sp.data)) != last-sp.off+1 {
			sp.c.specsDropped.Add(1)
			return nil, fmt.Errorf("%w: %d of %d bytes: %v", errSpecDropped, len(sp.data), last-sp.off+1, sp.err)
		}
		sp.c.specsUsed.Add(1)
		return sp.data, nil
	}
	return stripe.Pre{Path: sp.path, Off: sp.off, End: last, Asked: sp.asked, Fetch: fetch}, true
}

// attach has the stripe hear of sp's bytes: those already in, then each.
func (sp *specPiece) attach(received func(int)) {
	sp.mu.Lock()
	k := sp.pending
	sp.pending, sp.received = 0, received
	sp.mu.Unlock()
	if k > 0 {
		received(k)
	}
}

// specPre is the speculative pieces as a stripe of total bytes whose
// original head is orig takes them; those past the object's end are
// dropped now.
func specPre(specs []*specPiece, orig http.Header, total int64) []stripe.Pre {
	var pre []stripe.Pre
	for _, sp := range specs {
		if q, ok := sp.pre(orig, total); ok {
			pre = append(pre, q)
		} else {
			sp.cancel()
		}
	}
	return pre
}

// dropSpecs stops the speculative pieces still running (a stripe that
// took them has ended, or none started).
func dropSpecs(specs []*specPiece) {
	for _, sp := range specs {
		sp.cancel()
	}
}
