package pcm

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestBehindBurstKeepsBestLive: after a failover under steady load, the
// path it went to loses what it carries for a moment just after the
// failover's burst has landed, as the lossy 45 ms path of TestHeldOutCuts'
// apart300/slow-links did, and the responses sent behind the burst then
// wait for their retransmission: the requests that left meanwhile measure
// that wait, not the path, and must not make the selector leave the best
// live path. Paths of 20, 40 and 60 ms (the 20 ms one cut), the 40 ms one
// dropping everything for behindDrop from behindDropAfter after the last
// request of the burst landed. Before behindBurstLocked, 6–8 such
// requests were credited at over twice the path's round trip and the
// selector left the 40 ms path for the 60 ms one (share 0.27–0.30 on
// main, 2026-12-01; with the drop 15–25 ms after the landing and 50–70 ms
// long, 1.00 with the fix but one run at 0.81).
func TestBehindBurstKeepsBestLive(t *testing.T) {
	for _, api := range []string{"Transport", "Client"} {
		t.Run(api, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { behindCase(t, api) })
		})
	}
}

// behindDropAfter and behindDrop place the loss: it must catch the
// responses sent behind the burst in flight (the burst's own have landed).
const (
	behindDropAfter = 20 * time.Millisecond
	behindDrop      = 60 * time.Millisecond
)

// behindWait bounds the wait for the failover's burst to land: the steady
// load after the cut runs this long.
const behindWait = 4 * time.Second

func behindCase(t *testing.T, api string) {
	pastRealClock() // quic-go's loss timer in a bubble (see pastRealClock)
	rtts := []time.Duration{20 * time.Millisecond, 40 * time.Millisecond, 60 * time.Millisecond}
	n, tr, _, base := slowPaths(t, rtts)
	rt, client := overAPI(t, api, tr)
	steadyGets(t, rt, base, 2*time.Second, time.Hour, nil)
	c := client()
	if c.Active() != 0 {
		t.Fatalf("before the cut: on path %d, want the best, 0", c.Active())
	}
	dropped := make(chan time.Duration, 1)
	r := steadyGets(t, rt, base, behindWait, 100*time.Millisecond, func() {
		n.SetDrop(memPath(0), true)
		go dropAfterBurst(c, n, time.Now(), dropped)
	})
	at := <-dropped
	if at < 0 {
		t.Fatalf("no failover's burst landed within %v of the cut", behindWait)
	}
	over := 0
	for _, res := range r.results {
		if res.Credited && res.Path == 1 && res.TCT() > 2*rtts[1] {
			over++
		}
	}
	if s := shareOn(r, 1); s < mostRequests || r.failed > 0 {
		t.Errorf("path 1 dropping for %v from %v after the cut: %.2f of the requests on the best live path 1 (per path %v), %d of %d failed, %d credited samples over twice its round trip; want ≥ %.2f, none failed",
			behindDrop, at, s, r.paths, r.failed, r.sent, over, mostRequests)
	}
}

// dropAfterBurst waits for c's failover after cutAt to have moved and its
// burst to have landed, then drops what the new path carries for
// behindDrop from behindDropAfter later, and sends when the drop began:
// -1 if no burst landed within behindWait of the cut.
func dropAfterBurst(c *Client, n *memnet.Network, cutAt time.Time, dropped chan<- time.Duration) {
	for time.Since(cutAt) < behindWait {
		time.Sleep(time.Millisecond)
		c.mu.Lock()
		landed := c.lastBusySwitch.After(cutAt) && c.burstOpen == 0 && !time.Now().Before(c.burstUntil)
		to := c.active
		c.mu.Unlock()
		if landed {
			time.Sleep(behindDropAfter)
			dropped <- time.Since(cutAt)
			n.SetDrop(memPath(to), true)
			time.Sleep(behindDrop)
			n.SetDrop(memPath(to), false)
			return
		}
	}
	dropped <- -1
}
