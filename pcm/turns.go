package pcm

import (
	"context"
	"time"
)

// Replays open their streams oldest first. A failover ends every request
// waiting on the stalled path, and a server grants a limited number of
// streams at once (MAX_STREAMS; quic-go's http3.Server 100): after a
// migration the ended streams hold the server's credit until it has
// learned of their end on the new path and had its RESET_STREAM frames
// acknowledged, two round trips, and a failover with more replays than
// free credit has them wait in quic-go's queue for a stream, which serves
// whoever asked first — the order in which the replaying goroutines woke,
// not their age. A trace of TestTwoCutsOnSlowPaths (Transport 180 / 120 /
// 140 ms, cut at 900 ms) had about 140 replays wait 150–430 ms for a
// stream after the move, some of the oldest among the last. The urgencies
// (replayUrgencyOf) order the server's answers, not this queue.
//
// So a replay takes a turn (takeTurn) when its flight ends, at its
// failover's urgency, and waits before its next attempt (awaitTurn) until
// every replay of a lower urgency has its stream (or gave up: release); a
// fresh request waits until every replay has. Within an urgency the
// replays of one failover open their streams in its rank order (oldest
// first, rankReplaysLocked): the server sends the responses of one
// non-incremental urgency in stream order, so that order decides which
// request of a level finishes in the new path's first round trip. The
// wait comes
// before the attempt takes off (begin): a waiting request holds no flight,
// so no switch or drain waits for it while it waits for them.
type turn struct {
	c     *Client
	level int8 // the replay's urgency (replayUrgencyOf)
	held  bool // counted in c.turns, under c.mu
	// gen and rank: the failover (c.rankGen) that ranked the replay and
	// its place there (0: the oldest); gen 0 when none did.
	gen  uint64
	rank int
}

// turnWait bounds a wait for a turn as a multiple of the stall timeout:
// the order is a help, never a hold. A replay that has not opened its
// stream after that long waits on a connection that is stalling again,
// and that failover ranks what still waits anew.
const turnWait = 1

// takeTurn returns f's replay's turn, at the urgency its failover gave it,
// counted until released; nil (no turn: its replay waits for none) when
// no failover ranked f.
func (c *Client) takeTurn(f *flight) *turn {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.urgency >= freshUrgency {
		return nil
	}
	t := &turn{c: c, level: f.urgency, held: true}
	if f.ranked != 0 && f.ranked == c.rankGen && c.ranked[f.urgency] > 0 {
		c.ranked[f.urgency]--
		c.turnsHeld.Add(-1)
		t.gen, t.rank = f.ranked, f.rank
	}
	f.ranked = 0
	c.turns[f.urgency]++
	c.turnsHeld.Add(1)
	return t
}

// forgoRank ends the rank of f, whose owner will not replay it (its
// request ended, or its body had every byte): see forgoRankLocked.
// Without replays (every request that ends calls it) it costs an atomic
// load: an unclaimed rank counts in turnsHeld.
func (c *Client) forgoRank(f *flight) {
	if c.turnsHeld.Load() == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.forgoRankLocked(f)
}

// forgoRankLocked ends the rank of f, which no replay will claim (its
// failover did not end it: a body read that got data meanwhile; or its
// owner gave up): the replays ranked after it need not wait for its
// lapse. No effect once its replay took its turn. Under c.mu.
func (c *Client) forgoRankLocked(f *flight) {
	if f.ranked == 0 || f.ranked != c.rankGen || c.ranked[f.urgency] == 0 {
		return
	}
	c.ranked[f.urgency]--
	c.turnsHeld.Add(-1)
	f.ranked = 0
	c.rankOpenLocked(f.rank)
	c.turnsMovedLocked()
}

// rankOpenLocked marks the replay ranked r as having its stream (or
// none to ask for) and moves c.rankNext past the ranks all open.
// Under c.mu.
func (c *Client) rankOpenLocked(r int) {
	c.rankOpen[r] = true
	for c.rankNext < len(c.rankOpen) && c.rankOpen[c.rankNext] {
		c.rankNext++
	}
}

