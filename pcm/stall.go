package pcm

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"time"

	"github.com/hetquic/hetquic/internal/pauseclock"
	"github.com/hetquic/hetquic/pathsel"
)

// The stall detector: one per Client, for Get, GetOn and RoundTrip alike.
// A path has stalled when the server has acknowledged nothing new while
// some request waited on the network (a flight, or a hold behind
// another's switch) for at least Config.StallTimeout, and a poke (below)
// sent in that silence has gone unacknowledged for pokeWaits probe
// timeouts (one when a new connection dialled at the poke is up first:
// verdictWait). The detector then marks the path down, cancels the flights on
// it (PathStalledError), and moves the connection to the best live path;
// the flights' owners retry what can be replayed there (Client.RoundTrip,
// GetOn) and fail the rest.
//
// "Acknowledged nothing new" (Client.heard): no ACK of a packet newer than
// those acknowledged before. Received packets are no evidence: a server
// that had not yet followed a switch when the new path died keeps
// retransmitting down the old one, at growing intervals, for seconds. A
// downloading client's ACKs carry a PING every 20 packets (quic-go), so a
// transfer is acknowledged as it goes. A healthy path whose server is slow
// to answer (a handler that thinks for seconds) is silent too, so after a
// silence of pokeAfter the detector pokes the server (poke): it sends a
// packet the server must acknowledge, and the ACK comes only through a
// path that works. The stall is declared on what the poke proves, not on
// a multiple of the RTT: its ACK is late by more than a lost packet
// explains. The waits follow the connection's own RTT estimates, so a
// queue that inflates the RTT, or jitter, stretches them as it stretches
// quic-go's own loss recovery.
// An idle connection is never poked, so it still ends at its idle timeout
// as http3.Transport's does.
//
// pto is RFC 9002's probe timeout (§6.2.1): SRTT + max(4 RTTVAR, 1 ms) +
// the peer's max_ack_delay, the time a sender gives a packet's ACK before
// it concludes that the packet or its ACK was lost. Just after a move
// quic-go reports its initial guess (100 ms, no variance) until the new
// path's first ACK: on a path slower than about 600 ms a request
// waiting in its first round trip could count as a stall (8 × SRTT had
// that limit at 800 ms).
const (
	// pokeWaits is how many PTOs a poke's ACK may take before the path
	// counts as stalled: one for the ACK itself, and one for a lost poke
	// or a lost ACK of it — quic-go sends a probe packet one PTO after
	// the poke (RFC 9002 §6.2.4), and that probe's ACK comes within one
	// more PTO (a round trip and at most max_ack_delay; at once when the
	// poke was lost and the probe arrives after a gap, RFC 9000 §13.2.1).
	pokeWaits = 2
	// pokeShare: the poke goes out after max(floor/pokeShare, one PTO)
	// of silence. Sooner than a PTO it proves nothing a request's own
	// packets would not: the silence runs from the later of the last new
	// ACK and the request's start, and any packet sent then is
	// acknowledged within a PTO on a working path. The floor's half keeps
	// a slow server on a fast path poked at most every 250 ms (a packet
	// each way), and still leaves the other half of the floor for the
	// poke's ACK (two PTOs of a path under about 60 ms), so on such paths
	// the stall comes at the floor, as before.
	pokeShare = 2
	// stallTicks is how often per stall timeout floor the detector
	// looks: the silence is counted from the tick that last saw an ACK,
	// so a stall is found up to two ticks late, and a client with
	// requests waiting costs a check per tick (an idle one none: the
	// detector sleeps). Ten: at most a fifth of the floor late, 20 cheap
	// checks a second with the default floor. With four (and a 1 s
	// floor) a cut was found 1.27 s after it; with eight, two cuts on
	// 121 / 39 / 106 ms paths cost a request 2.03 s, with ten 1.74 s
	// (TestTwoCutsOnSlowPaths): whether the first failover's replays land
	// before the second cut turns on tens of milliseconds there.
	stallTicks = 10
)

// defaultMaxAckDelay is the peer's max_ack_delay when it announced none
// (RFC 9000 §18.2) or the client cannot see it (rebind mode has no qlog
// watch to read the transport parameters from).
const defaultMaxAckDelay = 25 * time.Millisecond

