package pcm

import (
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// idleImprovesBound is how soon after an idle path becomes the best the
// default Transport (side probes on, 2 a second over the idle paths) has
// moved most requests to it: a probe of that path (each idle path is
// probed every K−1 probes, here 1 s), the probe change test's evidence
// (one probe far below its window, or two against a short one), the
// drain that moves a loaded connection, and margin. pcm/README.md
// documents it.
const idleImprovesBound = 5 * time.Second

// TestIdleImprovesThroughTransport: a path that was the worst, and so
// idle, becomes the best; Transport's side probes find it and most
// requests go there within idleImprovesBound — under a steady load that
// never leaves the connection idle, so the move needs the probes and a
// drain, not an idle moment.
func TestIdleImprovesThroughTransport(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
		// One-way delays of the client's side: path 1 best, path 2 worst.
		for i, d := range []time.Duration{8 * time.Millisecond, 2 * time.Millisecond, 30 * time.Millisecond} {
			n.SetDelay(memPath(i), d)
		}
		var rt http.RoundTripper = tr
		r := steadyGets(t, rt, base, 8*time.Second, 4*time.Second, func() {})
		if s := shareOn(r, 1); s < mostRequests || r.failed > 0 {
			t.Fatalf("before the change: %.2f on the best path 1 (per path %v), %d failed", s, r.paths, r.failed)
		}
		// Path 2, idle, becomes the best by far.
		n.SetDelay(memPath(2), 0)
		start := time.Now()
		var found time.Duration
		for found == 0 && time.Since(start) < 3*idleImprovesBound {
			r := steadyGets(t, rt, base, 500*time.Millisecond, 0, func() {})
			if shareOn(r, 2) >= mostRequests {
				found = time.Since(start)
			}
		}
		t.Logf("most requests on the improved path %v after it improved", found)
		if found == 0 || found > idleImprovesBound {
			t.Errorf("the improved idle path got most requests after %v, want within %v", found, idleImprovesBound)
		}
	})
}
