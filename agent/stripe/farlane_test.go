package stripe

import (
	"bytes"
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// laneHost is a client of paths each with its own round trip, its own
// rate (the bytes' pace) and the rate the client estimates for it
// (PathState.Rate, which may be stale), workers workers per path as
// ct-client gives them (stripeWorkers in package agent), and a sender per
// path that serves requests marked next first and the others in the order
// asked (PathState.InOrder), one at a time at the path's rate.
type laneHost struct {
	object  []byte
	rtt     []time.Duration
	rate    []float64 // the bytes' pace
	est     []float64 // the client's estimate
	link    []string  // PathState.Link: lanes of one interface share a name
	workers int

	mu      sync.Mutex
	fetched map[int]int64
	links   []chan struct{} // a token per path: its pieces take turns
	nexts   []chan struct{} // a token per path for requests marked next, taken before links
}

func newLaneHost(object []byte, rtt []time.Duration, rate, est []float64, workers int) *laneHost {
	h := &laneHost{object: object, rtt: rtt, rate: rate, est: est, workers: workers, fetched: map[int]int64{}}
	for range rtt {
		h.links = append(h.links, make(chan struct{}, 1))
		h.nexts = append(h.nexts, make(chan struct{}, 1))
	}
	return h
}

func (h *laneHost) Paths() int { return len(h.rtt) }

func (h *laneHost) Pins(from, to int) []int {
	var pins []int
	for id := from; id < to; id++ {
		for range h.workers {
			pins = append(pins, id)
		}
	}
	return pins
}

func (h *laneHost) Path(id int) (PathState, bool) {
	st := PathState{RTT: h.rtt[id], MinRTT: h.rtt[id], Rate: h.est[id], InOrder: true}
	if h.link != nil {
		st.Link = h.link[id]
	}
	return st, true
}

func (h *laneHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	off, end, err := r.Open(func() error { return nil })
	if err != nil {
		return nil, err
	}
	b := h.object[off : end+1]
	if !sleepCtx(ctx, h.rtt[pin]) {
		return nil, ctx.Err()
	}
	// A request marked next holds its path's next token while it sends;
	// the others take the link in turn and, chunk by chunk, yield to it.
	tok, yield := h.links[pin], !r.Next
	if r.Next {
		tok = h.nexts[pin]
	}
	select {
	case tok <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-tok }()
	const chunk = 16 << 10
	for sent := 0; sent < len(b); {
		if yield {
			select {
			case h.nexts[pin] <- struct{}{}:
				<-h.nexts[pin]
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		k := min(chunk, len(b)-sent)
		if !sleepCtx(ctx, seconds(float64(k)/h.rate[pin])) {
			return nil, ctx.Err()
		}
		r.Received(k)
		sent += k
	}
	h.mu.Lock()
	h.fetched[pin] += int64(len(b))
	h.mu.Unlock()
	return b, nil
}

func (h *laneHost) Reinjected()           {}
func (h *laneHost) EndgameCopied(int64)   {}
func (h *laneHost) Blocked()              {}
func (h *laneHost) Measured(int, float64) {}

// TestStripeStaleLanesBesideFarPath replays the low draws of the lossy
// 10 : 1 mix on sockets (lowmode36: 120 Mbit/s 200 ms + 10 Mbit/s 50 ms
// with 1 % loss, `hetquic agent experiment stripe --scale 0.2 -v`,
// 2026-12-02): ct-client had opened four to six connections (lanes) on
// the lossy link, and each lane still carried the client's estimate from
// the warm-up, measured while its siblings idled (0.14–0.96 MB/s each;
// summed 1.4–2.8 × the link's 1.25 MB/s in 7 of 8 draws below the far
// path alone, 1.2–1.3 × in those above it). The stripe had not measured the
// link yet, so it planned each lane at its own estimate: the lanes'
// first pieces, taken at once by their workers, came at the lanes' true
// share hundreds of ms after their estimates, in the middle of the far
// path's pieces and at the object's end, and the original, on one lane,
// was judged at that lane's estimate too. Here four lanes of a
// 1.25 MB/s link (estimated 0.35, 0.72, 0.43, 0.78 MB/s, near one such
// draw's 0.42–0.78, 2.3 × the link summed) beside 15 MB/s 200 ms away,
// the original on the lane rated highest: 1.10–1.14 × the far path alone before
// the lanes were planned at no more than their best lane's estimate
// until the stripe measured their link (shareLinks), 0.94–1.03 × since.
// It catches planning a link's lanes at their summed estimates (too
// slow) and leaving the lanes out (they must carry some of the bytes).
func TestStripeStaleLanesBesideFarPath(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, from, far, near = 20 << 20, 256 << 10, 15e6, 1.25e6
		est := []float64{far, 0.35e6, 0.72e6, 0.43e6, 0.78e6}
		rtt := []time.Duration{200 * time.Millisecond}
		rate := []float64{far}
		link := []string{""}
		for range est[1:] {
			rtt = append(rtt, 56*time.Millisecond)
			rate = append(rate, near/float64(len(est)-1)) // each lane's share of the busy link
			link = append(link, "near")
		}
		h := newLaneHost(object(size), rtt, rate, est, 6)
		h.link = link
		start := time.Now()
		orig := len(est) - 1 // the original on the lane rated highest
		s := Start(context.Background(), h, orig, from, size)
		cut := playOriginalBy(s, rate[orig], 2<<10)
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, cut)
		s.Abandon()
		took := time.Since(start)
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object[cut:]) {
			t.Fatalf("delivered to %d of %d: %v", n, size, err)
		}
		alone := rtt[0] + seconds(size/far)
		var lanes int64
		for id := range est[1:] {
			lanes += h.fetched[id+1]
		}
		share := float64(lanes) / size
		t.Logf("took %v (far path alone %v, %.3f ×); the lanes carried %.1f %% of the bytes", took, alone, took.Seconds()/alone.Seconds(), 100*share)
		if took.Seconds() > stripeLaneBar*alone.Seconds() {
			t.Errorf("took %v, over %.2f × the far path alone (%v)", took, stripeLaneBar, alone)
		}
		if share < 0.04 {
			t.Errorf("the lanes carried %.1f %% of the bytes, want ≥ 4 %% (their link is 7.7 %% of the rates)", 100*share)
		}
	})
}

// stripeLaneBar: TestStripeStaleLanesBesideFarPath's allowance over the far
// path alone. Its runs end at 0.94 × mostly; the link's last slivers, left
// to whichever path is idle first (stripesched.Take's rule 6), cost up to
// one lane's piece and round trip (1.03 ×).
const stripeLaneBar = 1.05