// DefaultStallTimeout is Config.StallTimeout's default, the least silence
// that counts as a stall; on paths under about 60 ms the poke's wait
// (pokeWaits PTOs) ends sooner, and the floor decides. Half a second: the
// poke leaves after 250 ms, and its ACK takes one round trip plus the
// server's ack delay (25 ms by default), or one PTO more if the poke is
// lost — under 500 ms on such paths. A whole second made two cuts 2 s
// apart cost a request over 4 s on paths of 121 / 39 / 106 ms: the
// requests replayed after the first failover had not all landed on the
// 106 ms path's fresh congestion window when the second cut came, and
// waited out a second stall (TestTwoCutsOnSlowPaths).
const DefaultStallTimeout = 500 * time.Millisecond

// PathStalledError is the error of a request that was in flight on a
// path that stalled: one that could not be replayed (a body without
// GetBody, a response body already being read), or one whose retries ran
// out. Path names the path.
type PathStalledError struct {
	Path  string
	After time.Duration // the silence that counted as a stall
}

func (e *PathStalledError) Error() string {
	return fmt.Sprintf("pcm: path %s stalled: nothing acknowledged for %v", e.Path, e.After)
}

// flight is one request's wait on the network: from its send until its
// response head, and each blocked read of its body. A request whose body
// lies unread in the caller's hands waits for nothing and is no flight,
// so it holds no path (Client.begin) and cannot stall one. Both kinds
// count for the stall detector; only a wait for a response head (head)
// holds a switch (maySwitchLocked says why).
type flight struct {
	path  int
	head  bool
	burst bool // took off in a burst after a move under load (racedBusySwitchLocked)
	// bunch: it took off together with others, or behind them (behind),
	// before they had landed (bunchLocked); set under c.mu, by the next
	// flight's take-off for the bunch's first.
	bunch  *bunch
	behind bool
	since  time.Time
	// born is when the request began, before any replay of it: the
	// failover sends the oldest requests first (replayUrgency).
	born time.Time
	// urgency is the RFC 9218 urgency of the request's replay, set by the
	// failover that ended the flight (failStalled), under c.mu.
	urgency int8
	// ranked: the failover of generation c.rankGen counted f in
	// c.ranked (rankLocked) until its replay takes its turn; rank is
	// its place in that failover's order (0: the oldest).
	ranked uint64
	rank   int
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// stalled returns the PathStalledError that ended f's context, or nil.
func (f *flight) stalled() *PathStalledError {
	if f.ctx.Err() == nil {
		return nil // the common case, checked on every body read: no errors.As, which allocates
	}
	var ps *PathStalledError
	if errors.As(context.Cause(f.ctx), &ps) {
		return ps
	}
	return nil
}

// stallWaits are the detector's two waits, from the connection's RTT
// estimates now: the silence after which it pokes, and how long the
// poke's ACK may then take.
type stallWaits struct{ pokeAfter, ackWait time.Duration }

// verdictWait is how long the poke's ACK may take: ackWait, or one PTO
// once the new connection dialled at the poke (earlyRedialLocked) is up.
// The second PTO is for a lost poke; a handshake that has crossed a live
// path in the meantime, while the poke's ACK has not come back over the
// active one, is the better evidence, and waiting it out was a fifth of
// the longest request on TestHeldOutCuts' gen5150/k2/1 row (250 ms of
// 2.3 s on 210 / 214 ms paths). A poke merely lost then costs a redial
// that was not needed: the requests are replayed on the new connection,
// none fails.
func (w stallWaits) verdictWait(early *redial) time.Duration {
	if early != nil && early.ready.Load() {
		return w.ackWait / pokeWaits
	}
	return w.ackWait
}

func (c *Client) stallWaits() stallWaits {
	s := c.s()
	st := s.conn.ConnectionStats()
	pto := st.SmoothedRTT + max(ptoDeviations*stallDeviation(st), time.Millisecond) + s.moves.peerMaxAckDelay()
	return stallWaits{pokeAfter: max(c.cfg.StallTimeout/pokeShare, pto), ackWait: pokeWaits * pto}
}

// stallTimeout is the silence after which a path with flights stalls
// when the poke went out on time.
func (c *Client) stallTimeout() time.Duration {
	w := c.stallWaits()
	return max(c.cfg.StallTimeout, w.pokeAfter+w.ackWait)
}

// takeOffLocked registers a flight on the active path, under c.mu; ctx is the
// request's context, which the flight's derives from; since is when the
// request began to wait on this path (its hold, if any, included), born
// when it began at all (its first attempt).
func (c *Client) takeOffLocked(ctx context.Context, since, born time.Time) *flight {
	fctx, cancel := context.WithCancelCause(ctx)
	f := &flight{path: c.active, head: true, since: since, born: born, urgency: freshUrgency, ctx: fctx, cancel: cancel}
	c.flights[f] = struct{}{}
	c.wakeDetectorLocked()
	c.heads++
	now := c.cfg.Now()
	if now.Before(c.burstUntil) {
		f.burst = true
		c.burstOpen++
	}
	c.bunchLocked(f, now)
	return f
}

// bunch is requests that took off together, within bunchGap of the first
// of them, on no switch: the backlog of a host stall (the process
// descheduled, a collector's pause) or a caller's concurrent batch. Their
// responses queue behind each other on the path, and so do those of the
// requests that take off behind them before they have all landed: each
// measures the bunch as much as the path, and together they are one
// observation, not many. The first of them to be credited is the bunch's
// sample, the others give none (Client.credit). Measured on emu/memnet
// (TestBunchGivesOneSample): 40 requests that left at once on a 90 ms
// path took 122–126 ms and those sent behind them up to 181 ms; each was
// a sample, so one stall weighed as 40 observations of a slower path.
type bunch struct {
	sampled bool
	n       int // its members (not those behind it)
	open    int // its members waiting for their heads
}

// bunchMin is the fewest members a bunch needs to be one sample: as many
// as the shortest run pathsel's change detector tests (four samples), so
// a bunch that could pass that test alone is one sample. Smaller ones,
// such as two requests that a loaded host's timers released in the same
// millisecond, stay separate samples. Such pairs are common on real
// sockets: through the emulator at load 15–19 (hetquic pcm cuts, traced),
// with every pair a bunch the rule dropped 1–9 samples in 4 of 6 cut
// trials; with bunchMin it dropped samples in 1 of 12 (14, after two
// cuts in a row).
const bunchMin = 4

// sample says whether a credited request of bunch b gives the selector a
// sample: only the bunch's first does; a request in no bunch (nil) does.
// Under c.mu.
func (b *bunch) sample() bool {
	if b == nil || b.n < bunchMin {
		return true
	}
	if b.sampled {
		return false
	}
	b.sampled = true
	return true
}

// bunchGap is how soon after the first request of a bunch another must
// take off to be in it. A host stall's backlog leaves within microseconds
// (each request takes c.mu in turn), while a steady load spaces its
// requests by its rate; a millisecond joins the first and leaves the
// second apart up to a thousand requests a second (above that, some
// consecutive requests pair up and the selector gets fewer samples). The
// bunch is counted from its first request, not chained from request to
// request, so a fast steady load never makes one long bunch.
const bunchGap = time.Millisecond

// bunchLocked puts f in the bunch of the flight that took off before it
// when f took off within bunchGap of that bunch's first (now is f's
// take-off), or behind the latest bunch while a member of it waits for
// its head; a bunch is allocated only when its second request joins.
func (c *Client) bunchLocked(f *flight, now time.Time) {
	prev := c.lastTakeOff
	c.lastTakeOff = f
	if prev == nil || now.Sub(c.bunchStart) >= bunchGap {
		c.bunchStart = now
		if b := c.openBunch; b != nil && b.open > 0 && b.n >= bunchMin {
			f.bunch, f.behind = b, true
		}
		return
	}
	if prev.bunch == nil || prev.behind {
		prev.bunch, prev.behind = &bunch{n: 1}, false
		if _, waits := c.flights[prev]; waits && prev.head {
			prev.bunch.open++
		}
		c.openBunch = prev.bunch
	}
	f.bunch = prev.bunch
	f.bunch.n++
	f.bunch.open++
}

// bunchOf is f's bunch (bunchLocked), or nil.
func (c *Client) bunchOf(f *flight) *bunch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f.bunch
}

