package pcm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// begin admits a request that wants path p (-1: wherever the connection
// is), which began at born (its first attempt: a replay keeps it), and
// returns the path it goes on, whether the connection moved for it, and
// its flight (takeOffLocked), whose context the request must use;
// land must follow when its response head has arrived or it gave up.
//
// When a switch may happen: when no request waits for its response head
// (maySwitchLocked; a blocked body read does not count), and at a
// failover. Under a load that never leaves the network
// empty, a request whose path the selector keeps asking for drains the
// connection first (wantsDrainLocked: new requests wait up to about a
// round trip for those on the network to land, at most once per
// drainEvery), so that a loaded client follows its selector too. A
// request that may not switch goes on the active path at once
// (Result.Chosen ≠ Path says so); one that arrives
// during a switch waits for that one switch (bounded by ProbeTimeout). A
// response body in the caller's hands, unread or between reads, waits for
// nothing and holds no path: QUIC carries its stream along (RFC 9000 §9).
// Switching with requests waiting for their heads would also move the
// connection under steady load, but quic-go v0.65 reads the connection's
// socket state in ConnectionState (which http3 calls as a response head
// arrives) without the lock its path switch writes it under: the race
// detector reports it.
func (c *Client) begin(ctx context.Context, p int, born time.Time) (active int, switched bool, f *flight) {
	// The common case, no switch under way and none wanted, takes c.mu
	// once and no switch token.
	c.mu.Lock()
	drain := c.wantsDrainLocked(p)
	if c.switching == nil && !drain && !c.wantsSwitchLocked(p) {
		defer c.mu.Unlock()
		return c.admitLocked(ctx, false, time.Now(), born)
	}
	h := &hold{path: c.active, since: time.Now()}
	c.holds[h] = struct{}{}
	c.wakeDetectorLocked()
	c.mu.Unlock()
	owned := c.lockSwitch(ctx)
	delete(c.holds, h)
	defer c.unlockSwitch(owned)
	drained := owned && drain && c.stillDrainsLocked(p)
	var early earlyProbe
	if drained {
		early = c.drainLocked(ctx, c.wantedLocked(p))
	}
	tried := owned && c.wantsSwitchLocked(p)
	if tried {
		switched = c.ensureActiveLocked(ctx, c.wantedLocked(p), early)
	}
	if tried && (drained || len(c.holds) >= heldBurstMin) {
		// The requests held by the drain or by the switch's probe leave
		// at once: their responses measure that burst, and may come back
		// on the old path while the server validates the new one
		// (racedBusySwitchLocked). So do those held by a probe that
		// failed (the path it tried was cut): they leave together on the
		// path the connection stayed on (TestNoSampleAfterFailedSwitch).
		c.busySwitchLocked(c.cfg.Now())
	}
	since := time.Now()
	if h.path == c.active {
		since = h.since // its wait on this path goes on
	}
	return c.admitLocked(ctx, switched, since, born)
}

// wantedLocked is the path a request that asks for p should go on: the
// pinned one while a pin holds (notFollowed), else p.
func (c *Client) wantedLocked(p int) int {
	if pin := c.pinnedLocked(); pin >= 0 {
		return pin // the server sends there whatever we choose
	}
	return p
}

// wantsSwitchLocked says whether a request that asks for p would move the
// connection now.
func (c *Client) wantsSwitchLocked(p int) bool {
	p = c.wantedLocked(p)
	if p < 0 || p == c.active || !c.maySwitchLocked() || !c.migration && p != c.pin {
		return false
	}
	ps := c.paths[p]
	return !ps.down && !ps.removed
}

// wantsDrainLocked says whether a request that asks for p should drain
// the connection first: p is another usable path, requests wait on the
// network (so no switch may happen now: begin says why), and no drain
// began within drainEvery. Without drains a steadily loaded client would
// stay for good on whatever path it was on when the load began, or moved
// to at a failover, whatever the selector learns.
//
// Only a wish the selector keeps (drainPersist requests in a row asking
// for the same path: not a polling strategy's turn, nor a single request
// aimed at a path) and only while every request on the network is young
// enough to land within the drain (a slow response holds no one) and
// responses are landing (on a path that just died, a drain would only add
// its wait to the failover's).
func (c *Client) wantsDrainLocked(p int) bool {
	q := c.wantedLocked(p)
	if q != c.wantTo {
		c.wantTo, c.wantRun = q, 0
	}
	c.wantRun++
	// The cheap tests first: this runs for every request.
	if q < 0 || q == c.active || c.heads == 0 || c.wantRun < drainPersist || !c.migration && q != c.pin {
		return false
	}
	if q != c.drainedFrom && c.cfg.Now().Sub(c.lastDrain) < c.drainEvery() {
		return false // back to where the last drain left is not rate-limited: a re-probe's return
	}
	if ps := c.paths[q]; ps.down || ps.removed {
		return false
	}
	wait := c.drainWait()
	if time.Since(c.lastLanded) > wait/2 {
		return false // responses are not coming back: no drain would end
	}
	for f := range c.flights {
		if f.head && time.Since(f.since) > wait {
			return false
		}
	}
	return true
}

// stillDrainsLocked says whether a drain wantsDrainLocked asked for before
// lockSwitch is still wanted: another request's drain may have moved the
// connection meanwhile.
func (c *Client) stillDrainsLocked(p int) bool {
	q := c.wantedLocked(p)
	return c.heads > 0 && q != c.active && (q == c.drainedFrom || c.cfg.Now().Sub(c.lastDrain) >= c.drainEvery())
}

