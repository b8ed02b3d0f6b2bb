package pcm

import (
	"context"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

// A replay waits for the turns of every lower urgency, a fresh request for
// every turn, a replay of the lowest for none; a release lets the next go,
// twice is once, and a turn never released holds no one longer than
// turnWait stall timeouts.
func TestTurnsOrderReplays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Client{turnMoved: make(chan struct{}), cfg: Config{StallTimeout: 500 * time.Millisecond}}
		ctx := context.Background()
		t0 := c.takeTurn(&flight{urgency: 0})
		t2 := c.takeTurn(&flight{urgency: 2})
		if none := c.takeTurn(&flight{urgency: freshUrgency}); none != nil {
			t.Fatalf("a fresh request's flight took a turn")
		}
		var u2, fresh atomic.Bool
		go func() { c.awaitTurn(ctx, 2); u2.Store(true) }()
		go func() { c.awaitTurn(ctx, freshUrgency); fresh.Store(true) }()
		c.awaitTurn(ctx, 0) // nothing below urgency 0: at once
		synctest.Wait()
		if u2.Load() || fresh.Load() {
			t.Fatalf("went before the oldest replay had its stream: u=2 %v, fresh %v", u2.Load(), fresh.Load())
		}
		t0.release()
		t0.release() // no effect
		synctest.Wait()
		if !u2.Load() || fresh.Load() {
			t.Fatalf("after u=0's release: u=2 went %v (want true), fresh %v (want false)", u2.Load(), fresh.Load())
		}
		t2.release()
		synctest.Wait()
		if !fresh.Load() {
			t.Fatal("a fresh request still waits with no turn held")
		}
		(*turn)(nil).release()

		stuck := c.takeTurn(&flight{urgency: 1})
		start := time.Now()
		c.awaitTurn(ctx, freshUrgency)
		if waited := time.Since(start); waited != turnWait*c.cfg.StallTimeout {
			t.Errorf("a turn never released held a request %v, want %v", waited, turnWait*c.cfg.StallTimeout)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		c.awaitTurn(cctx, freshUrgency) // returns: its context ended
		stuck.release()
		if c.turnsHeld.Load() != 0 {
			t.Errorf("%d turns held after all were released", c.turnsHeld.Load())
		}
	})
}

// A failover's ranked flights hold the replays of higher urgencies and
// fresh requests from the failover on, before their owners take their
// turns (rankLocked); a claimed one holds until released, and one never
// claimed lapses after turnWait stall timeouts.
func TestRankedFlightsHoldTurns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Client{turnMoved: make(chan struct{}), cfg: Config{StallTimeout: 500 * time.Millisecond}}
		ctx := context.Background()
		f0, f3 := &flight{urgency: 0}, &flight{urgency: 3}
		c.mu.Lock()
		c.rankLocked([]stalledFlight{{f: f0}, {f: f3}})
		c.mu.Unlock()
		var u2, fresh atomic.Bool
		go func() { c.awaitTurn(ctx, 2); u2.Store(true) }()
		go func() { c.awaitTurn(ctx, freshUrgency); fresh.Store(true) }()
		synctest.Wait()
		if u2.Load() || fresh.Load() {
			t.Fatalf("went before the ranked u=0 replay took its turn: u=2 %v, fresh %v", u2.Load(), fresh.Load())
		}
		t0 := c.takeTurn(f0)
		synctest.Wait()
		if u2.Load() {
			t.Fatalf("u=2 went while u=0's claimed turn was held")
		}
		t0.release()
		synctest.Wait()
		if !u2.Load() || fresh.Load() {
			t.Fatalf("after u=0's release: u=2 went %v (want true), fresh %v (want false: u=3 ranked)", u2.Load(), fresh.Load())
		}
		lapse := turnWait * c.cfg.StallTimeout // from the failover, at the bubble's start
		time.Sleep(lapse - time.Millisecond)
		synctest.Wait()
		if fresh.Load() {
			t.Fatalf("a fresh request went before the unclaimed u=3 rank lapsed")
		}
		time.Sleep(time.Millisecond)
		synctest.Wait()
		if !fresh.Load() {
			t.Fatalf("the unclaimed u=3 rank held a fresh request past %v", lapse)
		}
		now := time.Now()
		c.awaitTurn(ctx, freshUrgency) // the lapse is found by the next wait, at once
		if time.Since(now) != 0 {
			t.Errorf("a fresh request after the lapse waited %v", time.Since(now))
		}
		if n := c.turnsHeld.Load(); n != 0 {
			t.Errorf("turnsHeld %d after the lapse, want 0", n)
		}
	})
}