// hold is a request's wait for another's switch (Client.holds): a wait
// on the network too, though no stream carries it yet.
type hold struct {
	path  int
	since time.Time
}

// land ends a flight's wait (it may take off again: resume).
func (c *Client) land(f *flight) {
	c.mu.Lock()
	if _, ok := c.flights[f]; ok && f.head {
		c.heads--
		if f.bunch != nil && !f.behind {
			f.bunch.open--
		}
	}
	if f.burst {
		c.burstOpen--
		c.burstLanded = c.cfg.Now()
	}
	f.head, f.burst = false, false // what follows are body reads (resume)
	delete(c.flights, f)
	c.lastLanded = time.Now()
	if c.heads == 0 && c.drained != nil {
		close(c.drained)
		c.drained = nil
	}
	c.mu.Unlock()
}

// resume makes f wait on the network again (a blocked body read: no
// head, so it holds no switch).
func (c *Client) resume(f *flight) {
	c.mu.Lock()
	f.path, f.since, f.head = c.active, time.Now(), false // the stream moves with the connection
	c.flights[f] = struct{}{}
	c.wakeDetectorLocked()
	c.mu.Unlock()
}

// detectStalls runs for the connection's life and fails over a path that
// stalls. It reads counts of new ACKs, not per-request progress: any new
// ACK shows the path alive. With nothing to watch (idle) it sleeps until
// the code that makes some wakes it (wakeDetectorLocked): its ticks cost
// an idle three-path client 2.6–3.5 ms of CPU a second. A side probe's
// connection runs none (SideProber.side says why).
func (c *Client) detectStalls() {
	defer close(c.detected)
	every := c.cfg.StallTimeout / stallTicks
	tick := c.cfg.ticker(every)
	defer tick.Stop()
	done := c.life.Done()
	var seen uint64
	quiet := lagged{at: time.Now()}
	var pokedAt lagged // zero: no poke since the last new ACK
	var early *redial  // dialled at the poke (earlyRedialLocked), or nil
	drop := func() {
		if early != nil {
			early.abandon()
			early = nil
		}
	}
	defer drop()
	lastTick := quiet.at
	for {
		select {
		case <-done:
			return
		case <-tick.C():
		}
		now := time.Now()
		// The time the process did not run is no silence of the path
		// (internal/pauseclock says why): the waits resume where they
		// stood. A cut during a pause is still found: its silence counts
		// from the end of the pause, so the verdict comes as much later
		// as the pause lasted. On a machine at load 15-19 with -race
		// compiles beside it (2026-12-01), a stall verdict on a healthy
		// path had a silence of 670 ms whose ticks came up to 362 ms
		// apart (TestLoadCutAioquic; loadcut29's notes). What counts is
		// the ticks' net lateness (lagged).
		late := now.Sub(lastTick) - every
		quiet.tick(late)
		pokedAt.tick(late)
		lastTick = now
		if c.idle() {
			drop()
			tick.Stop()
			select {
			case <-done:
				return
			case <-c.watch:
			}
			// The silence counts from now: the flight that woke the
			// detector began about now, and nothing before it was waited
			// for.
			tick.Reset(every)
			seen, quiet, pokedAt, lastTick = c.heard(), lagged{at: time.Now()}, lagged{}, time.Now()
			continue
		}
		c.reviveRested()
		if rx := c.heard(); rx != seen {
			seen, quiet, pokedAt = rx, lagged{at: now}, lagged{}
			drop()
			continue
		}
		silence := c.silence(now, quiet.start())
		w := c.stallWaits()
		switch {
		case pokedAt.at.IsZero():
			if silence >= w.pokeAfter {
				c.poke()
				pokedAt = lagged{at: now}
				early = c.dialAtPoke()
			}
		case silence >= c.cfg.StallTimeout && now.Sub(pokedAt.start()) >= w.verdictWait(early):
			c.failStalled(c.Active(), silence, early, seen)
			// The failover's own time is no pause either.
			quiet, pokedAt, early, lastTick = lagged{at: time.Now()}, lagged{}, nil, time.Now()
		}
	}
}