// drainLocked holds the switch token (so new requests wait, as they do for
// a switch) until the requests on the network have landed, for at most
// drainWait; c.mu is held on entry and on return, released while waiting.
// The switch that follows (begin) then moves a connection with no request
// waiting; if they have not all landed, the request goes where the
// connection is.
//
// Meanwhile it validates q, the path the switch will go to
// (probeEarlyLocked), and returns what that showed: the requests it holds
// then wait for the longer of the two round trips (the old path's last
// responses, the new path's validation), not for their sum. On 210 /
// 200 ms paths under a 5 kB GET every 10 ms the drain held requests
// 200 ms and the switch's probe 200 ms more
// (TestMoveUnderLoadHoldsOneRoundTrip).
func (c *Client) drainLocked(ctx context.Context, q int) earlyProbe {
	c.lastDrain, c.drainedFrom = c.cfg.Now(), c.active
	ch := make(chan struct{})
	c.drained = ch
	wait := c.drainWait()
	probe := c.probeEarlyLocked(ctx, q)
	c.mu.Unlock()
	t := time.NewTimer(wait)
	select {
	case <-ch:
	case <-t.C:
	case <-ctx.Done():
	}
	t.Stop()
	c.mu.Lock()
	if c.drained == ch {
		c.drained = nil
	}
	return c.probeOutcomeLocked(probe)
}

// earlyProbe is what a drain learnt of the path its switch goes to: ran
// says it probed q, err how that ended (nil: validated, the switch need
// not probe again).
type earlyProbe struct {
	ran bool
	q   int
	err error
	v   validation // when it began
}

// pendingProbe is a probe under way (probeEarlyLocked): done gives its
// outcome once.
type pendingProbe struct {
	q      int
	done   chan error
	cancel context.CancelFunc
	v      validation
}

// probeEarlyLocked starts the validation a switch to q would make
// (switchToLocked), or returns nil when that switch would not probe
// (rebind mode; FastSwitch on a validated path) or q cannot be used.
// Probing leaves the connection where it is (RFC 9000 §9.1): the
// requests on the network go on landing on the old path.
//
// Not within followSettle of the latest move: the server may not have
// followed it yet (it validates the new address first), and a probe
// from the address it still sends to then left its path state such
// that it did not follow the switch after the drain either: a drain
// back 80 ms after a move (a re-probe's return) pinned the client to
// the worse path (TestRestoredPathTakenBack, the 80 / 100 / 20 ms row,
// 15 of 24 runs). The switch probes after the drain then, as before.
func (c *Client) probeEarlyLocked(ctx context.Context, q int) *pendingProbe {
	if q < 0 || q == c.active || c.multi != nil || c.settlingLocked() {
		return nil
	}
	ps := c.paths[q]
	if ps.down || ps.removed || !c.validatesLocked(q, true) || c.addPathLocked(q) != nil {
		return nil
	}
	pctx, cancel := context.WithTimeout(ctx, c.validateWait(q))
	pp := &pendingProbe{q: q, done: make(chan error, 1), cancel: cancel, v: c.startValidationLocked(q)}
	qp := ps.qp
	go func() { pp.done <- qp.Probe(pctx) }()
	return pp
}

// probeOutcomeLocked waits for pp's probe (nil: none ran); c.mu is held,
// released while waiting. It waits even when the drain ended with
// requests still on the network, so that no switch follows (begin): the
// probe is then left to end as a switch's would, the path validated or
// forgotten, rather than cancelled while the server may be validating
// the address in turn.
func (c *Client) probeOutcomeLocked(pp *pendingProbe) earlyProbe {
	if pp == nil {
		return earlyProbe{}
	}
	defer pp.cancel()
	c.mu.Unlock()
	err := <-pp.done
	c.mu.Lock()
	if err != nil {
		err = c.probeFailedLocked(pp.q, err)
	} else {
		c.paths[pp.q].validated = true
	}
	return earlyProbe{ran: true, q: pp.q, err: err, v: pp.v}
}

// Drains under load. A drain holds new requests for about a round trip
// (what the last ones sent need to come back): drainRTTs smoothed RTTs,
// at least drainFloor (a loaded host's scheduling; memnet's tiny RTTs).
// Drains are at most one per drainEvery: drainEveryRTTs smoothed RTTs, at
// least drainEveryFloor, so that their pauses cost a loaded client at
// most about drainRTTs/drainEveryRTTs (a quarter) of its time even if
// the selector wants another path at every request.
const (
	drainPersist    = 4
	drainRTTs       = 2
	drainFloor      = 20 * time.Millisecond
	drainEveryRTTs  = 8
	drainEveryFloor = 250 * time.Millisecond
)

// heldBurstMin is how many requests must have waited for a switch made
// with nothing on the network (begin: they wait for its probe, a round
// trip of the new path) for their take-off to be a burst, as a drain's is:
// with the request that switched, two requests leave at once, as for a
// dial (heldByDial). Measured on emu/memnet (a Client on 150 / 90 / 110 ms
// paths, a 5 kB GET every 10 ms, the load resumed after a pause): the
// switch to the 110 ms path held 11 requests, which left together; they
// and those sent behind them measured 112–300 ms, were counted as the
// path's samples, and after a cut of the 90 ms path the client stayed on
// the 150 ms one (TestBestLiveAfterBunchedTry).
const heldBurstMin = 1

func (c *Client) drainWait() time.Duration {
	return max(drainFloor, drainRTTs*c.s().conn.ConnectionStats().SmoothedRTT)
}

func (c *Client) drainEvery() time.Duration {
	return max(drainEveryFloor, drainEveryRTTs*c.s().conn.ConnectionStats().SmoothedRTT)
}

// admitLocked registers the request's flight on the active path.
func (c *Client) admitLocked(ctx context.Context, switched bool, since, born time.Time) (int, bool, *flight) {
	f := c.takeOffLocked(ctx, since, born)
	c.paths[c.active].lastUsed = c.cfg.Now()
	return c.active, switched, f
}

