package stripe

import (
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestExtension pins how far path 0, the original's, extends the
// original (take): where its stream is window-bound (a 65 Mbit/s path
// 130 ms away, a 1 MiB window), by the piece while the window holds it,
// by what the window still holds, and not at all once that is under a
// MinPiece (the path then takes pieces, each a stream of its own);
// elsewhere (a near path, or a far one whose round trip is its queue's)
// by the whole piece.
func TestExtension(t *testing.T) {
	const kib = 1 << 10
	far := stripesched.Path{Rate: 8.1e6, RTT: 130 * time.Millisecond} // 1.05 MB per round trip
	near := stripesched.Path{Rate: 10e6, RTT: 15 * time.Millisecond}  // 150 kB
	// 150 Mbit/s 20 ms away with its queue full: 1.3 MB per smoothed
	// round trip, 375 kB per least one (the matrix's 10 : 1 fast path).
	queued := stripesched.Path{Rate: 18.75e6, RTT: 70 * time.Millisecond}
	cases := []struct {
		name          string
		pin           int
		swiftest      bool
		own           stripesched.Path
		minRTT        time.Duration // 0: own.RTT
		window        int64
		cutAt, origAt int64 // where the original stops; what it has given
		size, want    int64
	}{
		{"no window known", 0, true, far, 0, 0, 900 * kib, 0, 512 * kib, 512 * kib},
		{"the window holds the piece", 0, true, far, 0, 1024 * kib, 256 * kib, 0, 512 * kib, 512 * kib},
		{"the window holds part of it", 0, true, far, 0, 1024 * kib, 900 * kib, 0, 512 * kib, 124 * kib},
		{"the window is full", 0, true, far, 0, 1024 * kib, 1000 * kib, 0, 512 * kib, 0},
		{"the app read some: room again", 0, true, far, 0, 1024 * kib, 1000 * kib, 500 * kib, 512 * kib, 512 * kib},
		{"a last piece under MinPiece", 0, true, far, 0, 1024 * kib, 1000 * kib, 0, 10 * kib, 10 * kib},
		{"not window-bound: a near path", 0, true, near, 0, 1024 * kib, 1000 * kib, 0, 512 * kib, 512 * kib},
		{"not window-bound: the queue's delay needs no window", 0, true, queued, 20 * time.Millisecond, 1024 * kib, 1000 * kib, 0, 512 * kib, 512 * kib},
		{"another path", 1, true, far, 0, 1024 * kib, 256 * kib, 0, 512 * kib, 0},
		{"not the swiftest", 0, false, far, 0, 1024 * kib, 256 * kib, 0, 512 * kib, 0},
	}
	for _, c := range cases {
		if c.minRTT == 0 {
			c.minRTT = c.own.RTT
		}
		w := streamWindow{bytes: c.window, minRTT: c.minRTT}
		s := &Run{from: 256 * kib, origPath: 0, cutAt: c.cutAt, next: c.cutAt, origGot: c.origAt, windows: map[int]streamWindow{0: w, 1: w}}
		if got := s.extension(c.pin, c.size, c.own, c.swiftest); got != c.want {
			t.Errorf("%s: extension %d, want %d", c.name, got, c.want)
		}
	}
}
