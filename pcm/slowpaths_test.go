package pcm

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestTwoCutsOnSlowPaths: two cuts 2 s apart (the active path, then the
// one the connection failed over to) on paths near 120 ms lose no request
// and cost none over 2 s plus twoCutsSlack. The first setup is the cuts table's generated
// 121 / 39 / 106 ms, the second one no table has. With a 1 s stall floor
// the longest request took 4.1–4.3 s: the requests replayed after the
// first failover had not all landed on the 106 ms path's fresh congestion
// window when the second cut came, and waited out a second stall.
func TestTwoCutsOnSlowPaths(t *testing.T) {
	for _, api := range []string{"Transport", "Client"} {
		for _, rtts := range [][]time.Duration{
			{121 * time.Millisecond, 39 * time.Millisecond, 106 * time.Millisecond},
			{110 * time.Millisecond, 45 * time.Millisecond, 95 * time.Millisecond},
		} {
			t.Run(fmt.Sprintf("%s/%v", api, rtts), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) { twoCutsCase(t, api, rtts) })
			})
		}
	}
}

// twoCutsSlack is one round trip of the slowest path: on 121 / 39 / 106
// ms the longest request took 1.6–1.96 s over 160 runs, and 2.008 s once
// in 160 under -race, as the first failover's replays landed just before
// or just after the second cut (goroutine order decides). The bound
// guards against the second stall (4.1–4.3 s before the 500 ms floor).
const twoCutsSlack = 121 * time.Millisecond

func twoCutsCase(t *testing.T, api string, rtts []time.Duration) {
	n := memnet.New()
	tr, _, base := memTransport(t, n, origin.Handler(nil), Config{})
	for i, r := range rtts {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		n.SetLink(memPath(i), 12.5e6, 256<<10)
	}
	var rt http.RoundTripper = tr
	active := func() int { return tr.origins[memServer.String()].c.Active() }
	if api == "Client" {
		c := dialConfig(t, tr.Config)
		rt, active = c, c.Active
	}
	// Warm up until the connection has settled on the best path.
	steadyGets(t, rt, base, 2*time.Second, time.Hour, nil)
	var mu sync.Mutex
	var cuts []int
	cutActive := func() {
		mu.Lock()
		defer mu.Unlock()
		p := active()
		cuts = append(cuts, p)
		n.SetDrop(memPath(p), true)
	}
	r := steadyGets(t, rt, base, 5*time.Second, 100*time.Millisecond, func() {
		cutActive()
		time.AfterFunc(2*time.Second, cutActive)
	})
	mu.Lock()
	defer mu.Unlock()
	if r.failed > 0 || r.longest > maxWait+twoCutsSlack || len(cuts) != 2 {
		t.Errorf("cuts of paths %v: %d of %d failed, longest %v; want two cuts, none failed, none over %v; errors %v",
			cuts, r.failed, r.sent, r.longest, maxWait+twoCutsSlack, firstErrs(r.errs))
	}
}