// maySwitchLocked says whether the connection may move now (begin): only
// when no request waits for its response head. quic-go's http3 reads the
// connection's state (ConnectionState) as each response head arrives,
// without the lock a path switch writes it under; a body read does not,
// and its stream moves with the connection. Counting body reads too froze
// a loaded Transport on its path: a drain's last read to land was
// followed at once by its reader's next Read, registered again before the
// drain could switch.
func (c *Client) maySwitchLocked() bool { return c.heads == 0 }

// lockSwitch takes c.mu and the right to switch (c.switching): it waits,
// without holding c.mu, for a switch under way to end, or for ctx (the
// caller then goes on the active path, where its request fails on ctx).
// A switch releases c.mu while it waits on the network (switchLocked), so
// c.mu is never held for long: Active, Resting and Stats answer during a
// probe, and under testing/synctest nothing blocks on a mutex while fake
// time should advance.
func (c *Client) lockSwitch(ctx context.Context) (owned bool) {
	c.mu.Lock()
	for c.switching != nil {
		ch := c.switching
		c.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			c.mu.Lock()
			return false
		}
		c.mu.Lock()
	}
	c.switching = make(chan struct{})
	return true
}

// unlockSwitch ends what lockSwitch began and wakes who waits for it.
func (c *Client) unlockSwitch(owned bool) {
	if owned {
		close(c.switching)
		c.switching = nil
	}
	c.mu.Unlock()
}

// credit gives the selector res's sample when the path the request was
// sent on carried the response, and marks res Credited. A response that
// raced a failover (it measured two paths) gives neither a sample nor
// evidence about the server; one that came back on another path is
// counted (notFollowed) and gives no sample: its time belongs to no single
// path; nor does one whose path rested meanwhile. A complete response is
// never failed for want of a sample.
func (c *Client) credit(res *Result) error {
	if res.Failovers > 0 {
		return nil
	}
	if !res.Followed() {
		c.notFollowed(*res)
		return nil
	}
	c.mu.Lock()
	if res.Path != c.unfollowedTo {
		// The server followed a switch away from where it sent the
		// unfollowed ones: it does follow. One on that very path says
		// nothing either way.
		c.unfollowedRun = 0
	}
	// Sent in the burst that follows a failover or a drain (the requests
	// held meanwhile, all at once): it measured that backlog, not the
	// path. Measured on emu/memnet: such samples put the best live path at
	// 5 × its round trip, and the change detector then forgot its past, so
	// the client left it for a worse one.
	raced := c.racedBusySwitchLocked(*res) && !c.unqueuedLocked(*res) || !res.bunch.sample()
	c.behindBurstLocked(*res)
	c.mu.Unlock()
	if raced {
		return nil
	}
	c.selMu.Lock()
	err := c.sel.Observe(pathsel.PathID(res.Path), res.Sample(c.cfg.PerByte))
	c.selMu.Unlock()
	if errors.Is(err, pathsel.ErrUnknownPath) {
		// The path was rested while the response was in flight: the
		// selector takes no sample of it, and the response, complete,
		// is the app's all the same.
		return nil
	}
	res.Credited = err == nil
	if res.Credited && c.afterFailover.Load() {
		c.mu.Lock()
		c.staySampled = c.staySampled || res.Path == c.active
		c.mu.Unlock()
	}
	return err
}

// notFollowedLimit is how many responses in a row must come back on
// another path than their request's, all to one path and none followed on
// another path between, before the client stops choosing paths and stays
// on the one the server sends to. Three, not one: a response that raced a
// switch is late, not refusal; more would waste requests on a
// server that, once it stops following, never follows again (picoquic and
// qh3 follow a client only to an address they have never seen:
// pcm/README.md).
const notFollowedLimit = 3

// A response is evidence that the server does not follow only when its
// request left followSettle after the latest switch made while requests
// were in flight (a failover): the server, busy with the
// old path's streams, may go on answering there for a while — through
// the emulator 14 responses of one such switch came back on the old path
// and pinned the client. A switch with nothing in flight probes first, so
// the server has validated the new path before the request leaves, and
// the response right after it is evidence. Four
// round trips, at least 250 ms: room for the validation, the ACK delay and
// a loaded host.
const (
	followSettleRTTs  = 4
	followSettleFloor = 250 * time.Millisecond
)

// pinHold is how long a pin lasts before the client tries switching again:
// the verdict is re-tested rather than kept for the connection's life (a
// server may follow again after its own path state changes). Thirty
// seconds: long enough that a server that never follows costs a few
// unmeasured requests a minute, short enough that a pin on a path that has
// become the worse one does not last.
const pinHold = 30 * time.Second

