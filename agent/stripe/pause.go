package stripe

import (
	"context"
	"sync"
	"time"

	"github.com/hetquic/hetquic/internal/pauseclock"
)

// Time the process did not run. On a loaded host the OS deschedules the
// whole process for hundreds of ms at a time (430 ms at load 15–19:
// internal/pauseclock), while the network goes on delivering into the
// socket's buffer. When the process runs again, a worker can decide
// before the readers have taken that backlog in, and every reading over
// the pause then says the paths delivered nothing: a path "stalled"
// (stripesched.Stalled), its recent rate 0 (rateEst.lately), its
// estimate down by the pause's share of its period (rateEst.got), and
// the backlog counted as still owed. Read so, the end game copied a
// slower path's far pieces, and the original's rest was moved, for
// nothing (TestPauseNoEndgameCopy, TestPauseOriginalNotMoved); on
// sockets ct-client's end-game copies came to 1.3 %, 22 % and 0.8 % of a
// 16 MB body at load 18 (ctcpu29's notes). So the stripe keeps a clock
// of its own (pauses) that ticks every pauseTick and takes a tick's
// lateness for a pause (internal/pauseclock, as pcm's stall detector
// does); its readings leave the pauses out, the bytes that come as the
// backlog after one are no part of a path's sample (rateEst.skipPause),
// and nothing is copied off a path until its backlog is in
// (rateEst.backlogged). On sockets at load
// 16–28 the matrix's halving row copied in 6 of 38 runs so, 16 of 38
// before (2026-12-01, endgame30's notes). The two share the clock's
// edge and its lateness rule; they differ in what they keep (pcm: one
// silence; here: the pauses within a window).
const (
	// pauseTick: how often the clock ticks. A pause shorter than this
	// less pauseMin goes unseen; every reading it protects spans 40 ms
	// or more (StallRounds round trips and a margin; half a DropWindow).
	pauseTick = 10 * time.Millisecond
	// pauseMin: lateness under this is the Go scheduler's, not a
	// descheduled process's, and is not a pause.
	pauseMin = 5 * time.Millisecond
	// keepPauses: the most pauses kept; older ones are forgotten (a
	// reading that old is a stall's, which a pause does not undo).
	keepPauses = 64
)

// pauses are the times the process did not run during a stripe, as its
// ticks' lateness shows them.
type pauses struct {
	mu   sync.Mutex
	last time.Time // the latest tick (or the clock's start)
	gaps []gap     // oldest first, none overlapping
}

// gap is a pause: the process did not run from from to to.
type gap struct{ from, to time.Time }

// run ticks the clock on tick until ctx ends.
func (c *pauses) run(ctx context.Context, tick pauseclock.Ticker) {
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C():
			c.tick(time.Now())
		}
	}
}

// start sets the clock's first tick at now.
func (c *pauses) start(now time.Time) {
	c.mu.Lock()
	c.last = now
	c.mu.Unlock()
}

// tick records a tick at now: a pause where it came pauseMin or more
// late.
func (c *pauses) tick(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if g, ok := c.pending(now); ok {
		c.gaps = append(c.gaps, g)
		if len(c.gaps) > keepPauses {
			c.gaps = c.gaps[1:]
		}
	}
	c.last = now
}

// pending is the pause under way at now: the next tick is pauseMin or
// more late. A worker may run before the clock's goroutine does once
// the process runs again, so the lateness counts before that tick
// comes; mu held.
func (c *pauses) pending(now time.Time) (gap, bool) {
	if c.last.IsZero() {
		return gap{}, false
	}
	if pauseclock.Late(now, c.last, pauseTick) < pauseMin {
		return gap{}, false
	}
	return gap{c.last.Add(pauseTick), now}, true
}

// all is the pauses up to now, the one under way included; mu held.
func (c *pauses) all(now time.Time) []gap {
	if g, ok := c.pending(now); ok {
		return append(c.gaps[:len(c.gaps):len(c.gaps)], g)
	}
	return c.gaps
}

// within is how long the process did not run between a and now (none
// for a nil clock: a test's stripe built without one).
func (c *pauses) within(a, now time.Time) time.Duration {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for _, g := range c.all(now) {
		if from := later(g.from, a); g.to.After(from) {
			d += g.to.Sub(from)
		}
	}
	return d
}

// back is when the window that ends at now and holds d of the time the
// process ran begins: now-d, moved back by the pauses within.
func (c *pauses) back(now time.Time, d time.Duration) time.Time {
	if c == nil {
		return now.Add(-d)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	at, left := now, d
	gaps := c.all(now)
	for i := len(gaps) - 1; i >= 0; i-- {
		g := gaps[i]
		ran := at.Sub(g.to)
		if ran >= left {
			break
		}
		left -= max(ran, 0)
		at = g.from
	}
	return at.Add(-left)
}

// latest is the latest pause that ended after since, the one under way
// included (its end now); false if none did.
func (c *pauses) latest(since, now time.Time) (gap, bool) {
	if c == nil {
		return gap{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	gaps := c.all(now)
	if len(gaps) == 0 || !gaps[len(gaps)-1].to.After(since) {
		return gap{}, false
	}
	return gaps[len(gaps)-1], true
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
