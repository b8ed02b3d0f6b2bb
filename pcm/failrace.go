package pcm

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"
)

// failoverLocked moves the connection off path failed, which stalled, and
// reports whether it did and which paths it probed in vain. The migration
// (moveAwayLocked) and a new connection race, as RFC 8305 races
// connection attempts: a redial over the live paths (raceDial) starts
// with the migration, and whichever completes first wins. A migration
// needs the server to answer a probe on the new path, which it cannot
// when the connection IDs it would answer with, or the client's
// retirements that would free them, went down the dead path; the probe
// then runs out its deadline. Waiting out that deadline before dialling
// cost a request 3.1 s where the bound is 2 s (TestTwoCutsOnSlowPaths,
// 110 / 130 / 150 ms: the second cut came while the client retired two
// paths on the path being cut). The redial gets no head start (RFC 8305
// gives one of 250 ms, dialStagger): with it the new connection was ready
// 360 ms after the stall on those paths, and the backlog the stall had
// held (about 150 requests) had not drained on its fresh congestion
// window when the second cut came, 0.5 s later (3.6–4.1 s for the
// longest request at a first cut 300 ms into the load). A failover is
// rare, and the handshake it wastes when the migration wins is one round
// trip and a few kB, closed at once. With anew (creditShortLocked) the
// new connection is taken without a migration, unless it fails.
// lockSwitch is held, and c.mu, released while waiting.
// early is the new connection the detector began to dial at its poke
// (earlyRedialLocked), or nil: with anew it is the one taken; otherwise
// it is abandoned, and the redial starts here, raced with the migration.
// Until the connection moves, the failover listens for failed's answer
// (a server that did not run: serverSilentLocked says what it does), a
// PTO of failed (pto) after the new connection when that was slow.
func (c *Client) failoverLocked(ctx context.Context, failed int, anew bool, early *redial, pto time.Duration) (moved bool, unanswered []probed) {
	if early != nil && !anew {
		early.abandon()
		early = nil
	}
	if c.multi != nil {
		return c.moveAwayLocked(ctx, failed) // rebind mode has one socket: nothing to dial alongside
	}
	mctx, stopMigration := context.WithCancel(ctx)
	defer stopMigration()
	dial := early
	if dial == nil {
		dial = c.startRedialLocked(stopMigration, c.firstChoiceLocked(failed))
	}
	if anew {
		c.cfg.Logf("pcm: more requests to send again than half the streams the server allows: taking a new connection")
		if c.redialLocked(dial) {
			return true, nil
		}
		return c.moveAwayLocked(ctx, failed)
	}
	heard := c.heard()
	if c.backToServersPathLocked(mctx, failed) {
		if c.heardSinceLocked(heard, dial) {
			dial.abandon()
		} else {
			c.redialLocked(dial) // when it fails, the connection stays where the server sent last
		}
		return true, nil
	}
	unwatch := c.stopWhenAnswered(failed, stopMigration)
	moved, unanswered = c.moveAwayLocked(mctx, failed)
	unwatch()
	if moved {
		dial.abandon()
		return true, nil
	}
	if c.serverSilentLocked(failed, dial, pto) {
		dial.abandon()
		return true, nil
	}
	c.cfg.Logf("pcm: no other path validates; taking a new connection")
	moved = c.redialLocked(dial)
	if moved {
		c.restUnansweredLocked(unanswered)
	}
	return moved, unanswered
}

// firstChoiceLocked is the path a failover tries first, its migration
// (moveAwayLocked) and its redial alike: the live path other than failed
// of the lowest round trip measured (knownRTT: the start-up sweep probes
// every idle path, the connection measured those it left), or the
// selector's choice when no live path has been measured (-1: none). Not
// the selector's choice when something is known: right after a cut it
// explores (it returns a path it has no sample of first), and the
// connection then carried the requests on the slowest path until the
// selector asked for a better one: on TestHeldOutCuts' tenfold row
// (250 / 25 / 300 ms, the 25 ms one cut) the failover's new connection
// took the 300 ms path, and the selector first asked for the 250 ms one
// 2.3 s later. A failover exploits what is known; the selector chooses
// again once its burst has landed (stayAfterFailover). Dialled in the
// configured order, a redial took the first path, whatever its round
// trip. A path whose side probe is late (probeLate) comes after those
// whose is not, whatever its round trip. c.mu is held.
func (c *Client) firstChoiceLocked(failed int) int {
	best, bestLate := -1, false
	now := c.cfg.Now()
	for i, ps := range c.paths {
		if i == failed || ps.down || ps.removed || ps.knownRTT <= 0 {
			continue
		}
		late := ps.probeLate(now)
		if best < 0 || !late && bestLate || late == bestLate && ps.knownRTT < c.paths[best].knownRTT {
			best, bestLate = i, late
		}
	}
	if best >= 0 {
		return best
	}
	c.selMu.Lock()
	defer c.selMu.Unlock()
	p, err := c.sel.Choose()
	if err != nil {
		return -1
	}
	return int(p)
}