// lagged is the start of one of the detector's waits (the silence, the
// poke's), moved later by the time the process did not run since: the
// net lateness of the detector's ticks, each tick's gap less its period,
// summed and never below 0. A tick that came late and the next one, back
// on the ticker's grid and so early by as much, are the scheduler's
// jitter, not a pause: the process ran meanwhile and read what came. Each
// late tick's lateness alone (pauseclock.Late) left that out too: on a
// host at load 15 it took 862 ms out of a silence whose ticks were 400 ms
// late in all, and with every other tick 45 ms late a cut was found
// 1.1 s after it instead of 0.61 s (TestStallFoundThroughJitter). A
// pause ends with the one tick it held, late by the pause: its lateness
// counts in full at the tick that comes first after it, before the reads
// of what queued meanwhile (TestNoFalseStallAfterPause).
type lagged struct {
	at  time.Time // zero: no wait
	lag time.Duration
}

// tick adds a tick's lateness over its period (negative: early).
func (l *lagged) tick(late time.Duration) { l.lag = max(l.lag+late, 0) }

// start is when the wait began, less the time the process did not run.
func (l lagged) start() time.Time { return l.at.Add(l.lag) }

// ticker is Config.newTicker's ticker, or a time.Ticker.
func (c *Config) ticker(every time.Duration) pauseclock.Ticker {
	if c.newTicker != nil {
		return c.newTicker(every)
	}
	return pauseclock.New(every)
}

