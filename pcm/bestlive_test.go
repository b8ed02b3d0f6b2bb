package pcm

import (
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestBestLivePathUnderLoad: under a steady load that never lets the
// connection idle (a 5 kB GET every 10 ms, ~2 to 4 requests on the
// network at any time), most requests go to the best path — the middle
// one of three, neither the first nor the last configured — and, after it
// is cut, to the best live one, with none lost; for Transport and Client.
// Before drains (wantsDrainLocked) the connection stayed on the path it
// was dialled on; before a failover's burst was kept out of the samples
// (racedBusySwitchLocked) the best live path looked five times slower
// than it is and the client left it for the worst.
func TestBestLivePathUnderLoad(t *testing.T) {
	if raceEnabled {
		t.Skip("the share depends on goroutine order, which -race changes; .ci/run runs this test without -race")
	}
	for _, api := range []string{"Transport", "Client"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { bestLiveCase(t, api) })
		})
	}
}

func bestLiveCase(t *testing.T, api string) {
	n := memnet.New()
	tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
	// One-way delays of the client's side (the server's adds oneWay): path
	// 1 is best (12 ms round trip), path 2 next (18 ms), path 0 last (35).
	for i, d := range []time.Duration{25 * time.Millisecond, 2 * time.Millisecond, 8 * time.Millisecond} {
		n.SetDelay(memPath(i), d)
	}
	var rt http.RoundTripper = tr
	var stats func() Stats
	if api == "Client" {
		c := dialConfig(t, tr.Config)
		rt, stats = c, c.Stats
	}
	// Counted from 2 s into the load: the first tries are done by then.
	r := steadyGets(t, rt, base, 5*time.Second, 2*time.Second, func() {})
	if s := shareOn(r, 1); s < mostRequests || r.failed > 0 {
		t.Errorf("before any cut: %.2f of the requests on the best path 1 (per path %v), %d of %d failed; want ≥ %.2f, none failed",
			s, r.paths, r.failed, r.sent, mostRequests)
	}
	r = steadyGets(t, rt, base, 5*time.Second, 0, func() { n.SetDrop(memPath(1), true) })
	if s := shareOn(r, 2); s < mostRequests || r.failed > 0 || r.longest > maxWait {
		t.Errorf("after the cut of path 1: %.2f of the requests on the best live path 2 (per path %v), %d of %d failed, longest %v; want ≥ %.2f, none failed, none over %v",
			s, r.paths, r.failed, r.sent, r.longest, mostRequests, maxWait)
	}
	if stats != nil && stats().Pinned >= 0 {
		t.Errorf("pinned to path %d: drained switches gave false evidence", stats().Pinned)
	}
}

// mostRequests is "most requests" of the issue: more than half, with room.
const mostRequests = 0.6

// shareOn is the share of r's successful requests (from its cut on) that
// went on path p.
func shareOn(r *loadResult, p int) float64 {
	tot := 0
	for _, v := range r.paths {
		tot += v
	}
	return float64(r.paths[p]) / float64(max(tot, 1))
}

// TestBestLiveAfterBurstyStart: a Transport dials when the first request
// asks, so a load that starts at once (a 5 kB GET every 10 ms) holds its
// first requests for the handshake, and they leave together on the first
// configured path. After the active (best) path is cut and a settle time
// has passed, most requests go to the best live path — the first
// configured one — for Transport and Client, on two sets of round trips
// where the first path is neither the best nor the worst. Before the
// dial's burst was kept out of the samples (Client.heldByDial) the first
// path's window measured that burst (its mean above the worse path's),
// its probes then vouched for the window, and the Transport moved to the
// worse path at the cut and stayed there (0 of 300 requests on the best
// live path); the Client, dialled before the load, had clean samples.
func TestBestLiveAfterBurstyStart(t *testing.T) {
	for _, rtts := range [][3]time.Duration{
		{100 * time.Millisecond, 160 * time.Millisecond, 70 * time.Millisecond},
		{120 * time.Millisecond, 200 * time.Millisecond, 80 * time.Millisecond},
	} {
		for _, api := range []string{"Transport", "Client"} {
			t.Run(fmt.Sprintf("%s/%v", api, rtts), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { burstyStartCase(t, api, rtts) })
			})
		}
	}
}

// burstyStartCase runs TestBestLiveAfterBurstyStart's load through api on
// paths of round trips rtts, of which the last is the best and the first
// the best after it.
func burstyStartCase(t *testing.T, api string, rtts [3]time.Duration) {
	n := memnet.New()
	tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
	for i, r := range rtts {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
	}
	var rt http.RoundTripper = tr
	if api == "Client" {
		rt = dialConfig(t, tr.Config)
	}
	const best, bestLive = 2, 0
	steadyGets(t, rt, base, 3*time.Second, time.Hour, nil) // the start, and the warm-up
	cutThenShare(t, n, rt, base, best, bestLive)
}

// cutThenShare cuts path best of n one second into a 3 s load through rt
// and fails t if a request failed; then, over 3 s more, measured after the
// failover has settled (its replays and the burst that follows it are
// over), unless most requests went on path bestLive and none failed.
func cutThenShare(t *testing.T, n *memnet.Network, rt http.RoundTripper, base string, best, bestLive int) {
	t.Helper()
	r := steadyGets(t, rt, base, 3*time.Second, time.Second, func() { n.SetDrop(memPath(best), true) })
	if r.failed > 0 {
		t.Errorf("cut of path %d: %d of %d requests failed: %v", best, r.failed, r.sent, r.errs[0])
	}
	r = steadyGets(t, rt, base, 3*time.Second, 0, func() {})
	if s := shareOn(r, bestLive); s < mostRequests || r.failed > 0 {
		t.Errorf("after the cut of path %d: %.2f of the requests on the best live path %d (per path %v), %d of %d failed; want ≥ %.2f, none failed",
			best, s, bestLive, r.paths, r.failed, r.sent, mostRequests)
	}
}

// TestBestLiveAfterBunchedTry: a Client on round trips 150/90/110 ms, under
// a 5 kB GET every 10 ms, re-tries the 110 ms path when the load resumes
// after a pause; the switch's probe holds the requests that arrive
// meanwhile, and they leave at once while the server has not yet moved to
// the path (their responses took 112–300 ms). After the 90 ms path is cut
// and the failover has settled, most requests go to the 110 ms path.
// Before a switch that held requests was a burst (heldBurstMin), those
// responses were the path's samples, its probes vouched for the inflated
// window, the redial went to the 150 ms path, and the 110 ms path aged so
// slowly that it was never tried again (0 of 300 requests on it).
//
// The share is measured from 3 s after the cut, as in
// TestBestLiveAfterBurstyStart. Counted from 1 s after it, one CI run read
// 0.52: a switch to the 90 ms path as it was cut held the load for its
// probe, which failed, and the held requests' bunch was credited to the
// 110 ms path (TestNoSampleAfterFailedSwitch guards that now).
func TestBestLiveAfterBunchedTry(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
		rtts := []time.Duration{150 * time.Millisecond, 90 * time.Millisecond, 110 * time.Millisecond}
		for i, r := range rtts {
			n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		}
		c := dialConfig(t, tr.Config)
		const best, bestLive = 1, 2
		steadyGets(t, c, base, 3*time.Second, time.Hour, nil) // the warm-up
		steadyGets(t, c, base, 3*time.Second, time.Hour, nil) // the bunched try
		cutThenShare(t, n, c, base, best, bestLive)
	})
}