// notFollowed records a response that came back on another path than its
// request's, and in the default mode, after notFollowedLimit of them to
// one path on healthy paths, with no followed response elsewhere between, pins the connection to the path the server sends
// to for pinHold: requests then go where their responses come from, and
// every measurement is of one path again. The default mode probes before
// every switch, so the server has validated the new path when the request
// leaves: not following is then the server's choice. Stats shows the pin;
// ClearPin ends it; a pinned path that goes down ends it too.
func (c *Client) notFollowed(res Result) {
	n := c.unfollowed.Add(1)
	c.cfg.Logf("pcm: WARNING: the response to stream %d, sent on %s, came back on %s: the server did not follow the switch (%d so far); no sample",
		res.StreamID, res.PathName, c.pathName(res.Carrier), n)
	if c.multi != nil {
		// Rebind mode validates nothing before a request, so a server
		// that validates the new address first (RFC 9000 §9.3; quic-go
		// does) answers the first request after a rebind on the old one:
		// that is late, not refusal, and the client goes on choosing.
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.paths[res.Path].down || c.paths[res.Carrier].down {
		return // a path that failed says nothing about the server
	}
	if c.racedBusySwitchLocked(res) {
		return // it raced a switch under load: the server may still answer on the old path
	}
	if res.Carrier != c.unfollowedTo {
		c.unfollowedRun, c.unfollowedTo = 0, res.Carrier
	}
	c.unfollowedRun++
	if c.unfollowedRun < notFollowedLimit || c.pin == res.Carrier {
		return
	}
	c.pin, c.pinUntil = res.Carrier, c.cfg.Now().Add(pinHold)
	c.cfg.Logf("pcm: WARNING: the server does not follow switches; staying on %s, where it sends, for %v", c.paths[c.pin].Name, pinHold)
}

// racedBusySwitchLocked says whether res was sent within followSettle of
// the latest switch made while requests were in flight, or before the
// burst that switch released had landed: the requests held or replayed
// during a failover or a drain leave at once, on a congestion window the
// switch reset, and a request sent behind them waits its turn. Measured
// on emu/memnet (32/37/20 ms paths at 24 Mbit/s, a 5 kB GET every 10 ms,
// TestNoSampleQueuesBehindReplays): requests sent just after followSettle
// measured up to 3.4 × their path's round trip. A burst request
// still waiting a stall timeout after the window waits for a slow
// server, not behind the burst (a dead path would have failed over by
// then): the window ends there at the latest.
//
// The window also holds the requests that took off before a response sent
// behind the burst had ended (behindBurstLocked): the burst's tail held
// the path for them too. Measured on TestHeldOutCuts'
// apart300/slow-links (a Client after a redial to the lossy 45 ms path,
// about 90 requests released at once; traced 2026-12-01): the burst's
// last request landed 345 ms after the move, and the path then delivered
// nothing for 200 ms more, so the requests sent in those 200 ms,
// credited, gave the path a first window of 219 ms falling to 45 ms, one
// a 10 ms, and the selector left it for the 70 ms path for over a
// second (share on the best live path 0.26–0.29 in 5 of 8 runs).
// Without loss on the path no run missed.
func (c *Client) racedBusySwitchLocked(res Result) bool {
	return res.Est.Before(c.burstWindowEndLocked(true))
}

// unqueuedLocked says whether res, though sent within a busy switch's
// window (racedBusySwitchLocked), is a sample: it waited behind nothing
// (it took at most unqueuedSlack times the round trip last measured on
// its path, knownRTT), on a path clearly slower than another
// (clearlySlowerLocked). The burst makes a response slower, never
// faster, so only those that queued hide what the path is; withholding
// them all left the selector blind to the path it had just moved to for
// the whole window, while it kept choosing it. Measured on
// TestHeldOutCuts' gen3721/k3/1 (58 / 19 / 72 ms, the 19 ms path 10
// Mbit/s and lossy): a re-probe of the 72 ms path drained the load
// there, and for 0.47 s every response on it (all 43 in one traced run,
// 73.7–147.9 ms) was withheld; the load stayed there 0.7 s, and the
// share on the 19 ms path was at most 0.5 in 4 of 40 rows, 0.45–0.80 in
// 13 more (TestMoveUnderLoadSamplesItsPath).
func (c *Client) unqueuedLocked(res Result) bool {
	known := c.paths[res.Path].knownRTT
	return known > 0 && float64(res.TCT()) <= unqueuedSlack*float64(known) && c.clearlySlowerLocked(res.Path)
}

// clearlySlowerLocked says whether path p's known round trip is at least
// clearlySlower times that of another usable path: a move there is a
// re-probe of a path the selector will likely leave again, and the
// sooner it hears of it the less load follows it. Between near ties the
// window's withholding stays: it damps the selector's alternation under
// load. Without this test (every path's unqueued responses sampled)
// gen3721/k4/1 (31 / 23 ms, 33 and 29 ms a request alone) missed its
// share in 48 of 80 rows against 17 on the code before, the client
// flapping between the two, and TestStallFoundSoonerOnSlowPaths (110 /
// 120 / 150 ms) found the connection leaving the path being cut, and no
// stall, in 30 of 30 runs (0 before).
func (c *Client) clearlySlowerLocked(p int) bool {
	known := float64(c.paths[p].knownRTT)
	for i, ps := range c.paths {
		if i != p && !ps.down && !ps.removed && ps.knownRTT > 0 && known >= clearlySlower*float64(ps.knownRTT) {
			return true
		}
	}
	return false
}

// clearlySlower: 1.5 leaves the near ties above (1.35 and 1.09) damped
// and takes k3/1's 3.8 (72 against 19 ms).
const clearlySlower = 1.5

// unqueuedSlack is how far above its path's known round trip a response
// sent in a burst's window may come back and still have waited behind
// nothing: a 5 kB response's bytes take 4 ms at 10 Mbit/s, a tenth of a
// 40 ms round trip; those that waited behind a burst took 1.7–6 × it
// (racedBusySwitchLocked, behindBurstLocked).
const unqueuedSlack = 1.25

// burstWindowEndLocked is the end of racedBusySwitchLocked's window:
// the burst's followSettle, to when its last request landed (now while
// one still waits), and with behind to the end of the latest response
// sent behind it (behindEnd); a stall timeout after followSettle at the
// latest.
func (c *Client) burstWindowEndLocked(behind bool) time.Time {
	end := c.lastBusySwitch.Add(c.burstSettleLocked())
	landed := c.burstLanded
	if c.burstOpen > 0 {
		landed = c.cfg.Now()
	}
	if behind && c.behindEnd.After(landed) {
		landed = c.behindEnd
	}
	if latest := end.Add(c.stallTimeout()); landed.After(latest) {
		end = latest
	} else if landed.After(end) {
		end = landed
	}
	return end
}

// behindBurstLocked records res's end when its request took off behind
// the latest busy switch's burst (after the window burstUntil closed at
// the switch, before the burst had landed) and took over behindSlack
// times the connection's least round trip: it waited for the backlog,
// and so did the requests that took off before it ended
// (racedBusySwitchLocked). burstUntil, not followSettle: followSettle
// follows the smoothed RTT, which the backlog itself inflates, and
// measured from it the requests behind a redial's burst on the 30 ms,
// 10 Mbit/s path of apart300/slow-links (seed 1234) counted as the
// burst's own and extended nothing (2 misses in 24 runs). One step only:
// a request held by behindEnd alone extends nothing. A response behind the
// burst that took its path's time extends nothing either: on
// TestHeldOutCuts' gen5150/k3/0 (43 / 60 / 73 ms, Client) recording
// those too dropped the failover path's next round trip of samples, and
// the selector, with fewer of them, left the 60 ms path for the untried
// 73 ms one and stayed (share 0.04–0.10, against 0.65–0.96).
func (c *Client) behindBurstLocked(res Result) {
	least := c.s().conn.ConnectionStats().MinRTT
	if least > 0 && res.TCT() > behindSlack*least && !res.Est.Before(c.burstUntil) &&
		res.Est.Before(c.burstWindowEndLocked(false)) && res.End.After(c.behindEnd) {
		c.behindEnd = res.End
	}
}

// behindSlack is how many of the connection's least round trips a
// response sent behind a burst may take and still have measured its
// path: a 5 kB response takes one round trip and its bytes' time on the
// link (4 ms at 10 Mbit/s), so twice it is a wait for something else. On
// apart300/slow-links those behind the burst took 225–284 ms on a 45 ms
// path; on gen5150/k3/0 they took 61.5 ms on a 60 ms one.
const behindSlack = 2

// burstSettleLocked is the window after the latest busy switch whose
// requests are its burst.
func (c *Client) burstSettleLocked() time.Duration {
	if c.dialBurst {
		return c.dialSettle()
	}
	return c.followSettle()
}

// burstLandingLocked says that the burst of the latest busy switch is
// still landing at now: within its window, or after it with requests of
// the window not landed, for a stall timeout at most
// (racedBusySwitchLocked's window, seen from now).
func (c *Client) burstLandingLocked(now time.Time) bool {
	end := c.lastBusySwitch.Add(c.burstSettleLocked())
	return now.Before(end) || c.burstOpen > 0 && now.Before(end.Add(c.stallTimeout()))
}

// busySwitchLocked records a move made at now with requests in flight:
// the requests that take off within followSettle are its burst.
func (c *Client) busySwitchLocked(now time.Time) {
	c.lastBusySwitch = now
	c.burstUntil = now.Add(c.followSettle())
	c.dialBurst = false
	c.behindEnd = time.Time{}
}

// heldByDial records that requests waited for the connection's dial (a
// Transport's, which dials when a request asks): they all leave at once
// when it is up, on a fresh congestion window, as a failover's held
// requests do, and their responses measure that burst, not the path
// (racedBusySwitchLocked). Measured on emu/memnet (100 / 160 / 70 ms
// paths, a 5 kB GET every 10 ms from the start): the first path's
// samples were 120–220 ms, its window's mean above the 160 ms path's,
// and after a cut of the 70 ms path the Transport moved to the 160 ms
// path and stayed there, the 100 ms path's probes vouching for its
// inflated window (TestBestLiveAfterBurstyStart). The window is
// dialSettle: a lone request held measures the path, so one marks
// nothing.
func (c *Client) heldByDial() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	c.busySwitchLocked(now)
	c.burstUntil = now.Add(c.dialSettle())
	c.dialBurst = true
}

