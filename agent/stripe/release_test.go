package stripe

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// releaseHost is a Host whose pieces are buffers of their own (copies of
// the inner host's), as the client's are, and whose Release spoils the
// buffer it gets, as the client's reuse for another piece would: a stripe
// that read a released piece would hand the app spoiled bytes.
type releaseHost struct {
	Host
	// whole: every fetch runs to its end, cancelled or not, so a second
	// copy lands after the first, as one can on a real path.
	whole    bool
	mu       sync.Mutex
	fetched  map[*byte]bool // buffers Fetch returned, by first byte; true once released
	bytes    int64          // their bytes: over the object's size where a second copy landed too
	twice    int            // buffers released again, or never fetched
	released int
}

func newReleaseHost(h Host, whole bool) *releaseHost {
	return &releaseHost{Host: h, whole: whole, fetched: map[*byte]bool{}}
}

func (h *releaseHost) Fetch(ctx context.Context, pin int, r Request) ([]byte, error) {
	if h.whole {
		ctx = context.WithoutCancel(ctx)
	}
	b, err := h.Host.Fetch(ctx, pin, r)
	if err != nil || len(b) == 0 {
		return nil, err
	}
	own := append([]byte(nil), b...)
	h.mu.Lock()
	h.fetched[&own[0]] = false
	h.bytes += int64(len(own))
	h.mu.Unlock()
	return own, nil
}

func (h *releaseHost) Release(b []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(b) == 0 {
		h.twice++
		return
	}
	if done, ok := h.fetched[&b[0]]; done || !ok {
		h.twice++
		return
	}
	h.fetched[&b[0]] = true
	h.released++
	for i := range b {
		b[i] = 0xEE
	}
}

// TestStripeReleasesEachPieceOnce: the stripe hands each piece's buffer
// back (Host.Release) once, after the app has its bytes, and a second
// copy's that landed too late as well; the app's bytes stay intact
// though each released buffer is spoiled at once. On the 10 : 1 pair the
// slow path's pieces are requested again on the fast one (reinjection),
// and where every fetch runs to its end the slow copies land after the
// fast ones.
func TestStripeReleasesEachPieceOnce(t *testing.T) {
	const size = 4 << 20
	slowLate := func() Host {
		return &pacedHost{object: object(size), rate: []float64{10e6, 1e6}, rtt: 20 * time.Millisecond,
			late: map[int]time.Duration{1: 400 * time.Millisecond}, fetched: map[int]int64{}, asked: map[int]int64{},
			links: map[int]chan struct{}{0: make(chan struct{}, 1), 1: make(chan struct{}, 1)}}
	}
	for _, tc := range []struct {
		name  string
		host  func() Host
		whole bool // releaseHost.whole
	}{
		{"equal paths", func() Host { return newFakeHost(2, object(size), -1) }, false},
		{"10 : 1, slow path late", slowLate, false},
		{"10 : 1, slow path late, copies run to the end", slowLate, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				inner := tc.host()
				h := newReleaseHost(inner, tc.whole)
				s := Start(context.Background(), h, 0, 0, size)
				deliverWhole(t, s, object(size))
				synctest.Wait() // Abandon has waited for the workers; nothing is left to land
				h.mu.Lock()
				defer h.mu.Unlock()
				if h.twice > 0 {
					t.Errorf("%d buffers released twice (or never fetched)", h.twice)
				}
				if h.released != len(h.fetched) {
					t.Errorf("%d of %d fetched pieces released", h.released, len(h.fetched))
				}
				if tc.whole && h.bytes <= size {
					t.Errorf("%d bytes fetched for %d: no second copy landed, so none was released", h.bytes, size)
				}
				t.Logf("%d pieces fetched (%d bytes for %d), %d released", len(h.fetched), h.bytes, size, h.released)
			})
		})
	}
}
