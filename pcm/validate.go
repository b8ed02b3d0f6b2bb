package pcm

import (
	"errors"
	"math"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/pathsel"
)

// How long a switch waits for its path's validation.
//
// A switch holds every request that arrives meanwhile (begin), so the
// wait for its probe is paid by all of them. A path the client left
// healthy can die while idle, and nothing shows it: no request waits on
// it to stall. The side probes show it one probe timeout later at best,
// and the selector, which remembers the path as the best, may ask for it
// before. A switch back to it then held every request for the whole
// ProbeTimeout (1 s), and a backlog that large had not drained on the
// path the connection stayed on when that one was cut in turn: on
// TestTwoCutsOnSlowPaths (110 / 130 / 150 ms, the first cut landing on
// the path being left), 3.4–3.7 s for the longest request against its
// 2 s bound.
//
// A validation is one round trip of the new path (PATH_CHALLENGE out,
// PATH_RESPONSE back: RFC 9000 §8.2), and the side probes measure that
// round trip on a side connection of that very path. So a path whose
// latest side probe answered waits validateRTTs of that answer, at least
// validateFloor, at most ProbeTimeout; one never answered waits
// ProbeTimeout, as before. A path that misses the wait fails the switch
// as a timeout did (it rests, and the side probes bring it back when one
// answers); the requests go where the connection is.
const (
	// validateRTTs: three round trips, the margin RFC 9000 §8.2.4 gives a
	// validation (three PTOs), here of a round trip measured on the
	// path itself: room for a lost PATH_CHALLENGE's retransmission
	// (quic-go resends it after a round trip's worth of PTO) and for a
	// round trip that grew since the probe.
	validateRTTs = 3
	// validateFloor: a loaded host's scheduling, a slow server's, and
	// memnet's tiny round trips must not fail a validation of a live
	// path. At 100 ms, in one -race run of the whole package on a loaded
	// two-core host, TestInteropQh3's client never moved: its dial landed
	// on path 1, and no switch to another loopback path succeeded, the
	// mark of validations that qh3's server (Python) answered late (not
	// reproduced at will: 0 of 6 under a busy loop on both cores at
	// 250 ms).
	// It costs only paths under 83 ms, whose switch to a dead path holds
	// requests that long before they go where the connection is.
	validateFloor = 250 * time.Millisecond
)

// validateWait is how long a switch to path p waits for its validation;
// c.mu is held.
func (c *Client) validateWait(p int) time.Duration {
	r := c.paths[p].probedRTT
	if r <= 0 {
		return c.cfg.ProbeTimeout
	}
	return min(c.cfg.ProbeTimeout, max(validateFloor, validateRTTs*r))
}

// probedLocked records a side probe's answer for validateWait: the round
// trip of an answered one. A lost probe (+Inf) leaves the last answer: a
// path that answered before is given its round trip's wait, not the full
// ProbeTimeout, and the selector heard the loss itself.
func (c *Client) probedLocked(a ProbeAnswer) {
	if math.IsInf(a.RTTms, 1) || a.RTTms <= 0 {
		return
	}
	ps := c.paths[a.Path]
	ps.probedRTT = time.Duration(a.RTTms * float64(time.Millisecond))
	ps.knownRTT, ps.probedAt = ps.probedRTT, c.cfg.Now()
}

// The evidence rule. A probe's silence — a side probe, a failover's
// probe, a switch's validation, a revival check — tells of its path only
// when the server ran meanwhile (serverRanSinceLocked) and did not answer
// on that path meanwhile (answeredOnSinceLocked): a path that carried a
// response, or answered another probe, since the probe left is alive,
// however its probe fared (a loss burst, a late answer). Every probe that
// can rest a path, or keep one resting, is judged by silenceTellsLocked,
// from the pathMark it left.

// pathMark is what a probe of path p leaves as it goes out: when, the
// connection then and what it had heard of the server (Client.heard),
// and the bytes the client had received on p (rxLedger).
type pathMark struct {
	out   time.Time
	sess  *session
	heard uint64
	rx    int64
}