// dialSettle is a dial burst's followSettle without its floor: the floor
// leaves room for the server's validation of a new path, and a new
// connection has none to do. With the floor, 32 loopback clients' 640
// requests (TestConcurrentRequests) all fell within the window and none
// was credited.
func (c *Client) dialSettle() time.Duration {
	return followSettleRTTs * c.s().conn.ConnectionStats().SmoothedRTT
}

// settlingLocked says whether the latest move is within followSettle: the
// server may be following it still, and then leaves a probe unanswered,
// so a drain does not probe early (probeEarlyLocked) and a failed probe
// rests no path (ensureActiveLocked). c.mu is held.
func (c *Client) settlingLocked() bool {
	return c.cfg.Now().Sub(c.movedAt) < c.followSettle()
}

// followSettle is followSettleRTTs smoothed RTTs, at least followSettleFloor.
func (c *Client) followSettle() time.Duration {
	return max(followSettleRTTs*c.s().conn.ConnectionStats().SmoothedRTT, followSettleFloor)
}

// pinnedLocked is the pin in force, or -1; a pin past its hold ends here.
func (c *Client) pinnedLocked() int {
	if c.pin >= 0 && !c.cfg.Now().Before(c.pinUntil) {
		c.pin, c.unfollowedRun = -1, 0
	}
	return c.pin
}

// ClearPin ends a pin (Stats.Pinned): the client chooses paths again, and
// the server must show anew that it does not follow.
func (c *Client) ClearPin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pin, c.unfollowedRun = -1, 0
}

