package pcm

import (
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
)

// TestSettlingProbeRestsNoPath: a Client on 51 / 88 / 256 ms paths with
// probes of 250 ms (what validateWait gives a 51 ms path). Its visits
// (visitPaths 2, 1, 0) move it to the 88 ms path and at once back to the
// 51 ms one; that probe, made while the server follows the move to the
// 88 ms path, goes unanswered (the 256 ms path's fails for its round
// trip). It must not rest the healthy 51 ms path (markDownLocked for
// DownBackoff): on seed 4242's gen4242/k3/2 a re-probe's return so made
// rested it through the failover that came next, which took the 256 ms
// path instead (a request of 2.4 s). Then, under a 5 kB GET every 10 ms,
// the selector asks for the 88 ms path from 1 s on and back for the 51 ms
// one returnAfter the move (a re-probe's return, which drainEvery does
// not limit). The 51 ms path must never rest, and the connection must
// end on it.
func TestSettlingProbeRestsNoPath(t *testing.T) {
	for _, returnAfter := range []time.Duration{0, 20 * time.Millisecond, 40 * time.Millisecond, 70 * time.Millisecond} {
		t.Run(returnAfter.String(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) { settlingProbeRestsNoPath(t, returnAfter) })
		})
	}
}

func settlingProbeRestsNoPath(t *testing.T, returnAfter time.Duration) {
	n := memnet.New()
	var want atomic.Int32
	c := memDial(t, n, 3, Config{Selector: wishSelector{&want}, Logf: t.Logf, ProbeTimeout: 250 * time.Millisecond})
	for i, r := range []time.Duration{51 * time.Millisecond, 88 * time.Millisecond, 256 * time.Millisecond} {
		n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
	}
	visitPaths(t, c, 2, 1, 0) // all validated; on the 51 ms path
	var rested, moved atomic.Bool
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() { // the return wish, and whether path 0 ever rests
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
			if !moved.Load() && want.Load() == 1 && c.Active() == 1 {
				moved.Store(true)
				time.AfterFunc(returnAfter, func() { want.Store(0) })
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
	if !moved.Load() {
		t.Fatalf("the connection never moved to the 88 ms path")
	}
	if rested.Load() {
		t.Errorf("the 51 ms path rested: a probe made while the move to the 88 ms path settled went unanswered")
	}
	if a := c.Active(); a != 0 {
		t.Errorf("the connection ends on path %d, not on the 51 ms path it was asked back to", a)
	}
}