// markLocked is a probe of path p leaving now; c.mu is held.
func (c *Client) markLocked(p int) pathMark {
	return pathMark{out: c.cfg.Now(), sess: c.s(), heard: c.heard(), rx: c.rx.of(p)}
}

// silenceTellsLocked says whether the silence of a probe of path p that
// left m behind tells of p (the evidence rule, above); c.mu is held.
func (c *Client) silenceTellsLocked(p int, m pathMark) bool {
	return c.serverRanSinceLocked(m) && !c.answeredOnSinceLocked(p, m)
}

// answeredOnSinceLocked says that the server answered on path p since m:
// a side probe of p came back, or the client received bytes on p (a
// response's, or in rebind mode any datagram). Before, a failover's probe
// lost in a burst, or a revival check that met a paused server, rested a
// path that answered all along. c.mu is held.
func (c *Client) answeredOnSinceLocked(p int, m pathMark) bool {
	return c.paths[p].probedAt.After(m.out) || c.rx.of(p) > m.rx
}

// serverRanSinceLocked says that the server answered something, on any
// path, since m: an ACK on the connection, a new connection (its
// handshake was answered: a failover's redial), or another side probe's
// answer. A server that does not run answers on no path (stall.go's
// failover says the same of the connection's paths): at load 18-28
// (2026-12-01, TestLoadCutAioquic on main) a side probe of a healthy
// path went unanswered for its 1 s while aioquic's event loop did not
// run, and the path rested through the rest of the test in 5 of 16
// subtests. A path that dies while the server runs loses its probe with
// the others' answered, or the connection's requests acknowledged, as on
// TestTwoCutsOnSlowPaths and TestIdlePathDiesQuietly. c.mu is held.
func (c *Client) serverRanSinceLocked(m pathMark) bool {
	if c.s() != m.sess || c.heard() != m.heard {
		return true
	}
	for _, ps := range c.paths {
		if ps.probedAt.After(m.out) {
			return true
		}
	}
	return false
}

// validation is when a switch's validation of its path on the connection
// began (ran), and what the connection had heard then (Client.heard).
type validation struct {
	ran bool
	pathMark
}

// validatesLocked says whether a switch to path p validates it first
// (switchToLocked; probe false: only a path never validated); c.mu is
// held.
func (c *Client) validatesLocked(p int, probe bool) bool {
	return c.multi == nil && (!c.paths[p].validated || probe && !c.cfg.FastSwitch)
}

// startValidationLocked records the start of a switch's validation and,
// with no request in flight, pokes the server on the path the connection
// is on (Client.poke); c.mu is held.
//
// A failed validation rests its path only when the server answered
// something while it waited (failureTellsLocked), as a lost side probe
// does (serverRanSinceLocked): a server that does not run answers on no
// path, and a healthy path would rest for DownBackoff
// (TestServerPauseRestsNoSwitchedPath: a 1.5 s pause of the server
// during a switch rested the path in 10 of 10 runs before). A switch
// happens when no request waits for its response head (Client.begin), so
// the connection often has nothing the server would acknowledge during
// the wait: without the poke a dead path whose switch failed never
// rested, and the selector would ask for it again, each switch holding
// requests for the validation's wait (TestSwitchIntoDeadPathRests: 10 of
// 10 idle clients' switches into a cut path left it live). The poke
// draws an ACK there from a running server within a round trip of the
// connection's path and the server's ACK delay, and lengthens no wait.
// That answer comes within the wait (at least validateFloor) unless the
// connection's path is slower than the wait; then a dead path is left
// to the side probes (probeLostLocked). With requests in flight there
// is no poke: their packets and responses draw the server's answer, and
// a poke under load (a drain's move) delayed the selector's first sample
// of the new path past heardWithin (TestMoveUnderLoadSamplesItsPath
// under -race: 281 ms in 5 of 40 runs with it, 0 of 40 without).
func (c *Client) startValidationLocked(p int) validation {
	v := validation{ran: true, pathMark: c.markLocked(p)}
	if len(c.flights) == 0 {
		c.poke()
	}
	return v
}