// probeLate says that a side probe of the path has been out, unanswered,
// for more than probeLateRTTs of its known round trip at now: its
// knownRTT is older than a question it is not answering. A path can die
// while the connection is elsewhere and nothing but its probe would show
// it: on TestHeldOutCuts' apart300/120-150-110 row (the 120 ms path cut
// 15 ms before the connection left it, the 110 ms one it went to cut
// 300 ms later) the failover ranked the dead path first on the 120 ms the
// connection measured as it left, its probe out for 355 ms, and its
// redial lost a dialStagger there before the 150 ms path won (longest
// request 1.70–1.78 s, against 1.45 s before knownRTT). The probe's own
// timeout (Probes.Timeout, 1 s) comes too late for a failover.
func (ps *pathState) probeLate(now time.Time) bool {
	return !ps.probe.out.IsZero() && now.Sub(ps.probe.out) > probeLateRTTs*ps.knownRTT
}

// probeLateRTTs: a probe's answer is due one round trip after it left
// (the side connections stay open), and as much again is room for the
// server's and the host's delays. Too tight a bound costs little: the
// failover tries a live path one place later, where a dead path ranked
// first costs a dialStagger or a validation's wait.
const probeLateRTTs = 2

// creditShortLocked says that a migrated connection could not send
// again at once the replays requests a failover ends: they would wait
// for stream credit.
// Each request a failover ends holds one of the server's streams
// (initial_max_streams_bidi, which a server keeps as its bound on open
// streams) until the server has learned of its end on the new path and
// had its own RESET_STREAM acknowledged, two round trips after the move;
// so when the ended requests are more than half the bound, they and
// their replays need more streams than it allows, and the replays beyond
// it wait those two round trips. A new connection starts with the whole
// bound, and its handshake takes the one round trip the migration's probe
// takes. On TestTwoCutsOnSlowPaths (Transport 180 / 120 / 140 ms, the cut
// 900 ms into the load, 370 ms after a move under load) about 140
// replays waited 150–430 ms for a stream after the migration (a trace,
// not committed). The new connection drops what the migration would
// have carried along: response bodies in the caller's hands, not being
// read (Client.RoundTrip says what becomes of them). A bound not known
// yet (0) keeps the migration.
func (c *Client) creditShortLocked(replays int) bool {
	bound := c.s().moves.peerMaxStreams()
	return bound > 0 && int64(replays) > bound/2
}

// earlyRedialLocked starts, as the detector pokes path p, the new
// connection a failover of p would take (creditShortLocked: more
// requests waiting on p than half the server's stream bound), and
// returns it, or nil when the failover would migrate. Begun at the
// verdict, the handshake added a round trip of the best live path after
// the stall's silence: on TestHeldOutCuts' gen5150/k2/1 row (210 / 214 ms,
// the active 210 ms path cut 575 ms after a move under load, about 100
// requests waiting) the new connection was up 245 ms after the verdict,
// and the longest request took 2.27–2.36 s. The poke comes one ackWait
// (two PTOs) before the verdict, so the handshake is done by then on any
// live path not much slower than p. When the poke is answered, the
// detector abandons it: a handshake (one round trip, a few kB) per poke
// of a connection holding that many requests, on a server slow to
// answer them. c.mu is held.
func (c *Client) earlyRedialLocked(p int) *redial {
	if c.multi != nil || c.closed || c.afterFailover.Load() {
		return nil
	}
	n := 0
	for f := range c.flights {
		if f.path == p {
			n++
		}
	}
	if !c.creditShortLocked(n) {
		return nil
	}
	return c.startRedialLocked(func() {}, c.firstChoiceLocked(p))
}

// cutShortLocked says that a failover's probe of path p, sent at sent,
// was stopped before its answer was due: ctx, the migration's, ended (a
// redial won the race, or the connection ended) before the probe had been
// out probeLateRTTs of the path's known round trip. Such a probe says
// nothing of its path, and the path is not counted unanswered
// (restUnansweredLocked). The redial that won often lands on the very
// path the migration was probing, which then stays live anyway; when it
// landed on another, the path probed rested, healthy
// (TestRedialElsewhereRestsNoCutShortPath). A probe
// stopped late counts as the side probes' late answer does (probeLate): a
// path cut together with the failed one, probed first, loses the race to
// a redial on a slower live path, and left live it would hold the
// requests of the selector's next switch to it for a validation's wait.
// c.mu is held.
func (c *Client) cutShortLocked(ctx context.Context, p int, sent time.Time) bool {
	return ctx.Err() != nil && c.cfg.Now().Sub(sent) <= probeLateRTTs*c.paths[p].knownRTT
}