// ensureActiveLocked moves the connection to path p if it can and reports
// whether it moved. When it cannot (probe failed, path resting after a
// failure, the connection gone) the connection stays where it is: a
// request is never failed for want of a path.
//
// early is what a drain's probe of p showed (drainLocked): a validation
// it made is not made again, and a failed one fails the switch.
//
// A probe that began within followSettle of the latest move rests no
// path: the server may just be following that move, and then leaves a
// probe unanswered. A re-probe's return 100–120 ms after a move to an
// 88 ms path timed out its 250 ms probe of a healthy 51 ms path, which
// rested for DownBackoff, and the failover that came next took a 256 ms
// path instead (seed 4242's gen4242/k3/2: a request of 2.4 s in 6 of 20
// runs alone; 180–190 ms after the move the probe passed). The selector
// may ask for the path again; a later probe that fails rests it.
// (Delaying such returns instead lengthened every re-probe's excursion:
// restore/200-30-60's share missed in 21 of 120 runs alone, against 10.)
//
// Nor does a failed validation during which the server answered nothing,
// on any path: a server that did not run says nothing of the path
// (startValidationLocked, whose poke draws that answer).
func (c *Client) ensureActiveLocked(ctx context.Context, p int, early earlyProbe) bool {
	if c.s().conn.Context().Err() != nil {
		return false // a dead connection: no probe, and no path blamed for it
	}
	ps := c.paths[p]
	if ps.removed || ps.down {
		return false
	}
	settling := c.settlingLocked() // before the probe, which takes time
	var err error
	probed := early.ran && early.q == p // a pin may have changed the target since
	var v validation                    // none when the switch does not validate
	if probed {
		err, v = early.err, early.v
	} else if c.validatesLocked(p, true) {
		v = c.startValidationLocked(p)
	}
	if err == nil {
		err = c.switchToLocked(ctx, p, !probed)
	}
	if err != nil {
		c.cfg.Logf("pcm: cannot use path %s, staying on %s: %v", ps.Name, c.paths[c.active].Name, err)
		if c.migration && !settling && c.failureTellsLocked(p, v) {
			c.markDownLocked(p)
		}
		return false
	}
	return true
}

// switchLocked validates path p if needed (within the working-set budget
// and a probe deadline) and switches to it. c.mu is held.
func (c *Client) switchLocked(ctx context.Context, p int) error {
	return c.switchToLocked(ctx, p, true)
}

// switchToLocked is switchLocked; with probe false it skips the probe of
// a path validated before, as FastSwitch does.
func (c *Client) switchToLocked(ctx context.Context, p int, probe bool) error {
	ps := c.paths[p]
	if c.multi != nil {
		// Rebind mode: the next packet leaves from p's socket; the server
		// validates the new address on its own.
		c.multi.setActive(p)
		c.movedLocked(p)
		return nil
	}
	if err := c.addPathLocked(p); err != nil {
		return err
	}
	// Probe even a path validated before: after every switch the server
	// forgets the client's other addresses, and until it has validated the
	// new one it keeps sending to the old (for a round trip of the new
	// path), so the first responses would measure the wrong path. The probe
	// makes both ends validate before the request (FastSwitch skips it).
	if c.validatesLocked(p, probe) {
		pctx, cancel := context.WithTimeout(ctx, c.validateWait(p))
		c.mu.Unlock() // waiting on the network: c.switching holds others off
		err := ps.qp.Probe(pctx)
		c.mu.Lock()
		cancel()
		if err != nil {
			return c.probeFailedLocked(p, err)
		}
		ps.validated = true
	}
	// quic-go starts its RTT estimator again at the switch (RFC 9000
	// §9.4): what it measured of the path being left is read now.
	if rtt := c.s().conn.ConnectionStats().MinRTT; rtt > 0 {
		c.paths[c.active].knownRTT = rtt
	}
	c.s().moves.switching(c.active)
	if err := ps.qp.Switch(); err != nil {
		c.s().moves.settled()
		ps.qp.Close()
		ps.qp, ps.validated = nil, false
		return fmt.Errorf("switch to %s: %w", ps.Name, err)
	}
	c.mu.Unlock()
	c.awaitMove(ctx, ps)
	c.mu.Lock()
	if old := c.paths[c.active]; old.qp == nil {
		// The path the connection was dialled on has no quic.Path handle:
		// coming back to it means adding it again.
		old.validated = false
	}
	c.movedLocked(p)
	return nil
}

// addPathLocked gives the connection a quic.Path for p unless p is
// validated (it has one then).
func (c *Client) addPathLocked(p int) error {
	ps := c.paths[p]
	if ps.validated {
		return nil
	}
	c.makeRoomLocked(p)
	qp, err := c.s().conn.AddPath(ps.tr)
	if err != nil {
		// quic-go refuses when the server sent disable_active_migration.
		c.migration = false
		c.cfg.Logf("pcm: WARNING: migration unavailable (%v); staying on path %s for good", err, c.paths[c.active].Name)
		return err
	}
	ps.qp = qp
	return nil
}

// probeFailedLocked forgets p's quic.Path after its probe failed with
// err, and returns the switch's error.
func (c *Client) probeFailedLocked(p int, err error) error {
	ps := c.paths[p]
	ps.qp.Close()
	ps.qp, ps.validated = nil, false
	// A probe that times out has often found the budgets full (no
	// connection ID left, or the server ignoring a 4th path): free them
	// for the next attempt.
	c.closeIdleLocked(p)
	return fmt.Errorf("probe via %s: %w", ps.Name, err)
}

// movedLocked records that the connection is on path p now: the flights
// moved with it (their streams did), and the stall detector watches them
// there.
func (c *Client) movedLocked(p int) {
	c.active = p
	c.switches.Add(1)
	now := c.cfg.Now()
	c.movedAt = now
	if len(c.flights) > 0 {
		c.busySwitchLocked(now)
	}
	ps := c.paths[p]
	ps.lastUsed = now
	ps.down, ps.backoff = false, 0
	for f := range c.flights {
		f.path = p
	}
}