// failureTellsLocked says whether a switch to path p whose validation v
// failed tells of p: its silence does (silenceTellsLocked;
// startValidationLocked says why), or it made no validation (its own
// Switch failed). c.mu is held.
func (c *Client) failureTellsLocked(p int, v validation) bool {
	return !v.ran || c.silenceTellsLocked(p, v.pathMark)
}

// probeLostLocked rests idle path a.Path when its side probe went
// unanswered for the probe timeout (+Inf), and says whether it did. A
// path the client left healthy and that died while idle shows nowhere
// else: the selector, which remembers it as it was, may ask for it again,
// and that switch holds every request until its validation fails. On
// TestTwoCutsOnSlowPaths (110 / 130 / 150 ms, Transport) the side probe
// of the cut path came back unanswered 340 ms before the selector asked
// for it; the switch then held the requests for the validation's wait
// while the path they went on instead was cut in turn. It rests as a
// path whose switch failed does (markDownLocked: DownBackoff, doubling),
// and comes back when a later side probe is answered (probeAnswer). The
// caller trusts the loss only once some probe has been answered: a
// target that never answers says nothing about the paths (probeGiveUp).
// During a switch (c.switching) nothing rests: the switch may be probing
// that very path on the connection, with c.mu released, and its own
// validation settles it.
func (c *Client) probeLostLocked(a ProbeAnswer) bool {
	ps := c.paths[a.Path]
	if !math.IsInf(a.RTTms, 1) || a.Path == c.active || ps.down || ps.removed || c.switching != nil {
		return false
	}
	c.cfg.Logf("pcm: the side probe of %s went unanswered; it rests until one is answered", ps.Name)
	c.markDownLocked(a.Path)
	return true
}

// choose is the selector's path for a request, or -1 (wherever the
// connection is) when every path is down: the selector then has none
// (pathsel.ErrNoPaths), and a request is never failed for want of a path.
// The connection's own path stays usable until the stall detector finds
// it dead, and a redial brings the path it lands on back to the selector.
// Before, such a request failed with ErrNoPaths: on TestTwoCutsOnSlowPaths
// with the first cut 160 ms into the load, a false stall of the one live
// path left none, and 288 of 500 requests failed in the 110 ms before the
// redial's path came back.
//
// From a failover's start until the burst it released has landed
// (stayAfterFailover) the selector is not asked either: the request goes
// where the connection is, -1 too.
func (c *Client) choose() (int, error) {
	if p, stay := c.stayAfterFailover(); stay {
		return p, nil
	}
	c.selMu.Lock()
	p, err := c.sel.Choose()
	c.selMu.Unlock()
	if errors.Is(err, pathsel.ErrNoPaths) {
		return -1, nil
	}
	return int(p), err
}