// heardSinceLocked pokes the server and waits until it acknowledges
// something new (Client.heard passes heard), and reports whether it did
// before dial ended. It proves a move without a probe
// (backToServersPathLocked): that move bets that the server has not yet
// followed the client to the path that failed, and loses when the
// client's packets on that path reached the server just before the cut.
// The server then sends down the dead path, and the client, moved back
// without a probe, waited a whole stall timeout to find out: on
// TestTwoCutsOnSlowPaths (110 / 130 / 150 ms, the first cut 160 ms into
// the load, 10 ms after a move to the 150 ms path) the longest request
// took 3.6 s. Until the server answers, the redial goes on; if its
// connection comes first, the failover takes it. A move that works
// costs the held requests a round trip of the path; the redial's
// handshake is closed (abandon). lockSwitch is held, and c.mu, released
// while waiting.
func (c *Client) heardSinceLocked(heard uint64, dial *redial) bool {
	c.poke()
	return c.beforeDialLocked(func() bool { return c.heard() != heard }, dial)
}

// beforeDialLocked waits until ok, and reports whether it came before
// dial ended. c.mu is held, and released while waiting.
func (c *Client) beforeDialLocked(ok func() bool, dial *redial) bool {
	c.mu.Unlock()
	defer c.mu.Lock()
	t := time.NewTicker(heardPoll)
	defer t.Stop()
	for !ok() {
		select {
		case res := <-dial.done:
			// For redialLocked. Not sent back on done: nothing would
			// receive it (TestNonReplayableFailsNamingPath hung there
			// once the redial dialled the best path first and finished
			// before the server was heard).
			dial.early = &res
			return false
		case <-t.C:
		}
	}
	return true
}

// heardPoll is how often heardSinceLocked looks for the server's ACK: a
// small share of the round trip it waits for (tens of milliseconds on
// the paths it matters on); quic-go offers no event to wait on.
const heardPoll = 5 * time.Millisecond

// redial is a new connection dialled alongside a failover's migration.
// Its result goes to the failover's wait, or, once the failover has
// abandoned it, is closed on the dial's goroutine (not under c.mu, where
// abandon is called).
type redial struct {
	cancel  context.CancelFunc
	done    chan redialResult
	dropped chan struct{} // closed by abandon
	// early is the result heardSinceLocked took from done before wait.
	early *redialResult
	ready atomic.Bool // its connection is up
}

type redialResult struct {
	sess *session
	won  int
	err  error
	took time.Duration // from the dial's start until the connection was up
}

// slow says that the new connection came up later than a handshake on
// the path it won explains: more than probeLateRTTs of that path's
// known round trip (the bound a side probe's answer has: probeLate), or
// of guess when it has none, after its dial began. Its server did not
// answer at once on that path either (serverSilentLocked).
func (r *redialResult) slow(paths []*pathState, guess time.Duration) bool {
	if r.err != nil || r.won < 0 || r.won >= len(paths) {
		return false
	}
	rtt := cmp.Or(paths[r.won].knownRTT, guess)
	return r.took > probeLateRTTs*rtt
}

// startRedialLocked starts the redial of a failover: raced over the live
// paths as Dial races them (dialStagger apart, the paths that are down
// last), path first (≥ 0) ahead of them. won is called when a new
// connection is up. c.mu is held. The dial runs on a goroutine of c.bg,
// which Close waits for (the client's end cancels the dial); it starts
// only while the client is not closed, which c.mu orders before Close's
// wait. The failover ends every redial it starts with wait or abandon.
func (c *Client) startRedialLocked(won func(), first int) *redial {
	ctx, cancel := context.WithCancel(c.life)
	r := &redial{cancel: cancel, done: make(chan redialResult), dropped: make(chan struct{})}
	if c.closed {
		cancel()
		r.done = make(chan redialResult, 1)
		r.done <- redialResult{err: errors.New("pcm: closed: no redial")}
		return r
	}
	avoid := map[string]bool{}
	for _, ps := range c.paths {
		if ps.down {
			avoid[ps.Name] = true
		}
	}
	paths := c.paths
	order := dialOrder(paths, avoid)
	if first >= 0 {
		order = append([]int{first}, slices.DeleteFunc(order, func(i int) bool { return i == first })...)
	}
	start := time.Now()
	c.bg.Go(func() {
		sess, p, err := c.raceDial(ctx, paths, order)
		if err == nil {
			r.ready.Store(true)
			won()
		}
		res := redialResult{sess: sess, won: p, err: err, took: time.Since(start)}
		select {
		case r.done <- res:
		case <-r.dropped:
			if err == nil {
				sess.conn.CloseWithError(0, "the failover migrated the connection")
				closeDial(sess)
			}
		}
	})
	return r
}

// wait returns the redial's result.
func (r *redial) wait() (*session, int, error) {
	if r.early == nil {
		res := <-r.done
		r.early = &res
	}
	res := *r.early
	r.cancel()
	return res.sess, res.won, res.err
}

// abandon ends a redial the migration made useless; the connection it
// made, if any, is closed as its dial ends.
func (r *redial) abandon() {
	r.cancel()
	close(r.dropped)
}
