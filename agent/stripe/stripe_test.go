package stripe

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// fakeHost is a client of n paths of equal state whose pieces are the
// bytes of object; fail makes every fetch on that path fail.
type fakeHost struct {
	n      int
	object []byte
	fail   int // a path whose fetches fail (-1: none)

	mu      sync.Mutex
	fetched map[int]int64 // bytes fetched per path
	reinj   int
}

func (h *fakeHost) Paths() int { return h.n }

func (h *fakeHost) Path(int) (PathState, bool) {
	return PathState{RTT: 10 * time.Millisecond, Rate: 10e6}, true
}

func (h *fakeHost) Fetch(ctx context.Context, pin int, off, end int64, received func(int)) ([]byte, error) {
	time.Sleep(10 * time.Millisecond) // a round trip, on fake time
	if pin == h.fail {
		return nil, errors.New("path failed")
	}
	b := h.object[off : end+1]
	received(len(b))
	h.mu.Lock()
	h.fetched[pin] += int64(len(b))
	h.mu.Unlock()
	return b, ctx.Err()
}

func (h *fakeHost) Reinjected() { h.mu.Lock(); h.reinj++; h.mu.Unlock() }

// object is n bytes of a pattern that repeats every 251 bytes (a prime:
// no piece boundary lines up with it), made without a per-byte loop,
// which the race detector makes slow for the larger objects.
func object(n int) []byte {
	unit := make([]byte, 251)
	for i := range unit {
		unit[i] = byte(i * 7)
	}
	return bytes.Repeat(unit, n/len(unit)+1)[:n]
}

// TestStripeDelivers: with the original stream having given the app the
// first bytes, the pieces fetched over two paths reach the app in order and
// intact, and both paths carried some.
func TestStripeDelivers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, from = 4 << 20, 256 << 10
		h := &fakeHost{n: 2, object: object(size), fail: -1, fetched: map[int]int64{}}
		s := Start(context.Background(), h, []int{0, 0, 1, 1}, 0, from, size)
		s.Original(from) // the original stream got to from
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, from)
		s.Abandon()
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object[from:]) {
			t.Fatalf("delivered to %d of %d: %v (intact %v)", n, size, err, bytes.Equal(w.Body.Bytes(), h.object[from:]))
		}
		if h.fetched[0] == 0 || h.fetched[1] == 0 {
			t.Fatalf("bytes per path %v: both paths should carry pieces", h.fetched)
		}
	})
}

// TestStripeFailsWhole: a piece whose every copy failed ends the delivery
// with its error, short of the end (the client then cuts the app).
func TestStripeFailsWhole(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const size, from = 4 << 20, 256 << 10
		h := &fakeHost{n: 1, object: object(size), fail: 0, fetched: map[int]int64{}}
		s := Start(context.Background(), h, []int{0}, 0, from, size)
		s.Original(from)
		n, err := s.Deliver(httptest.NewRecorder(), from)
		s.Abandon()
		if err == nil || n >= size {
			t.Fatalf("delivered to %d of %d with no error", n, size)
		}
	})
}

// pacedHost is a client of paths whose state says rate and RTT; a fetch
// takes the RTT and its bytes at the rate, plus late on the path late
// names (a path whose pieces land later than its estimates say, as a
// lossy path's do when a packet of theirs is lost).
type pacedHost struct {
	object []byte
	rate   []float64
	rtt    time.Duration
	late   map[int]time.Duration

	mu      sync.Mutex
	fetched map[int]int64
}

func (h *pacedHost) Paths() int { return len(h.rate) }

func (h *pacedHost) Path(id int) (PathState, bool) {
	return PathState{RTT: h.rtt, Rate: h.rate[id]}, true
}

func (h *pacedHost) Fetch(ctx context.Context, pin int, off, end int64, received func(int)) ([]byte, error) {
	b := h.object[off : end+1]
	d := h.rtt + time.Duration(float64(len(b))/h.rate[pin]*float64(time.Second)) + h.late[pin]
	select {
	case <-time.After(d):
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	received(len(b))
	h.mu.Lock()
	h.fetched[pin] += int64(len(b))
	h.mu.Unlock()
	return b, nil
}

func (h *pacedHost) Reinjected() {}

// stripeLate stripes size bytes over a 10 : 1 pair of paths whose slow
// one is late by late on every piece; it returns the slow path's bytes
// and the stripe's λ at the end.
func stripeLate(t *testing.T, late time.Duration) (slowBytes int64, lambda float64) {
	synctest.Test(t, func(t *testing.T) {
		const size = 8 << 20
		h := &pacedHost{object: object(size), rate: []float64{10e6, 1e6}, rtt: 20 * time.Millisecond,
			late: map[int]time.Duration{1: late}, fetched: map[int]int64{}}
		s := Start(context.Background(), h, []int{0, 0, 1, 1}, 0, 0, size)
		w := httptest.NewRecorder()
		n, err := s.Deliver(w, 0)
		s.Abandon()
		if err != nil || n != size || !bytes.Equal(w.Body.Bytes(), h.object) {
			t.Fatalf("delivered to %d of %d: %v", n, size, err)
		}
		slowBytes, lambda = h.fetched[1], s.lambda
	})
	return slowBytes, lambda
}

// TestStripeLambdaHoldsBackLatePath: a slower path whose pieces land
// later than its estimates say, while the fast path waits on the window,
// raises the stripe's λ (BLEST), which cuts that path's pieces: it
// carries less than the same path on time, whose λ stays 1.
func TestStripeLambdaHoldsBackLatePath(t *testing.T) {
	onTime, l0 := stripeLate(t, 0)
	late, l1 := stripeLate(t, 400*time.Millisecond)
	t.Logf("slow path on time: %d bytes, λ %.2f; late 400 ms: %d bytes, λ %.2f", onTime, l0, late, l1)
	if l0 > 1 {
		t.Errorf("λ %.2f with the slow path on time, want 1", l0)
	}
	if l1 <= 1 || late >= onTime {
		t.Errorf("late path: λ %.2f and %d bytes (on time: %d), want λ > 1 and fewer bytes", l1, late, onTime)
	}
}
