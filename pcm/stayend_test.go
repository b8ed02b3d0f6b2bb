package pcm

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/hetquic/hetquic/emu/memnet"
	"github.com/hetquic/hetquic/origin"
)

// TestStayEndsForReturnedBest: a failover's stay ends once its burst has
// landed when the failover's own rule (firstChoiceLocked) would now choose
// another path: the best path, resting when the active one was cut, came
// back during the burst. A Client on round trips 160 / 110 / 70 ms under a
// 5 kB GET every 10 ms is on the 110 ms path with the 70 ms one resting
// (as after a lost probe: markDownLocked); the 110 ms path is cut, the
// failover lands on the 160 ms one, and the 70 ms one is back 40 ms
// later. Most requests made within afterLanding of the burst's landing go
// to the 70 ms path. When the stay held until the slow path's first
// credited sample, it held them on the 160 ms path for about one more of
// its round trips (TestHeldOutCuts' gen3721/k4/0 read share 0.49 in about
// 1 run in 50 so).
// afterLanding is the window after a failover's burst has landed in which
// TestStayEndsForReturnedBest counts requests: two round trips of its
// slow path, so that a stay held for that path's first sample (a round
// trip at least, queued behind the burst) keeps about half of it there.
const afterLanding = 2 * 160 * time.Millisecond

func TestStayEndsForReturnedBest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		n := memnet.New()
		tr, _, base := memTransport(t, n, origin.Handler(nil), Config{Logf: t.Logf})
		for i, r := range []time.Duration{160 * time.Millisecond, 110 * time.Millisecond, 70 * time.Millisecond} {
			n.SetDelay(memPath(i), r-oneWay) // the server's side adds oneWay
		}
		c := dialConfig(t, tr.Config)
		const slow, cut, best = 0, 1, 2
		steadyGets(t, c, base, 3*time.Second, time.Hour, nil) // the warm-up
		if _, err := c.GetOn(context.Background(), cut, "/bytes/10", nil); err != nil {
			t.Fatal(err)
		}
		c.mu.Lock()
		c.markDownLocked(best)
		c.mu.Unlock()
		rested := time.Now()
		var m *failoverMoments
		r := steadyGets(t, c, base, 4*time.Second, 1500*time.Millisecond, func() {
			n.SetDrop(memPath(cut), true)
			m = watchFailover(c, slow, best)
		})
		back, landed := m.stop()
		if back.IsZero() || landed.IsZero() || back.After(landed) {
			t.Fatalf("want the best path back before the failover's burst landed: moved to the slow path %v, back %v, landed %v after the rest",
				m.moved.Sub(rested), back.Sub(rested), landed.Sub(rested))
		}
		if r.failed > 0 {
			t.Errorf("%d of %d requests failed: %v", r.failed, r.sent, r.errs[0])
		}
		w := &loadResult{paths: map[int]int{}}
		for _, res := range r.results {
			if !res.Start.Before(landed) && res.Start.Before(landed.Add(afterLanding)) {
				w.paths[res.Path]++
			}
		}
		if s := shareOn(w, best); s < mostRequests {
			t.Errorf("requests made within %v after the failover's burst landed (best path back %v before it): %.2f on the best path %d (per path %v), want ≥ %.2f",
				afterLanding, landed.Sub(back), s, best, w.paths, mostRequests)
		}
	})
}

// failoverMoments are the moments of TestStayEndsForReturnedBest's
// failover, as a watcher polling the client every millisecond from the
// cut saw them:
// the connection on the slow path, the best path back from its rest, and
// the failover's burst landed (stayAfterFailover's first condition over).
type failoverMoments struct {
	moved, back, landed time.Time
	quit, done          chan struct{}
}

// watchFailover polls c until stop for the moments of a failover to path
// slow while path best rests.
func watchFailover(c *Client, slow, best int) *failoverMoments {
	m := &failoverMoments{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			select {
			case <-m.quit:
				return
			case <-time.After(time.Millisecond):
			}
			c.mu.Lock()
			now := time.Now()
			if m.back.IsZero() && !c.paths[best].down {
				m.back = now
			}
			if m.moved.IsZero() && c.active == slow {
				m.moved = now
			}
			if !m.moved.IsZero() && m.landed.IsZero() && !c.failingOver && !c.burstLandingLocked(now) {
				m.landed = now
			}
			c.mu.Unlock()
		}
	}()
	return m
}

// stop ends the watch and says when the best path came back and when the
// burst landed (zero: not seen).
func (m *failoverMoments) stop() (back, landed time.Time) {
	close(m.quit)
	<-m.done
	return m.back, m.landed
}