// stayAfterFailover says where a request the selector would choose for
// goes while a failover's stay lasts, and whether it lasts: where the
// connection is (-1) from the failover's start until the requests it
// ended and held (its burst: burstLandingLocked) have landed on the path
// it moved to, then on that path as a choice, credited, until one such
// sample has come back (staySampled). The failover's choice is the best
// live path it knows (firstChoiceLocked); the selector's at that moment
// is no better informed than before the cut, since the burst's responses
// give it no sample, and it returns a path it has no sample of before any
// other (pathsel.Selector). Asked during the failover, the replays took
// that path: on TestHeldOutCuts' tenfold row (250 / 25 / 300 ms, the
// 25 ms one cut) they moved the connection from 250 ms to 300 ms 0.55 s
// after the failover, where the backlog waited again (longest request
// 2.3 s, bound 2 s). Asked as soon as the burst had landed, before any
// response of the new path counted, it chose from samples older than the
// cut: a few that a burst had inflated (5.5 × the 110 ms path's round
// trip) sent TestBestLiveAfterBunchedTry's client to the 150 ms path for
// good (TestStaySamplesItsPath). The stay never holds an explicit path
// (GetOn) or a pin (wantedLocked), which do not ask the selector. The
// burst's window ends a stall timeout after its followSettle at the
// latest, and the wait for a sample one more stall timeout later (a path
// that answers nothing in that time has failed over again), so no slow
// response prolongs the stay. Nor does the wait for a sample outlast the
// burst when the failover's own rule would now choose another path
// (firstChoiceLocked), as when one resting at the failover came back
// since, measured faster than the path the stay holds.
// On TestHeldOutCuts' gen3721/k4/0 (158 / 109 / 70 ms, the 70 ms path
// resting after a lost probe, the 109 ms one cut) the 70 ms path was back
// 0.19 s after the failover to the 158 ms one, and the wait for that
// path's first sample held the load there 0.17–0.35 s more: share 0.49 in
// about 1 run in 50 (TestStayEndsForReturnedBest).
func (c *Client) stayAfterFailover() (int, bool) {
	if !c.afterFailover.Load() {
		return 0, false // the common case: an atomic load
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	if c.failingOver || c.burstLandingLocked(now) {
		return -1, true
	}
	sampleBy := c.lastBusySwitch.Add(c.burstSettleLocked() + 2*c.stallTimeout())
	if !c.staySampled && now.Before(sampleBy) && c.firstChoiceLocked(-1) == c.active {
		return c.active, true
	}
	c.afterFailover.Store(false)
	return 0, false
}

// stallDeviation is the round-trip deviation in the stall detector's PTO
// (stallWaits): quic-go's, at most 1/deviationCap of the smoothed round
// trip. A move starts the connection's RTT estimator again (RFC 9000
// §9.4), and its first sample sets the deviation to half the round trip
// (RFC 9002 §5.3), which then shrinks by a quarter a sample: for the
// first round trips after a move the PTO is three round trips, and the
// detector, which waits a PTO to poke and pokeWaits PTOs for the poke's
// ACK, found a cut path only after 9 of them. On TestCutsAroundATry (the
// cut 150 ms after a move to the 150 ms path: deviation 56 ms) that was
// 1.35 s of silence, and the backlog it held had not drained when the
// second cut came (3.7–4.1 s for the longest request, bound 2 s); with a
// cap of a quarter 1.7–2.1 s (-race), of an eighth 1.55–1.87 s.
//
// The cap never hides a deviation the latest sample shows: on a path whose
// round trip grew (TestNoFalseStallWhileServerThinks: 400 ms after a
// handshake at 20 ms, one sample in) the smoothed round trip lags at a
// fraction of it, and an eighth of that made a live path's poke wait less
// than one round trip (2 false stalls in 3 of 10 -race runs). With a
// ptoDeviations-th of the growth LatestRTT − SmoothedRTT as a floor the
// PTO is never below the latest sample (plus the ACK delay); right after
// a move the two are equal (the estimator's first sample), and the cap
// holds.
//
// The floor is that, not the whole growth: the PTO multiplies the
// deviation by ptoDeviations, and a floor of the whole growth made it
// 4 × latest − 3 × smoothed, not the latest. One late sample — an ACK that
// waited in the socket while a loaded host did not run the process, as it
// does every few seconds at load 10-15 — then stretched the detector's
// waits fourfold: a cut right after one, with a smoothed 132 ms and a
// latest 604 ms, was poked only after 2.05 s of silence and would have been
// given up after 6 s: 80 of the row's 106 GETs, each with a 5 s timeout,
// ran out first (pcm/measure's TestCutsLoseNoRequest, two cuts in a row,
// -race under a 0.4-CPU quota at load 15, 2026-12-02; loadcut34's notes).
func stallDeviation(st quic.ConnectionStats) time.Duration {
	grown := max(st.LatestRTT-st.SmoothedRTT, 0) / ptoDeviations
	return max(min(st.MeanDeviation, st.SmoothedRTT/deviationCap), grown)
}

// ptoDeviations is how many round-trip deviations a probe timeout allows
// (RFC 9002 §6.2.1: smoothed_rtt + max(4 × rttvar, kGranularity) +
// max_ack_delay).
const ptoDeviations = 4

// deviationCap bounds stallDeviation at an eighth of the round trip: the
// PTO's 4 × deviation is then at most half a round trip, and a poke waits
// at most 3 round trips and two ACK delays for its ACK. A live path whose
// ACK comes later than that, within pokeWaits PTOs of a poke, is one
// whose round trip tripled at once; failing it over costs a move, not a
// request (the stall replays them).
const deviationCap = 8
