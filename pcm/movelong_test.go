package pcm

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestMoveUnderLoadHoldsOneRoundTrip: a Client on 210 / 200 ms paths
// under a 5 kB GET every 10 ms, whose selector asks for the other path
// from 1 s on. The connection drains (the requests on the old path land,
// about a round trip) and moves; the requests that arrive meanwhile wait
// for their streams, and that wait must stay about one round trip
// (moveHoldBound), not the drain's round trip followed by the new path's
// validation. Before the drain validated the new path while it waited
// (probeEarlyLocked), they waited 400 ms.
func TestMoveUnderLoadHoldsOneRoundTrip(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		var want atomic.Int32
		c := memDial(t, n, 2, Config{Selector: wishSelector{&want}})
		const rtt0, rtt1 = 210 * time.Millisecond, 200 * time.Millisecond
		n.SetDelay(memPath(0), rtt0-oneWay) // the server's side adds oneWay
		n.SetDelay(memPath(1), rtt1-oneWay)
		visitPaths(t, c, 1, 0) // both validated; on the 210 ms path
		r := steadyGets(t, c, "https://"+memServer.String(), 3*time.Second, time.Second, func() { want.Store(1) })
		if r.failed > 0 {
			t.Fatalf("%d of %d requests failed: %v", r.failed, r.sent, r.errs)
		}
		var held time.Duration
		for _, x := range r.results {
			held = max(held, x.Est.Sub(x.Start))
		}
		t.Logf("longest hold %v, longest request %v, requests per path %v", held, r.longest, r.paths)
		if a := c.Active(); a != 1 || r.paths[1] < r.paths[0] {
			t.Fatalf("the connection is on %d, requests per path %v: it did not move to 1", a, r.paths)
		}
		if held > moveHoldBound(rtt0, rtt1) {
			t.Errorf("a request waited %v for the move, over %v: the drain and the validation took turns", held, moveHoldBound(rtt0, rtt1))
		}
	})
}

// moveHoldBound is the longest a request may wait for a move under load
// from a path of round trip from to one of round trip to: the longer of
// the two (the drain's last responses, the validation), and half of it
// more for the ACK delays and the validation's packets queueing behind
// the old path's data.
func moveHoldBound(from, to time.Duration) time.Duration {
	return max(from, to) * 3 / 2
}
