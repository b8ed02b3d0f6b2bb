package pcm

import (
	"context"
	"slices"
	"sync"
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
		go func() { c.awaitTurn(ctx, 2, nil); u2.Store(true) }()
		go func() { c.awaitTurn(ctx, freshUrgency, nil); fresh.Store(true) }()
		c.awaitTurn(ctx, 0, nil) // nothing below urgency 0: at once
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
		c.awaitTurn(ctx, freshUrgency, nil)
		if waited := time.Since(start); waited != turnWait*c.cfg.StallTimeout {
			t.Errorf("a turn never released held a request %v, want %v", waited, turnWait*c.cfg.StallTimeout)
		}
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		c.awaitTurn(cctx, freshUrgency, nil) // returns: its context ended
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
		go func() { c.awaitTurn(ctx, 2, nil); u2.Store(true) }()
		go func() { c.awaitTurn(ctx, freshUrgency, nil); fresh.Store(true) }()
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
		c.awaitTurn(ctx, freshUrgency, nil) // the lapse is found by the next wait, at once
		if time.Since(now) != 0 {
			t.Errorf("a fresh request after the lapse waited %v", time.Since(now))
		}
		if n := c.turnsHeld.Load(); n != 0 {
			t.Errorf("turnsHeld %d after the lapse, want 0", n)
		}
	})
}

// Within an urgency, a failover's replays open their streams in its rank
// order (oldest first), whatever order their owners take their turns in:
// the replay ranked r waits while a replay ranked before r has no stream
// and has not forgone its rank (forgoRankLocked: a flight the failover
// did not end); a replay no failover ranked waits for none of its level.
func TestRankOrdersTurnsWithinUrgency(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opened   []int // ranks whose replays have their streams (release)
		forgone  []int // ranks whose flights the failover did not end
		asks     int   // the rank that asks for its turn; -1: unranked
		wantWait bool
	}{
		{"oldest", nil, nil, 0, false},
		{"second, oldest without stream", nil, nil, 1, true},
		{"second, oldest opened", []int{0}, nil, 1, false},
		{"last, a gap before it", []int{0, 2}, nil, 3, true},
		{"last, gap forgone", []int{0, 2}, []int{1}, 3, false},
		{"younger opened first", []int{3}, nil, 2, true},
		{"unranked", nil, nil, -1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := &Client{turnMoved: make(chan struct{}), cfg: Config{StallTimeout: 500 * time.Millisecond}}
				fs := make([]*flight, 4)
				ranked := make([]stalledFlight, len(fs))
				for i := range fs {
					fs[i] = &flight{urgency: 2}
					ranked[i] = stalledFlight{f: fs[i]}
				}
				c.mu.Lock()
				c.rankLocked(ranked)
				for _, r := range tc.forgone {
					c.forgoRankLocked(fs[r])
				}
				c.mu.Unlock()
				for _, r := range tc.opened {
					c.takeTurn(fs[r]).release()
				}
				asker := &flight{urgency: 2}
				if tc.asks >= 0 {
					asker = fs[tc.asks]
				}
				tn := c.takeTurn(asker)
				start := time.Now()
				c.awaitTurn(context.Background(), 2, tn)
				if waited := time.Since(start) > 0; waited != tc.wantWait {
					t.Errorf("rank %d waited %v (%v), want waiting %v", tc.asks, waited, time.Since(start), tc.wantWait)
				}
			})
		})
	}
}

// Owners that take their turns youngest first still open their streams
// oldest first, each as soon as the one ranked before it has its stream.
func TestRankedReplaysOpenOldestFirst(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &Client{turnMoved: make(chan struct{}), cfg: Config{StallTimeout: 500 * time.Millisecond}}
		start := time.Now()
		const n = 5
		fs := make([]*flight, n)
		ranked := make([]stalledFlight, n)
		for i := range fs {
			fs[i] = &flight{urgency: 3}
			ranked[i] = stalledFlight{f: fs[i]}
		}
		c.mu.Lock()
		c.rankLocked(ranked)
		c.mu.Unlock()
		var mu sync.Mutex
		var order []int
		for r := n - 1; r >= 0; r-- {
			tn := c.takeTurn(fs[r])
			go func() {
				c.awaitTurn(context.Background(), 3, tn)
				mu.Lock()
				order = append(order, r)
				mu.Unlock()
				tn.release()
			}()
			synctest.Wait() // the younger owners ask first
		}
		synctest.Wait()
		if want := []int{0, 1, 2, 3, 4}; !slices.Equal(order, want) {
			t.Errorf("streams opened in rank order %v, want %v", order, want)
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the replays waited %v for their turns", d)
		}
	})
}
