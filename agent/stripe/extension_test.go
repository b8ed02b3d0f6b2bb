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
// elsewhere by the whole piece.
func TestExtension(t *testing.T) {
	const kib = 1 << 10
	far := stripesched.Path{Rate: 8.1e6, RTT: 130 * time.Millisecond} // 1.05 MB per round trip
	near := stripesched.Path{Rate: 10e6, RTT: 15 * time.Millisecond}  // 150 kB
	cases := []struct {
		name          string
		pin           int
		swiftest      bool
		own           stripesched.Path
		window        int64
		cutAt, origAt int64 // where the original stops; what it has given
		size, want    int64
	}{
		{"no window known", 0, true, far, 0, 900 * kib, 0, 512 * kib, 512 * kib},
		{"the window holds the piece", 0, true, far, 1024 * kib, 256 * kib, 0, 512 * kib, 512 * kib},
		{"the window holds part of it", 0, true, far, 1024 * kib, 900 * kib, 0, 512 * kib, 124 * kib},
		{"the window is full", 0, true, far, 1024 * kib, 1000 * kib, 0, 512 * kib, 0},
		{"the app read some: room again", 0, true, far, 1024 * kib, 1000 * kib, 500 * kib, 512 * kib, 512 * kib},
		{"a last piece under MinPiece", 0, true, far, 1024 * kib, 1000 * kib, 0, 10 * kib, 10 * kib},
		{"not window-bound: a near path", 0, true, near, 1024 * kib, 1000 * kib, 0, 512 * kib, 512 * kib},
		{"another path", 1, true, far, 1024 * kib, 256 * kib, 0, 512 * kib, 0},
		{"not the swiftest", 0, false, far, 1024 * kib, 256 * kib, 0, 512 * kib, 0},
	}
	for _, c := range cases {
		s := &Run{from: 256 * kib, origPath: 0, cutAt: c.cutAt, next: c.cutAt, origGot: c.origAt, windows: map[int]int64{0: c.window, 1: c.window}}
		if got := s.extension(c.pin, c.size, c.own, c.swiftest); got != c.want {
			t.Errorf("%s: extension %d, want %d", c.name, got, c.want)
		}
	}
}