// dialAtPoke is earlyRedialLocked for the active path.
func (c *Client) dialAtPoke() *redial {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.earlyRedialLocked(c.active)
}

// idle says the detector has nothing to watch: no flight, no hold, and
// no path down that a revival check should bring back (reviveRested; the
// side probes do that when they run). It takes the wake-up left by work
// that has ended since, so that the detector sleeps at once; work that
// begins after the check leaves another.
func (c *Client) idle() bool {
	select {
	case <-c.watch:
	default:
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.flights) > 0 || len(c.holds) > 0 {
		return false
	}
	for _, ps := range c.paths {
		if ps.down && !ps.removed && !c.probing {
			return false
		}
	}
	return true
}

// wakeDetectorLocked wakes the stall detector if it sleeps (idle); under
// c.mu, where the work it watches is registered. It never blocks.
func (c *Client) wakeDetectorLocked() {
	select {
	case c.watch <- struct{}{}:
	default:
	}
}

// heard counts the signs that the server hears the client: the ACKs of
// new packets (moveWatch.acks), or in rebind mode, which has no qlog
// watch, every received packet. The detector only compares two counts.
func (c *Client) heard() uint64 {
	s := c.s()
	if s.moves != nil {
		return s.moves.acks.Load()
	}
	return s.conn.ConnectionStats().PacketsReceived
}

// reservedStreamType is an HTTP/3 unidirectional stream type reserved to
// be ignored (RFC 9114 §6.2.3: 0x1f × N + 0x21, here N = 0): a server
// reads it and drops the stream, which it must not treat as an error.
const reservedStreamType = 0x21

// poke makes the server send something: a unidirectional stream of a
// reserved type, which the server acknowledges (and drops). It costs one
// of the server's unidirectional stream credits, returned when the stream
// is done, and a packet each way; a connection out of credits is not
// poked (OpenUniStream, not OpenUniStreamSync), and the detector then
// waits for the ACKs of the requests' own packets as it would for the
// poke's. That takes the credits of about a hundred pokes unanswered (a
// quic-go server grants 100 streams, HTTP/3 uses three): a dead path.
func (c *Client) poke() {
	s, err := c.s().conn.OpenUniStream()
	if err != nil {
		return
	}
	s.Write([]byte{reservedStreamType})
	s.Close()
}

