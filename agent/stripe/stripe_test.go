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

func object(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i * 7)
	}
	return b
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
