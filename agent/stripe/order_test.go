package stripe

import (
	"context"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"
)

// racyHost is fakeHost with a longer round trip (racyRTT), so that each
// path has several pieces in flight and its workers take pieces at the
// same instant, six workers a path (as the client's stripeWorkers), and
// requests that reach their streams after a random pause each (the
// client's way to a stream: a path pick, a stream slot), so requests
// made at one instant open their streams in any order. It numbers each
// path's streams as they open (as QUIC's stream IDs) and records the
// offset each asked for.
type racyHost struct {
	*fakeHost
	rng    *rand.Rand      // guarded by fakeHost.mu
	opened map[int][]int64 // per path, the offset asked for on each stream (guarded by fakeHost.mu)
	asks   map[int64]int   // requests per offset, on any path (guarded by fakeHost.mu)
}

// racyRTT is racyHost's round trip: at fakeRate a path's pipelining
// (stripesched.Take) then keeps a few pieces in flight.
const racyRTT = 100 * time.Millisecond

// racyPause bounds racyHost's pause before a stream opens.
const racyPause = 5 * time.Millisecond

func (h *racyHost) Pins(from, to int) []int {
	var pins []int
	for id := from; id < to; id++ {
		for range 6 {
			pins = append(pins, id)
		}
	}
	return pins
}

func (h *racyHost) Path(int) (PathState, bool) {
	return PathState{RTT: racyRTT, Rate: fakeRate}, true
}

func (h *racyHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	h.mu.Lock()
	pause := time.Duration(h.rng.Int64N(int64(racyPause)))
	h.mu.Unlock()
	time.Sleep(pause)
	id := -1
	off, end, err := r.Open(func() error {
		h.mu.Lock()
		id = len(h.opened[pin])
		h.opened[pin] = append(h.opened[pin], -1) // its offset once known
		h.mu.Unlock()
		return nil
	})
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.opened[pin][id] = off
	h.asks[off]++
	h.mu.Unlock()
	b := h.object[off : end+1]
	time.Sleep(racyRTT + seconds(float64(len(b))/fakeRate))
	r.Received(len(b))
	return b, ctx.Err()
}

// TestStripeStreamsInTakenOrder: ct-server sends a path's pieces by
// stream ID (PathState.InOrder), so on each path the streams of a stripe's
// pieces must open in the order the pieces were taken — here, from a
// stripe without an original, by offset — however the requests race to
// their streams (racyHost): each request asks for the first piece in
// line once its stream is open (Run.fetch, order). When each asked for
// the piece its worker took, the piece holding the app's next bytes
// could go out behind later ones (agent/DESIGN.md, "Pieces in order").
// Pieces asked for more than once (a reinjection's second copy) are left
// out: a copy goes where its path's order puts it when it is made.
func TestStripeStreamsInTakenOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size = 16 << 20
		h := &racyHost{fakeHost: newFakeHost(2, object(size), -1), rng: rand.New(rand.NewPCG(1, 2)),
			opened: map[int][]int64{}, asks: map[int64]int{}}
		s := Start(context.Background(), h, 0, 0, size)
		deliverWhole(t, s, h.object)
		for pin, offs := range h.opened {
			last, count := int64(-1), 0
			for id, off := range offs {
				if off < 0 || h.asks[off] > 1 {
					continue
				}
				count++
				if off < last {
					t.Errorf("path %d: stream %d asked for the piece at %d, after one at %d (offsets by stream: %v)", pin, id, off, last, offs)
				}
				last = off
			}
			if count < 4 {
				t.Errorf("path %d: %d pieces asked for once, want several to order", pin, count)
			}
		}
	})
}