// silence is how long the oldest flight or hold on the active path has
// waited with nothing heard (quiet: the last new ACK), or 0 without
// either.
func (c *Client) silence(now, quiet time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var d time.Duration
	for f := range c.flights {
		if f.path == c.active && f.ctx.Err() == nil {
			d = max(d, now.Sub(later(f.since, quiet)))
		}
	}
	for h := range c.holds {
		if h.path == c.active {
			d = max(d, now.Sub(later(h.since, quiet)))
		}
	}
	return d
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// failStalled gives up path p: the flights that were waiting on it end
// with a PathStalledError, ranked for their replays (rankReplaysLocked),
// it rests (markDownLocked), and the connection moves to the best live
// path. The flights that wait for a response head end before the move
// (no head may arrive during it: begin says why), the body reads after
// it: ending a flight resets its stream, and STOP_SENDING frames sent
// down the dead path were lost, so the server, once it followed the move,
// spent the new path's first round trips retransmitting those bodies
// before any replay's response (quic-go sends lost data before new data,
// whatever its priority). A body read that got data during the move
// waits anew there and is left alone.
//
// With no path that validates — within about a second of a switch, the
// server may hold no connection ID of the client's to answer a probe
// with, its NEW_CONNECTION_ID frames having gone down the dead path — the
// client dials a new connection (redialLocked) and the requests that can
// be replayed go there; when that fails too, the connection is closed, so
// that a Transport dials again later instead of waiting for the idle
// timeout. When p answers during the failover, the server was silent, not
// the path (below: keptLocked), and seen, the detector's count of the
// server's ACKs at its verdict, tells an answer that came just before.
func (c *Client) failStalled(p int, after time.Duration, early *redial, seen uint64) {
	ctx := c.s().conn.Context()
	owned := c.lockSwitch(ctx)
	if !owned || c.active != p || c.heard() != seen {
		// Moved meanwhile, or the poke's ACK came as the verdict was made.
		if early != nil {
			early.abandon()
		}
		c.unlockSwitch(owned)
		return
	}
	c.s().moves.awaitAnswer(p)
	cause := &PathStalledError{Path: c.paths[p].Name, After: after}
	c.failingOver, c.staySampled = true, false
	c.afterFailover.Store(true)
	stalled := c.rankReplaysLocked(p)
	// A new connection (creditShortLocked) ends every stream of the old
	// one: the body reads end now too, and their resumes take their turns
	// (awaitTurn) with the replays, not after them.
	anew := c.multi == nil && c.creditShortLocked(len(stalled))
	c.rankLocked(stalled)
	for _, s := range stalled {
		if s.f.head || anew {
			s.f.cancel(cause) // now: no response head may arrive during the move (begin says why)
		}
	}
	c.cfg.Logf("pcm: %v; failing over", cause)
	rest, pto := c.paths[p].backoff, c.stallWaits().ackWait/pokeWaits
	c.markDownLocked(p)
	old := c.s()
	moved, _ := c.failoverLocked(ctx, p, anew, early, pto)
	stayed := c.keptLocked(p, old, moved, rest, pto)
	for _, s := range stalled {
		if _, waits := c.flights[s.f]; waits && !stayed && !s.f.head && s.f.since.Equal(s.since) {
			s.f.cancel(cause)
		}
		if s.f.stalled() == nil {
			c.forgoRankLocked(s.f) // not ended: no replay will claim its rank
		}
	}
	if moved && !stayed {
		// A failover is a move under load even when the cancelled
		// flights have landed by now: the requests held meanwhile leave
		// at once, and their responses measure that burst
		// (racedBusySwitchLocked).
		c.busySwitchLocked(c.cfg.Now())
	}
	c.failingOver = false
	c.unlockSwitch(owned)
	if !moved {
		c.cfg.Logf("pcm: no other path works; closing the connection")
		old.conn.CloseWithError(0, "every path stalled")
	} else if c.s() != old {
		old.replaced.Store(cause)
		old.conn.CloseWithError(0, "every path stalled; dialled again")
		closeDial(old)
	}
}

// A server that does not run answers on no path: a loaded host that
// deschedules its process (aioquic's event loop went 0.6-0.8 s without
// running at load 15-20, loadcut29's notes), a collector's pause. Its
// silence is as long as a cut's, and the stall verdict comes; but so do
// the failover's probes of the other paths and its new connection's
// handshake go unanswered until the server runs again, and it then
// answers them all, the poke first (it came first). So the failover keeps
// listening on the path it gives up (moveWatch.awaitAnswer: the server's
// ACK, arriving there, of a packet sent there before the failover), and
// when that path answers it keeps the path:
//   - before the migration has validated another path: the migration
//     stops (stopWhenAnswered) and the connection stays (serverSilentLocked);
//   - before the new connection is up, when no path validated, or within
//     a PTO of it when its handshake took longer than its path's round
//     trip explains (a server that ran again answers both at once): it
//     stays too (serverSilentLocked), and the new connection is closed;
//   - within a PTO after the migration (the server may hold the poke's
//     ACK up to its max_ack_delay, the probe's answer it sends at once):
//     the path stays live (keepIfAnswered), and the connection where it
//     moved.
// The flights the verdict ended are sent again either way (they were
// ended before the move: begin says why); no path is given up. A path
// that was cut never answers: its failover runs as before, and waits a
// PTO more only when the new connection's handshake was slow.

// untilAnswered waits until path p answers on w (pathAnswer) and reports
// whether it did: false once stop is closed (nil: never) or end has
// passed (zero: never). It polls every heardPoll, as heardSinceLocked
// does (quic-go offers no event to wait on).
func untilAnswered(w *moveWatch, p int, stop <-chan struct{}, end time.Time) bool {
	t := time.NewTicker(heardPoll)
	defer t.Stop()
	for !w.pathAnswered(p) {
		if !end.IsZero() && !time.Now().Before(end) {
			return false
		}
		select {
		case <-stop:
			return false
		case <-t.C:
		}
	}
	return true
}

// stopWhenAnswered calls stop (it ends a failover's migration) when path
// p answers, and returns what ends the watch.
func (c *Client) stopWhenAnswered(p int, stop func()) (unwatch func()) {
	w, done := c.s().moves, make(chan struct{})
	c.bg.Go(func() {
		if untilAnswered(w, p, done, time.Time{}) {
			stop()
		}
	})
	return func() { close(done) }
}

// serverSilentLocked says that path failed answered during a failover
// that found no other path to move to, before the new connection dial
// makes was up, or within grace (a PTO of failed) after it when that
// handshake was slow (redialResult.slow; grace is its guess of a round
// trip where the path it won has none known, generous as it holds the
// ACK delay). The connection then stays on failed. lockSwitch is held,
// and c.mu, released while waiting.
func (c *Client) serverSilentLocked(failed int, dial *redial, grace time.Duration) bool {
	w := c.s().moves
	if c.beforeDialLocked(func() bool { return w.pathAnswered(failed) }, dial) {
		return true
	}
	res := dial.early
	if res == nil || !res.slow(c.paths, grace) {
		return false
	}
	c.mu.Unlock()
	defer c.mu.Lock()
	if !untilAnswered(w, failed, nil, time.Now().Add(grace)) {
		return false
	}
	res.sess.conn.CloseWithError(0, "the path the failover left answered")
	closeDial(res.sess)
	return true
}

// keepIfAnswered brings path p back from the rest a failover that moved
// off it began, when p answers within grace (a PTO of p) of the move: the
// server may hold its ACK of the poke up to its max_ack_delay (RFC 9000
// §13.2.1) while it answers the migration's probe at once. rest is p's
// backoff before the failover.
func (c *Client) keepIfAnswered(p int, rest, grace time.Duration) {
	w := c.s().moves
	c.bg.Go(func() {
		if !untilAnswered(w, p, c.life.Done(), time.Now().Add(grace)) {
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.s().moves == w {
			c.unrestLocked(p, rest)
		}
	})
}

// keptLocked keeps path p, which the failover that ended (moved: it did
// not close the connection) left on session old, live when p answered
// (stayed: the connection is on p still) or answers within pto of the
// move (keepIfAnswered); rest is p's backoff before the failover. It
// reports whether the connection stayed. c.mu is held.
func (c *Client) keptLocked(p int, old *session, moved bool, rest, pto time.Duration) (stayed bool) {
	if !moved || c.s() != old {
		return false
	}
	if c.active == p {
		c.unrestLocked(p, rest)
		return true
	}
	c.keepIfAnswered(p, rest, pto)
	return false
}

// unrestLocked undoes the failover's markDownLocked of path p, whose
// backoff was rest before it: p answered (pathAnswer). c.mu is held.
func (c *Client) unrestLocked(p int, rest time.Duration) {
	ps := c.paths[p]
	if !ps.down || ps.removed {
		return
	}
	ps.down, ps.backoff = false, rest
	c.selMu.Lock()
	c.sel.AddPath(pathsel.PathID(p))
	c.selMu.Unlock()
	c.cfg.Logf("pcm: path %s answered during its failover: the server was silent, not the path; it stays live", ps.Name)
}

// restUnansweredLocked rests the paths whose probes went unanswered in a
// failover that ended in a redial (not those whose probe the redial's win
// cut short: cutShortLocked), but the one the new connection is on:
// left live, the selector would soon choose one and hold every request
// for its probe's timeout, as the failover did. Only when the probe's
// silence tells of its path (silenceTellsLocked; the redial's handshake
// shows that the server runs): a path that answered meanwhile (a side
// probe, a response's bytes) lost that probe in a burst, and stays live.
// A revival check (a side handshake, which needs no connection ID of
// this connection) brings a rested healthy one back after DownBackoff.
func (c *Client) restUnansweredLocked(unanswered []probed) {
	for _, u := range unanswered {
		ps := c.paths[u.p]
		if u.p != c.active && !ps.down && !ps.removed && c.silenceTellsLocked(u.p, u.m) {
			c.markDownLocked(u.p)
		}
	}
}

// redialLocked replaces the connection by the one dial makes (started
// alongside the migration: failoverLocked), and reports whether it did.
// The switch token is held; c.mu is
// released during the handshakes. The new session is stored before the
// old connection is closed (failStalled), so that watchSessions does not
// end the client, and the requests whose flights the stall ended are sent
// again on it (Client.RoundTrip, GetOn).
func (c *Client) redialLocked(dial *redial) bool {
	c.mu.Unlock()
	sess, won, err := dial.wait()
	c.mu.Lock()
	if err == nil && c.closed {
		sess.conn.CloseWithError(0, "")
		closeDial(sess)
		err = errors.New("pcm: closed during the redial")
	}
	if err != nil {
		c.cfg.Logf("pcm: redial failed: %v", err)
		return false
	}
	for _, ps := range c.paths {
		if ps.qp != nil {
			ps.qp.Close() // the old connection's
		}
		ps.qp, ps.validated = nil, false
	}
	c.wake = nil
	c.sess.Store(sess)
	if ps := c.paths[won]; ps.down {
		// A path down won (the live ones did not answer): it is back.
		c.selMu.Lock()
		c.sel.AddPath(pathsel.PathID(won))
		c.selMu.Unlock()
	}
	c.paths[won].validated = true
	c.movedLocked(won)
	return true
}

// Replays go oldest first. A failover's replays all leave at once on a
// path whose congestion window starts afresh (a migrated connection
// starts its controller again, RFC 9000 §9.4; a redialled one is new),
// and a quic-go server interleaves the responses of requests that carry
// no RFC 9218 priority (it treats them as incremental): all of them then
// complete together at the end of the new path's slow start, the oldest
// request — the one that has waited longest, often since before the cut
// — as late as the youngest, and in whatever order the replaying
// goroutines woke. So the failover ranks its flights by age
// (rankReplaysLocked) and their replays carry a Priority field ahead of
// fresh requests': urgencies u=0 to u=6 by replayUrgencyOf, each
// non-incremental (the server sends one response whole before the next
// of the same urgency, in stream order). Requests cut shortly after a
// move under load showed it: on 110 / 130 / 150 ms paths the oldest took
// 2.1 s, its replay's response the last of about a hundred, 0.75 s after
// the failover (TestCutDuringSwitchBurst).
//
// A server that has seen a Priority field treats requests without one as
// non-incremental (quic-go, as RFC 9218 §4 defaults them), so after the
// first replay the connection's fresh requests say "u=7, i": below every
// replay, with the interleaving they had among themselves (prioritized).
const (
	// replayLevels is how many urgencies a failover's replays share,
	// u=0 to u=6: every RFC 9218 level but the lowest, which fresh
	// requests take once a replay has gone (freshPriority).
	replayLevels = 7
	// freshUrgency marks a request never replayed, which carries no
	// Priority field (or freshPriority): below every replay's.
	freshUrgency int8 = replayLevels
)

// replayPriority is the Priority field of a replay at each urgency, and
// freshPriority a fresh request's once the connection has sent one
// (session.prioritized).
var replayPriority = [replayLevels]string{"u=0", "u=1", "u=2", "u=3", "u=4", "u=5", "u=6"}

const freshPriority = "u=7, i"

// replayUrgencyOf is the urgency of the replay ranked rank (0: the
// oldest) of n ≥ 1: the levels hold groups that double in size, unit, 2 ×
// unit, 4 × unit, ..., with unit = ⌈n / (2^replayLevels − 1)⌉, so that
// they cover n. Slow start doubles the new path's window each round trip
// (RFC 9002 §7.3.1), so each level is about what one more round trip
// delivers, and strict order between levels does the work: the order
// within a level is the stream order, which is the order in which the
// replaying goroutines woke, not their age, and costs at most about one
// round trip. Thirds (u=0 to u=2) put a third of the replays in the
// first level, more than the first round trips of a 150 ms path deliver,
// and a trace of a cut just after a move under load (TestTwoCutsOnSlowPaths,
// Client 110 / 130 / 150 ms at 900 ms) had the oldest requests' replays
// finish after many younger ones of their level that had left first;
// with these groups they finished in order of age.
func replayUrgencyOf(rank, n int) int8 {
	unit := (n + 1<<replayLevels - 2) / (1<<replayLevels - 1)
	level := bits.Len(uint(rank/unit+1)) - 1
	return int8(min(level, replayLevels-1))
}

// stalledFlight is a flight a failover will end, and when its wait
// began: a body read that got data during the failover waits anew, and
// is not ended.
type stalledFlight struct {
	f     *flight
	since time.Time
}

// rankReplaysLocked returns the flights on path p, oldest first, each
// with the urgency its replay will carry.
func (c *Client) rankReplaysLocked(p int) []stalledFlight {
	var fs []stalledFlight
	for f := range c.flights {
		if f.path == p {
			fs = append(fs, stalledFlight{f, f.since})
		}
	}
	slices.SortFunc(fs, func(a, b stalledFlight) int { return a.f.born.Compare(b.f.born) })
	for i, s := range fs {
		s.f.urgency = replayUrgencyOf(i, len(fs))
	}
	return fs
}

// replayUrgency is the urgency the failover that ended f gave its replay
// (freshUrgency when none did).
func (c *Client) replayUrgency(f *flight) int8 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return f.urgency
}

// priorityField is the Priority field a request of urgency u sends on
// sess ("": none), and marks sess prioritized when it is a replay's.
func priorityField(sess *session, u int8) string {
	if u < freshUrgency {
		sess.prioritized.Store(true)
		return replayPriority[u]
	}
	if sess.prioritized.Load() {
		return freshPriority
	}
	return ""
}
