package stripe

import (
	"context"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent/stripesched"
)

// TestEndgameCopyNotAReinjection: every byte requested, a slower path
// (1 MB/s, in order) still owing three 500 kB pieces and the fast path
// (10 MB/s) idle, the fast path copies the slower path's far piece
// (Run.unload). The copy counts as an endgame copy, with its bytes
// (Host.EndgameCopied), not as a reinjection (Host.Reinjected: pieces
// that held the app up), which tests read as proof that a cut path was
// covered: such copies end many downloads with no fault (in a scratch
// run, 10 : 2.5 MB/s on fake time with nothing cut, one or two per
// stripe).
func TestEndgameCopyNotAReinjection(t *testing.T) {
	const size = 500e3
	t0 := time.Now()
	h := &fakeHost{fetched: map[int]int64{}}
	var pieces []*piece
	for i := range int64(3) {
		pieces = append(pieces, &piece{off: i * size, end: (i+1)*size - 1, path: 1, copies: 1, running: 1, start: t0.Add(time.Duration(i) * time.Millisecond)})
	}
	s := &Run{ctx: context.Background(), host: h, next: 3 * size, end: 3 * size, pieces: pieces,
		inOrder: map[int]bool{0: true, 1: true}, queued: map[int]int64{1: 3 * size}, est: map[int]*rateEst{}}
	all := map[int]stripesched.Path{0: {RTT: 20 * time.Millisecond, Rate: 10e6}, 1: {RTT: 20 * time.Millisecond, Rate: 1e6}}
	got := s.unload(0, all[0], all, t0.Add(10*time.Millisecond))
	if got != pieces[2] || got.copies != 2 {
		t.Fatalf("unload copied %+v, want the slower path's far piece %+v, a second copy", got, pieces[2])
	}
	if h.copies != 1 || h.copyBytes != size || h.reinj != 0 {
		t.Errorf("%d endgame copies of %d bytes and %d reinjections counted, want 1 of %d bytes and 0", h.copies, h.copyBytes, h.reinj, int64(size))
	}
}
