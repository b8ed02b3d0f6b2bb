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

// TestNoSampleQueuesBehindReplays: after a cut of the active path under
// steady load, no sample the selector gets on the path the connection
// failed over to measures the queue behind the requests the failover
// released: each is within twice that path's round trip. Paths of 32, 37
// and 20 ms (the 20 ms one cut) on links of 24 and 40 Mbit/s, where the
// released burst takes longer than followSettle to land. Before the
// window lasted until the burst had landed, samples sent just after
// followSettle measured 64 to 110 ms on the 32 ms path.
func TestNoSampleQueuesBehindReplays(t *testing.T) {
	for _, api := range []string{"Transport", "Client"} {
		for _, rate := range []float64{3e6, 5e6} {
			t.Run(fmt.Sprintf("%s/%.0fMbit", api, rate*8/1e6), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { backlogCase(t, api, rate) })
			})
		}
	}
}

func backlogCase(t *testing.T, api string, rate float64) {
	n := memnet.New()
	tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
	rtts := []time.Duration{32 * time.Millisecond, 37 * time.Millisecond, 20 * time.Millisecond}
	for i, r := range rtts {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		n.SetLink(memPath(i), rate, 256<<10)
	}
	var rt http.RoundTripper = tr
	active := func() int { return tr.origins[memServer.String()].c.Active() }
	if api == "Client" {
		c := dialConfig(t, tr.Config)
		rt, active = c, c.Active
	}
	// Warm up until the connection has settled on the best path.
	steadyGets(t, rt, base, 2*time.Second, time.Hour, nil)
	cut, cutAt := -1, time.Time{}
	r := steadyGets(t, rt, base, 3*time.Second, 100*time.Millisecond, func() {
		cut, cutAt = active(), time.Now()
		n.SetDrop(memPath(cut), true)
	})
	if r.failed > 0 {
		t.Fatalf("after the cut of path %d: %d of %d failed: %v", cut, r.failed, r.sent, firstErrs(r.errs))
	}
	credited, over := 0, 0
	for _, res := range r.results {
		if !res.Credited || res.Path == cut {
			continue
		}
		credited++
		if bound := 2 * rtts[res.Path]; res.TCT() > bound {
			if over++; over == 1 {
				t.Errorf("after the cut of path %d: a sample of %v on path %d (round trip %v), sent %v after the cut; want ≤ %v",
					cut, res.TCT(), res.Path, rtts[res.Path], res.Est.Sub(cutAt), bound)
			}
		}
	}
	if credited == 0 || over > 0 {
		t.Errorf("after the cut of path %d: %d of %d samples over twice their path's round trip (requests per path %v)", cut, over, credited, r.paths)
	}
}
