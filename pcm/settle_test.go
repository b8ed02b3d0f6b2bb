package pcm

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestNoReturnWhileSettling: a Client on 51 / 88 / 256 ms paths under a
// 5 kB GET every 10 ms, whose selector asks for the 88 ms path from 1 s on
// and back for the 51 ms one returnAfter the connection has moved (a
// re-probe's return, which drainEvery does not limit). The return must
// wait until the move has settled (followSettle): on seed 4242's
// gen4242/k3/2 a return drained and probed the 51 ms path 100–120 ms after
// a move to the 88 ms one, just as the server followed it; the probe went
// unanswered, the healthy path rested (markDownLocked) for DownBackoff, and
// the failover that came next took the 256 ms path instead (a request of
// 2.4 s). Here the return came 150–175 ms after the move and its probe
// passed, so the test checks the rule (back no sooner than followSettle's
// floor) and its purpose (the 51 ms path never rests; the connection ends
// there).
func TestNoReturnWhileSettling(t *testing.T) {
	for _, returnAfter := range []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 70 * time.Millisecond} {
		t.Run(returnAfter.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { noReturnWhileSettling(t, returnAfter) })
		})
	}
}

func noReturnWhileSettling(t *testing.T, returnAfter time.Duration) {
	n := memnet.New()
	var want atomic.Int32
	c := memDial(t, n, 3, Config{Selector: wishSelector{&want}, Logf: t.Logf})
	rtts := []time.Duration{51 * time.Millisecond, 88 * time.Millisecond, 256 * time.Millisecond}
	for i, r := range rtts {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
	}
	visitPaths(t, c, 2, 1, 0) // all validated; on the 51 ms path
	c.mu.Lock()
	for i, r := range rtts {
		// What the side probes had measured on the held-out row: a switch's
		// probe then waits validateWait (250 ms here), not ProbeTimeout.
		c.paths[i].probedRTT = r
	}
	c.mu.Unlock()
	var rested atomic.Bool
	var movedAt, backAt atomic.Int64 // fake-time nanoseconds of the move to 1 and of the return to 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the wishes, the moves, and whether path 0 ever rests
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if c.Resting()[0] {
				rested.Store(true)
			}
			now, a := time.Now().UnixNano(), c.Active()
			if movedAt.Load() == 0 && want.Load() == 1 && a == 1 {
				movedAt.Store(now)
				time.AfterFunc(returnAfter, func() { want.Store(0) })
			}
			if movedAt.Load() != 0 && backAt.Load() == 0 && a == 0 {
				backAt.Store(now)
			}
		}
	}()
	r := steadyGets(t, c, "https://"+memServer.String(), 3*time.Second, time.Second, func() { want.Store(1) })
	close(stop)
	<-watched
	if r.failed > 0 {
		t.Fatalf("%d of %d requests failed: %v", r.failed, r.sent, r.errs)
	}
	t.Logf("longest request %v, requests per path %v", r.longest, r.paths)
	if rested.Load() {
		t.Errorf("the 51 ms path rested: a return probed it while the move to the 88 ms path settled")
	}
	if movedAt.Load() == 0 || backAt.Load() == 0 {
		t.Fatalf("the connection did not move to the 88 ms path and back (ends on %d)", c.Active())
	}
	if gap := time.Duration(backAt.Load() - movedAt.Load()); gap < followSettleFloor {
		t.Errorf("back on the 51 ms path %v after the move, within followSettle (at least %v)", gap, followSettleFloor)
	}
	if a := c.Active(); a != 0 {
		t.Errorf("the connection ends on path %d, not on the 51 ms path it was asked back to", a)
	}
}