// awaitMove returns once quic-go has applied the Switch to ps, so that the
// next request leaves on ps (moveWatch says why that is later than Switch
// returns). Nothing wakes quic-go's run loop for a Switch: raising or
// lowering the priority of an idle stream does, and sends nothing (the
// stream has no data, so only the loop's pass follows). The stream is
// unidirectional, opened once, never written, so the server never sees
// it. Without one to spare (the server's stream limit) the request may
// leave early, and the watch then reports it on the old path.
func (c *Client) awaitMove(ctx context.Context, ps *pathState) {
	sess := c.s()
	if sess.moves == nil {
		return
	}
	if c.wake == nil {
		s, err := sess.conn.OpenUniStream()
		if err != nil {
			return
		}
		c.wake = s
	}
	c.wakeUrgent = !c.wakeUrgent
	c.wake.SetPriority(urgency(c.wakeUrgent), false)
	t := time.NewTimer(c.cfg.ProbeTimeout)
	defer t.Stop()
	select {
	case <-sess.moves.settledCh():
	case <-ctx.Done():
	case <-t.C:
		c.cfg.Logf("pcm: quic-go did not move the connection to %s within %v", ps.Name, c.cfg.ProbeTimeout)
	}
}

// urgency is an RFC 9218 urgency that differs from quic-go's default (3),
// for each of the two values the wake stream alternates between.
func urgency(high bool) int8 {
	if high {
		return 0
	}
	return 7
}

// makeRoomLocked closes the least recently used idle paths until one more
// fits in MaxPaths.
func (c *Client) makeRoomLocked(keep int) {
	for {
		n, lru := 0, -1
		for i, ps := range c.paths {
			if !ps.validated {
				continue
			}
			n++
			if i != c.active && i != keep && ps.qp != nil && (lru < 0 || ps.lastUsed.Before(c.paths[lru].lastUsed)) {
				lru = i
			}
		}
		if n < c.cfg.MaxPaths || lru < 0 {
			return
		}
		c.closePathLocked(lru)
	}
}

func (c *Client) closeIdleLocked(keep int) {
	for i, ps := range c.paths {
		if i != c.active && i != keep && ps.qp != nil {
			c.closePathLocked(i)
		}
	}
}

func (c *Client) closePathLocked(i int) {
	ps := c.paths[i]
	ps.qp.Close()
	ps.qp, ps.validated = nil, false
}

// markDownLocked rests a failed path: it leaves the selector and comes back
// after a backoff that doubles while it keeps failing.
func (c *Client) markDownLocked(p int) {
	ps := c.paths[p]
	ps.backoff = min(max(2*ps.backoff, c.cfg.DownBackoff), time.Minute)
	ps.down, ps.retryAt = true, c.cfg.Now().Add(ps.backoff)
	c.wakeDetectorLocked() // to revive it (reviveRested)
	if c.pin == p {
		c.pin, c.unfollowedRun = -1, 0 // never stay on a path that failed
	}
	if ps.qp != nil && p != c.active {
		c.closePathLocked(p)
	}
	c.selMu.Lock()
	c.sel.RemovePath(pathsel.PathID(p)) // absent already is fine
	c.selMu.Unlock()
}

// revivalFailedLocked judges a failed revival check of path p, which is
// down (a side probe: probeAnswer; a side handshake: checkPath), by the
// mark m it left (the evidence rule: silenceTellsLocked). When its
// silence tells of p, p rests again for twice as long (markDownLocked).
// When the server answered on p meanwhile, p was alive all along and
// comes back (reviveLocked). When the server answered nothing, anywhere
// (its process paused), the check said nothing: p rests for its backoff
// again, not doubled. Before, a revival check that met a paused server
// doubled the rest of a healthy path (TestRevivalAcrossServerPause). c.mu
// is held.
func (c *Client) revivalFailedLocked(p int, m pathMark) {
	switch {
	case c.silenceTellsLocked(p, m):
		c.markDownLocked(p)
	case c.answeredOnSinceLocked(p, m):
		c.reviveLocked(p, nil)
	default:
		ps := c.paths[p]
		ps.retryAt = c.cfg.Now().Add(ps.backoff)
		c.wakeDetectorLocked()
	}
}

// reviveLocked brings path p, down, back to the selector, and calls
// observe (nil: none) under selMu, with p there. c.mu is held (taken
// before selMu, as markDownLocked does).
func (c *Client) reviveLocked(p int, observe func()) {
	c.paths[p].down = false
	c.selMu.Lock()
	defer c.selMu.Unlock()
	c.sel.AddPath(pathsel.PathID(p))
	if observe != nil {
		observe()
	}
}

// downPaths names the paths that are down.
func (c *Client) downPaths() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	down := map[string]bool{}
	for _, ps := range c.paths {
		if ps.down {
			down[ps.Name] = true
		}
	}
	return down
}

// Resting reports, per path, whether it is down after a failure: not used
// (requests for it go on the active path) until a revival check after its
// backoff succeeds (reviveRested).
func (c *Client) Resting() []bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := make([]bool, len(c.paths))
	for i, ps := range c.paths {
		r[i] = ps.down
	}
	return r
}

// reviveRested checks the down paths whose rest has ended, each out of
// band (checkPath): a path comes back through such a check, never by
// sending a user's request into it.
func (c *Client) reviveRested() {
	if c.probing {
		return // the side probes bring paths back (probeAnswer)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	for i, ps := range c.paths {
		if ps.down && !ps.removed && !ps.checking && !now.Before(ps.retryAt) {
			ps.checking = true
			go c.checkPath(i, ps.LocalPath)
		}
	}
}