// release says t's replay has its stream, or will not ask for one; the
// replays behind it may go. It may be called more than once, and on nil.
func (t *turn) release() {
	if t == nil {
		return
	}
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if !t.held {
		return
	}
	t.held = false
	c.turns[t.level]--
	c.turnsHeld.Add(-1)
	if t.gen != 0 && t.gen == c.rankGen {
		c.rankOpenLocked(t.rank)
	}
	c.turnsMovedLocked()
}

// turnsMovedLocked wakes the replays that wait for a turn (awaitTurn):
// the turns ahead of them changed. Under c.mu.
func (c *Client) turnsMovedLocked() {
	close(c.turnMoved)
	c.turnMoved = make(chan struct{})
}

// rankLocked counts a failover's ranked flights (stalled) as replays
// ahead of the replays of higher urgencies and of fresh requests from
// the failover on, before their owners take their turns: a turn taken
// only when the owner next runs left the order to the scheduler. On
// TestHeldOutCuts' gen5150/k2/1 row (Transport, 210 / 214 ms, about 125
// requests ended, the new connection up at the verdict) body reads of
// urgency 1–3 asked for their rest 0.9 s after the failover, behind
// replays of urgency 4 whose owners had woken first, and the longest
// request took 2.59 s in one run of four (1.91–2.06 s in the others).
// A flight whose owner never replays it (its request ended, or its body
// had all its bytes) is never claimed: the counts lapse turnWait stall
// timeouts after the failover, as a wait for a turn does (awaitTurn).
// Under c.mu.
func (c *Client) rankLocked(stalled []stalledFlight) {
	c.dropRankedLocked()
	c.rankGen++
	c.rankedUntil = time.Now().Add(turnWait * c.cfg.StallTimeout)
	c.rankOpen, c.rankNext = make([]bool, len(stalled)), 0
	for i, s := range stalled {
		s.f.ranked, s.f.rank = c.rankGen, i
		c.ranked[s.f.urgency]++
	}
	c.turnsHeld.Add(int32(len(stalled)))
}

// dropRankedLocked ends the counts of rankLocked not yet claimed.
// Under c.mu.
func (c *Client) dropRankedLocked() {
	n := 0
	for i := range c.ranked {
		n += c.ranked[i]
		c.ranked[i] = 0
	}
	c.rankNext = len(c.rankOpen) // the lapsed ranks hold no one
	if n > 0 {
		c.turnsHeld.Add(int32(-n))
		c.turnsMovedLocked()
	}
}

// awaitTurn waits until no replay of an urgency below level holds a
// turn (level freshUrgency: no replay at all) and, for a replay's turn
// t, every replay its failover ranked before t has its stream; or until
// ctx ends, or turnWait stall timeouts pass. Without replays it costs
// an atomic load.
func (c *Client) awaitTurn(ctx context.Context, level int8, t *turn) {
	if c.turnsHeld.Load() == 0 {
		return
	}
	var timeout <-chan time.Time
	for {
		c.mu.Lock()
		if !time.Now().Before(c.rankedUntil) {
			c.dropRankedLocked()
		}
		ahead := 0
		for i, n := range c.turns[:level] {
			ahead += n + c.ranked[i]
		}
		if t != nil && t.gen != 0 && t.gen == c.rankGen && t.rank > c.rankNext {
			ahead++ // an older replay of its failover has no stream yet
		}
		moved := c.turnMoved
		c.mu.Unlock()
		if ahead == 0 {
			return
		}
		if timeout == nil {
			tm := time.NewTimer(turnWait * c.cfg.StallTimeout)
			defer tm.Stop()
			timeout = tm.C
		}
		select {
		case <-moved:
		case <-ctx.Done():
			return
		case <-timeout:
			return
		}
	}
}
