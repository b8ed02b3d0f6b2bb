package pcm

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestRestoredPathTakenBack: the active path, the best by 2–6 × the round
// trip of the next, is black-holed under a steady load (a 5 kB GET every
// 10 ms) for 0.25–1.5 s and restored; from 1 s after the restore most
// requests go to it again. Shorter than the stall timeout, a blackout
// fails nothing over: the requests out across it took the blackout's
// length, not the path's round trip, and those sent just after the
// restore queued behind the backlog; the selector left the path on those
// samples while the side probes kept finding its round trip unchanged.
// Before the stale-window retry (pathsel's staleRatio) nothing brought
// the path back: with main's selector (2026-11-30, -count=8) the rows
// 200 / 30 / 60 ms cut 0.25 s and 0.4 s (held-out restore/200-30-60
// without its loss) failed 8 and 7 times, 50 / 20 ms 7, 80 / 100 / 20 ms
// 3 and 60 / 25 / 150 / 90 ms once, each with 0.00 of the requests on
// the path. The other three passed there too: the 1.5 s cut fails over,
// and a path that was down comes back through its probes with no
// history; they guard that the retry leaves those ways back alone.
func TestRestoredPathTakenBack(t *testing.T) {
	for _, tc := range []struct {
		rtts []time.Duration
		best int
		cut  time.Duration
	}{
		{ms(200, 30, 60), 1, 400 * time.Millisecond},
		{ms(200, 30, 60), 1, 250 * time.Millisecond},
		{ms(50, 20), 1, 300 * time.Millisecond},
		{ms(150, 25), 1, 700 * time.Millisecond},
		{ms(80, 100, 20), 2, 250 * time.Millisecond},
		{ms(60, 25, 150, 90), 1, 400 * time.Millisecond},
		{ms(60, 15, 45, 90), 1, 800 * time.Millisecond},
		{ms(40, 120, 90), 0, 1500 * time.Millisecond},
	} {
		t.Run(fmt.Sprintf("%v/cut-%v", tc.rtts, tc.cut), func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) { restoredCase(t, tc.rtts, tc.best, tc.cut) })
		})
	}
}

// restoredCase warms a Client on rtts up, black-holes path best (where
// the warm-up must have left it) for cut, and checks the share on it
// from a second after the restore, over 4 s.
func restoredCase(t *testing.T, rtts []time.Duration, best int, cut time.Duration) {
	n := memnet.New()
	cfg := memConfig(t, n, len(rtts), Config{}, memServe(t, n, origin.Handler(nil), nil))
	for i, r := range rtts {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
	}
	c := dialConfig(t, cfg)
	base := "https://" + memServer.String()
	steadyGets(t, c, base, 3*time.Second, time.Hour, nil) // the warm-up
	if a := c.Active(); a != best {
		t.Fatalf("after the warm-up the connection is on %d, want the best path %d", a, best)
	}
	r := steadyGets(t, c, base, 500*time.Millisecond+cut+time.Second, 500*time.Millisecond, func() {
		n.SetDrop(memPath(best), true)
		time.AfterFunc(cut, func() { n.SetDrop(memPath(best), false) })
	})
	if r.failed > 0 {
		t.Errorf("blackout of path %d for %v: %d of %d requests failed: %v", best, cut, r.failed, r.sent, r.errs[0])
	}
	r = steadyGets(t, c, base, 4*time.Second, 0, func() {})
	if s := shareOn(r, best); s < mostRequests || r.failed > 0 {
		t.Errorf("from 1 s after a %v blackout of path %d: %.2f of the requests on it (per path %v), %d of %d failed; want ≥ %.2f, none failed",
			cut, best, s, r.paths, r.failed, r.sent, mostRequests)
	}
}