// revivalHandshakes is how many probe timeouts a revival check's handshake
// may take: a QUIC handshake needs a round trip more than a probe (the
// server's flight and the client's Finished), and a margin for the TLS work.
const revivalHandshakes = 2

// checkPath tries a QUIC handshake of its own to the server on path i's
// address — any HTTP/3 server answers one, and it spends none of the main
// connection's connection IDs — and returns the path to the selector when
// it completes; otherwise the check's silence is judged
// (revivalFailedLocked): the path rests again, for twice as long when it
// tells of the path.
func (c *Client) checkPath(i int, lp LocalPath) {
	cfg := c.cfg
	cfg.Paths, cfg.Selector, cfg.Rebind = []LocalPath{lp}, sideSelector{}, false
	cfg.Probes.Off = true
	c.mu.Lock()
	m := c.markLocked(i)
	if len(c.flights) == 0 {
		// Draws the server's ACK on the connection within the check when
		// the server runs: without it an idle client's failed check said
		// nothing (revivalFailedLocked), and a dead path was checked
		// again every DownBackoff, never backing off.
		c.poke()
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(c.life, revivalHandshakes*c.cfg.ProbeTimeout)
	side, err := Dial(ctx, cfg)
	cancel()
	if err == nil {
		side.Close()
	}
	c.mu.Lock()
	ps := c.paths[i]
	ps.checking = false
	if ps.removed || c.life.Err() != nil {
		c.mu.Unlock()
		return
	}
	if err != nil {
		c.revivalFailedLocked(i, m)
	} else {
		c.reviveLocked(i, nil)
	}
	c.mu.Unlock()
}

// moveAwayLocked moves the connection off path failed to the best other
// path that validates, and reports whether it found one and, when not,
// which paths it probed in vain. lockSwitch is held. It probes for at most
// failoverBudget: a dead path that the client had left before it died
// (so no stall marked it down) must not hold the failover for a probe
// timeout per round; past the budget the caller dials a new connection.
func (c *Client) moveAwayLocked(ctx context.Context, failed int) (moved bool, unanswered []probed) {
	if !c.migration || c.s().conn.Context().Err() != nil {
		return false, nil
	}
	if c.backToServersPathLocked(ctx, failed) {
		return true, nil
	}
	// The best known path first (firstChoiceLocked), then validated paths
	// (a switch to them needs no probe), then the rest.
	var order []int
	if p := c.firstChoiceLocked(failed); p >= 0 {
		order = append(order, p)
	}
	for _, validated := range []bool{true, false} {
		for i, ps := range c.paths {
			if ps.validated == validated && !ps.down && !ps.removed {
				order = append(order, i)
			}
		}
	}
	fctx, cancel := context.WithTimeout(ctx, failoverBudget*c.cfg.ProbeTimeout)
	defer cancel()
	// Two rounds: a probe of a path validated earlier can fail because the
	// server has retired its connection ID since (it does at every
	// switch); the failed probe closes the path and frees its ID, and the
	// second round adds each path afresh.
	failedOnce := map[int]bool{}
	for range failoverRounds {
		tried := map[int]bool{failed: true}
		for _, p := range order {
			if tried[p] || c.paths[p].down || c.paths[p].removed || fctx.Err() != nil {
				continue
			}
			tried[p] = true
			m := c.markLocked(p)
			err := c.switchLocked(fctx, p)
			if err == nil {
				return true, nil
			}
			c.cfg.Logf("pcm: failover to %s failed: %v", c.paths[p].Name, err)
			if !c.migration {
				// The server refused migration (addPathLocked warned once):
				// no other path can take the connection, and p was not
				// unanswered.
				return false, nil
			}
			if c.cutShortLocked(ctx, p, m.out) {
				return false, unanswered
			}
			if !failedOnce[p] {
				failedOnce[p] = true
				unanswered = append(unanswered, probed{p, m})
			}
		}
	}
	return false, unanswered
}

// probed is a failover's probe of path p that went unanswered, and the
// mark it left (restUnansweredLocked judges its silence by it).
type probed struct {
	p int
	m pathMark
}

// backToServersPathLocked moves the connection, without a probe, to the
// path that carried the latest response bytes when that is another
// validated one: a server that had not yet followed the switch to the
// path that failed still sends there, and hears the client there without
// validating anything. A probe of any other path would need a connection
// ID of the client's that the server has none of while the client's
// NEW_CONNECTION_ID frames go down the dead path (quic-go's server then
// ignores the probe: every probe of a failover timed out), so this path
// is the one that works at once. It reports whether the connection moved.
func (c *Client) backToServersPathLocked(ctx context.Context, failed int) bool {
	p := c.rx.lastPath()
	if p < 0 || p == failed || p >= len(c.paths) {
		return false
	}
	ps := c.paths[p]
	if ps.down || ps.removed || !ps.validated || ps.qp == nil {
		return false
	}
	if err := c.switchToLocked(ctx, p, false); err != nil {
		c.cfg.Logf("pcm: failover to %s, where the server sends, failed: %v", ps.Name, err)
		return false
	}
	return true
}

// failoverRounds is how often a failover tries every other path: twice
// (moveAwayLocked says why), within failoverBudget.
const failoverRounds = 2

// failoverBudget is how many probe timeouts a failover may spend probing
// before it gives up the connection and dials a new one: one. Each probe
// that finds no connection ID, or a path dead since the client left it,
// times out; with a budget per probe, two rounds over two such paths held
// the stalled requests for four probe timeouts (4 s by default) and they
// failed at their 5 s deadline (TestFailoverInFakeTime/two in a row,
// under load, once). A redial races the live paths and costs a handshake.
const failoverBudget = 1

func newRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x70636d)) }
