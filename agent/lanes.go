package agent

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/stripesched"
	"github.com/hetquic/hetquic/agent/wire"
)

// Automatic lanes. quic-go's congestion controller (NewReno/Cubic) cuts its
// window on every loss, so on a link that drops packets at random one
// connection gets about MSS/RTT × 1.22/√p whatever the link's rate: 4–5
// Mbit/s at 1 % and 30 ms, where kernel MPTCP with bbr fills 40 (issue 30,
// the matrix's lossy row). More connections on that interface (lanes,
// agent.Lanes) each get that much. ct-client therefore watches each
// interface's sending loss as ct-server reports it on every response
// (wire.HdrSendStats) and adds a lane to an interface whose loss is random
// — high while its queue is empty, so the controller and not the link is
// the limit — and retires the lanes it added once the loss has gone.
// A full link also loses packets, but only with its queue full (the RTT
// well above its minimum), where a lane would only add a flow to the same
// bottleneck. The RTT alone cannot tell them apart for sure (host delay
// and a short round trip inflate the smoothed RTT over its minimum), so
// lossy windows whose queue looks full get lanes on trial: kept only if
// the interface's delivered rate rises with them (laneGrow).
const (
	// laneCheck is how often the windows are looked at; an interface is
	// judged once its window holds laneMinPackets.
	laneCheck = 250 * time.Millisecond
	// laneMinPackets are the packets an interface must have sent for its
	// loss to be judged: at 1 % loss, 5 losses expected (a clean path has
	// none); about a second at the 4–5 Mbit/s one lane gets there.
	// Lanes change on two windows in a row that agree (laneTarget).
	laneMinPackets = 500
	// laneMinLosses: an interface with only its configured lanes has its
	// window judged as soon as it holds this many losses in at least
	// laneMinLossEvents loss events, before laneMinPackets (judge's
	// early): what a full window holds at 1 %, so its loss is then at
	// least that, over lossyAbove; a window of 500 packets at lossyAbove
	// itself holds 5 or more in 11 % of draws, two in a row in about 1 %.
	// One connection on a 2 %-lossy 10 Mbit/s path at 60 ms sends about
	// 100 packets a second (the Mathis rate), so two full windows took
	// 10 s there, twice the runner's warm-up (warmFor): on sockets it
	// never got its lanes and carried 2 % of the bytes, where kernel MPTCP
	// with bbr used most of the path (agent/RESULTS.md, 0.96 × MPTCP); at
	// 2 % five losses come in about 250 packets. Growth steps and
	// retirement still judge full windows: five losses move the rate of a
	// window too much to tell a step's gain (laneGain).
	laneMinLosses = 5
	// laneMinLossEvents: the loss events (lossEvent) an early window's
	// losses must be spread over. The count above is a loss rate's only
	// if the losses are independent draws; a queue that overflows (a slow
	// start's last round, a link whose rate fell) drops a burst at once,
	// and one burst split over two windows made them agree: a lossless
	// 20 Mbit/s 60 ms path got four lanes at 8.7 % "loss" one second into
	// TestStripeRidesRateDrop. Counting such a burst once (TCP's and
	// TFRC's loss event, RFC 5348 §5.2: losses within a round trip of the
	// event's first are one event), two events mean the loss came back
	// after the burst; random loss at 2 % on 100 packets a second gives
	// about one event a second, so it costs no time beside the five
	// losses.
	laneMinLossEvents = 2
	// lossEventRTTs: the round trips after its first look in which an
	// interface's new losses belong to the same loss event. A queue's
	// overflow drops packets for up to a round (slow start's last one)
	// and quic-go declares them lost up to about a round later (RFC 9002
	// §6.1: 3 packets later acknowledged or 9/8 RTT), so its reports
	// span about two round trips; in looks of laneCheck, at least the
	// next one (the span may straddle two).
	lossEventRTTs = 2
	// lossyAbove: loss at or above which a window counts as lossy. Reno's
	// own probing of a full drop-tail queue loses about 8/(3W²) of its
	// packets (W the window in packets): under 0.1 % from W ≈ 50 on, so
	// 0.5 % is random loss (or a tiny link, whose queue then is full).
	lossyAbove = 0.005
	// cleanBelow: loss under which the lanes added are retired
	// (hysteresis against flapping around lossyAbove).
	cleanBelow = 0.001
	// queueEmpty: a smoothed RTT at most this times the minimum means the
	// path's queue is about empty, so its losses are not the queue's:
	// lanes come on trust. Above it the loss may still be random (a 10 ms
	// path read 1.54 × in every window on fake time under -race, session
	// 22), so lanes come on trial (laneGrowth.trial).
	queueEmpty = 1.25
	// lossyLanes are the connections a lossy interface gets at once, the
	// first step. Each gets about the Mathis rate, 1.22 × MSS / (RTT ×
	// √loss), 4 Mbit/s at 1 % and 30 ms, so the matrix's 40 Mbit/s lossy
	// path would need about ten, and ct-client has no estimate of a
	// loss-limited link's capacity to say how many. Four is where session
	// 17 measured a gain on every lossy mix (agent/DESIGN.md); from there
	// laneGrow adds laneGrowStep at a time up to wire.MaxLanes while each
	// step raises the interface's delivery.
	lossyLanes = 4
	// laneGrowStep: the lanes one growth step adds. Two reach
	// wire.MaxLanes from lossyLanes in two steps, about 2 s at one step
	// per two judged windows, within the experiments' 5 s warm-up.
	laneGrowStep = 2
	// laneGain: a step must raise the interface's delivered rate by at
	// least this times what each lane it added would carry at the lanes'
	// mean rate before it. Lanes that are loss-limited each add about
	// that mean (1); on a link they fill, they only split it (0). Half
	// stands between, above the noise of a window of laneMinPackets
	// (its ~5 losses move one lane's rate, not the interface's, by half).
	laneGain = 0.5
	// laneTrialWindows: judged windows in a row with loss at or above
	// lossyAbove, the configured lanes only, before lanes come on trial
	// (laneGrowth.trial). Random loss usually reads an empty queue in two
	// in a row first (lanes on trust), and a trial judged while lanes ramp
	// up on a link one connection already half fills fails (TestLossyPathGetsLanes
	// at 30 ms: 716 packets/s on one, 1054 on four); four leaves the
	// trust rule three pairs and delays the stuck case by two windows.
	laneTrialWindows = 4
	// laneBudget bounds a client's connections, lanes included: ct-server's
	// default per-client max_conns.
	laneBudget = wire.DefaultMaxConns
	// lanePacket is the bytes of one sent packet in a window's rate
	// (laneLimit): quic-go's largest on these paths, as stripesched's
	// InitialWindow counts them; a download's packets are nearly all full.
	lanePacket = stripesched.InitialWindow / 32
)

// laneWindow is one interface's sending since it was last judged, as its
// lanes' ct-servers reported it.
type laneWindow struct {
	Sent, Lost uint64
	// SRTT is the smoothed RTT over the window, each look's report weighted
	// by the packets sent in it (laneWindow.add): the queue the window's
	// packets met, not the one at its last report. MinRTT is the latest
	// of a lane that sent.
	SRTT, MinRTT time.Duration
	// Busy is the time of the looks (laneCheck each) in which the
	// interface sent: its rate is over that, not over idle seconds
	// between downloads.
	Busy time.Duration
	// Events are the loss events that began in the window (lossEvent).
	Events int
}

// add is w with one lane's look folded in: sent packets, lost of them,
// and st, the lane's latest report. SRTT becomes the packet-weighted mean
// of the looks' reports. A download that starts after an idle second
// reads 1.3–1.4 × its minimum RTT in its first report while the queue
// takes its first window (fake time, TestLanesLossyMixes' 2 % row): as
// the window's last report that one sample made a window of random loss
// laneQueued, which broke the pair laneTarget waits for and put the
// lanes off 1.5–1.75 s, past most of the next 20 MiB (0.86 × the MPTCP
// reference in a third of the runs, 1.0–1.13 otherwise).
func (w laneWindow) add(sent, lost uint64, st wire.SendStats) laneWindow {
	if sent == 0 {
		w.Lost += lost
		return w
	}
	w.SRTT = time.Duration((float64(w.SRTT)*float64(w.Sent) + float64(st.SRTT)*float64(sent)) / float64(w.Sent+sent))
	w.Sent += sent
	w.Lost += lost
	w.MinRTT = st.MinRTT
	return w
}

// lossEvent is w after a look (the look-th, counted from 1) in which its
// interface's lanes reported lost new losses, given began, the look the
// interface's last loss event began at (0: none yet); it returns w and
// the look the last event began at now. Losses reported within
// lossEventRTTs round trips (w.SRTT, at least one look) of an event's
// first look are that event's: a queue's overflow reported over two looks
// counts once, and so does one that straddles two windows (began outlives
// them).
func (w laneWindow) lossEvent(look, began int, lost uint64) (laneWindow, int) {
	span := max(1, int(math.Ceil(float64(lossEventRTTs*w.SRTT)/float64(laneCheck))))
	if lost == 0 || (began > 0 && look-began <= span) {
		return w, began
	}
	w.Events++
	return w, look
}

// rate is w's delivered packets per busy second (0: it never sent).
func (w laneWindow) rate() float64 {
	if w.Busy <= 0 {
		return 0
	}
	return float64(w.Sent-min(w.Lost, w.Sent)) / w.Busy.Seconds()
}

// laneVerdict is what one judged window says of an interface.
type laneVerdict int

const (
	laneUnjudged laneVerdict = iota // too few packets to say
	laneLossy                       // random loss: lanes help
	laneClean                       // no loss to speak of: added lanes can go
	laneNeither                     // between the thresholds
	laneQueued                      // lossy, but with the queue full: lanes may help or only split the link
)

// judge is the verdict on window w; early (an interface with only its
// configured lanes): a window of laneMinLosses losses over at least
// laneMinLossEvents loss events is judged before laneMinPackets.
func judge(w laneWindow, early bool) laneVerdict {
	if w.Sent < laneMinPackets && (!early || w.Lost < laneMinLosses || w.Events < laneMinLossEvents) {
		return laneUnjudged
	}
	loss := float64(w.Lost) / float64(w.Sent)
	queued := w.MinRTT > 0 && float64(w.SRTT) > queueEmpty*float64(w.MinRTT)
	switch {
	case loss >= lossyAbove && !queued:
		return laneLossy
	case loss >= lossyAbove:
		return laneQueued
	case loss < cleanBelow:
		return laneClean
	}
	return laneNeither
}

// laneTarget is the pure decision for one interface: the lanes it should
// have after verdict v, given the verdict on its window before (prev), the
// lanes it has, base (those configured) and free (connections left in
// laneBudget). Lanes change only on two windows in a row that agree: a
// slow start that overflows a queue loses a burst once (seen at 1.7–6 %
// in one window on the matrix's loss-free paths), random loss persists; and
// a 1 %-lossy path shows a clean 500-packet window now and then (e^-5).
func laneTarget(v, prev laneVerdict, lanes, base, free int) int {
	switch {
	case v != prev:
		return lanes
	case v == laneLossy:
		return max(lanes, min(max(base, lossyLanes), wire.MaxLanes, lanes+free))
	case v == laneClean:
		return base
	}
	return lanes
}

// laneGrowth is an interface's lanes on trial and its growth beyond
// lossyLanes between windows.
type laneGrowth struct {
	added  int     // lanes the last step added, still to be judged (0: none)
	before float64 // the interface's delivered rate in the window before that step
	settle bool    // the next window is the step's first, the new lanes still ramping up: not judged
	capped bool    // a step (or trial) added nothing: no more until two clean windows
	trial  bool    // the step is the first, on lossy windows whose queue looked full: judged whatever the verdict
	lossy  int     // judged windows in a row, after the first, with loss at or above lossyAbove and the configured lanes only
}

// gained is whether the step g judges raised the interface's delivered
// rate to rate, with lanes now, by laneGain of the lanes' mean rate
// before it per lane it added.
func (g laneGrowth) gained(lanes int, rate float64) bool {
	perLane := g.before / float64(lanes-g.added)
	return rate-g.before >= laneGain*float64(g.added)*perLane
}

// lossyLoss is whether v's loss is at or above lossyAbove, whatever the queue.
func lossyLoss(v laneVerdict) bool { return v == laneLossy || v == laneQueued }

// laneGrow is the pure decision on an interface's lanes beyond the first
// step (laneTarget): after verdict v and the one before (prev), with
// lanes of which base configured, free connections in laneBudget and rate
// the window's delivered packets per second, the lanes it should have and
// the growth state g becomes. While the loss stays random with the queue
// empty (laneLossy twice), an interface at lossyLanes or more gets
// laneGrowStep more, up to wire.MaxLanes; the window after a step is let
// pass, and the one after that judges it: a step that raised the rate by
// less than laneGain of the lanes' mean per added lane is taken back and
// growth stops (the link, not the controllers, is the limit, or the
// lanes wait on something else). A full queue (laneQueued), loss between
// the thresholds or a mixed window holds the lanes; two clean windows
// reset everything.
//
// An interface with only its configured lanes (fewer than lossyLanes) whose
// loss is at or above lossyAbove in laneTrialWindows in a row, the queue
// looking full in some, gets lossyLanes on trial (laneTry): judged like a
// growth step but whatever the verdicts (judgeTrial), kept if the rate
// rose by laneGain of one configured connection's, else taken back with
// no more trials until two clean windows. Random loss read through an
// inflated RTT then gets its lanes; a full link pays one step of lanes
// for two windows.
func laneGrow(v, prev laneVerdict, lanes, base, free int, rate float64, g laneGrowth) (int, laneGrowth) {
	target := laneTarget(v, prev, lanes, base, free)
	switch {
	case target != lanes:
		return target, laneGrowth{}
	case g.trial:
		return g.judgeTrial(lanes, rate)
	case g.mayTry(v, prev, lanes, base, free, rate):
		if g.lossy++; g.lossy < laneTrialWindows-1 {
			return lanes, g
		}
		return laneTry(lanes, free, rate)
	case v != laneLossy || v != prev:
		// A step is judged only on random loss.
		return lanes, laneGrowth{capped: g.capped && (v != laneClean || prev != laneClean)}
	case g.settle:
		g.settle = false
		return lanes, g
	case g.added > 0 && !g.gained(lanes, rate):
		return lanes - g.added, laneGrowth{capped: true}
	}
	step := min(laneGrowStep, wire.MaxLanes-lanes, free)
	if g.capped || lanes < lossyLanes || step < 1 || rate <= 0 {
		return lanes, laneGrowth{capped: g.capped}
	}
	return lanes + step, laneGrowth{added: step, before: rate, settle: true}
}

// mayTry is whether an interface with lanes of which base configured,
// free connections left and rate delivered, after verdicts v and prev,
// counts toward a trial: it has only its configured lanes, fewer than
// lossyLanes, and lost at or above lossyAbove twice, and no trial of
// this loss failed.
func (g laneGrowth) mayTry(v, prev laneVerdict, lanes, base, free int, rate float64) bool {
	return lanes == base && lanes < lossyLanes && free > 0 && rate > 0 && lossyLoss(v) && lossyLoss(prev) && !g.capped
}

// judgeTrial is a trial's next window, whatever its verdict: the first
// passes (the lanes ramping up), the second keeps the lanes if they raised
// the rate by laneGain of one configured lane's, and takes them back
// otherwise, with no more trials. Not laneGain per lane added, as a
// growth step: four lanes on a link one connection fills to 40 % would
// have to carry 2.5 × its rate; a full link's rate does not rise at all.
func (g laneGrowth) judgeTrial(lanes int, rate float64) (int, laneGrowth) {
	switch {
	case g.settle:
		g.settle = false
		return lanes, g
	case rate-g.before < laneGain*g.before/float64(lanes-g.added):
		return lanes - g.added, laneGrowth{capped: true}
	}
	return lanes, laneGrowth{} // kept: grown from here as any lossyLanes
}

// laneTry is laneGrow's trial: an interface with lanes (all configured,
// fewer than lossyLanes) and free connections left, whose window
// delivered rate, gets up to lossyLanes, the step to be judged after a
// window's settling.
func laneTry(lanes, free int, rate float64) (int, laneGrowth) {
	target := min(lossyLanes, lanes+free)
	return target, laneGrowth{added: target - lanes, before: rate, settle: true, trial: true}
}

// laneLimit is the most connections an interface whose window is w may have
// beside the swiftest other interface, whose last judged window is fast (ok
// false: none), for a striped download to use them. Each lane is a path of
// the stripe, and a piece one holds is the reorder window's head until it
// lands, while the fast path fills the window behind it. A lane is worth
// having only while its smallest piece (MinPiece at the interface's
// delivered rate split over its lanes, after its round trip) lands no later
// than the fast path's own piece asked at the same time (its round trip and
// PieceSize at its rate): the window (stripesched's Window) has room for the
// fast path's pipeline, so such a lane holds it no longer than the fast
// path's own pieces do. This is the ECF rule Take applies to each piece,
// here applied to the split that more lanes make: lanes that share a link
// each carry less, and each piece of theirs holds the window longer. On
// sockets (120/200 + 10/50 with 1 % loss, session 34) four lanes of the
// 10 Mbit/s path delivered 509 packets a second: at a sixth of that a lane's
// MinPiece lands 0.37 s after it is asked (0.32 at a fifth), the fast path's
// own piece in 0.32 s; with six lanes the far fast path's link stood idle
// 41 % behind the window, and the download fell to 42 Mbit/s where the fast
// path alone read 84–88. Against the bytes alone (a MinPiece at the fast
// path's rate: its round trip) no lane of a path farther than a near fast
// one could grow, and growth past four had taken the matrix's lossy row from
// 0.86 to 0.99 × kernel MPTCP on sockets (agent/DESIGN.md). An interface at
// least as fast as every other has no limit: no faster path waits for its
// lanes.
func laneLimit(w, fast laneWindow, ok bool) int {
	if !ok || fast.rate() <= w.rate() {
		return wire.MaxLanes
	}
	fr := fast.rate() * lanePacket
	hold := fast.SRTT.Seconds() + float64(stripesched.PieceSize(stripesched.Path{Rate: fr}))/fr
	spare := hold - w.SRTT.Seconds()
	return max(0, int(spare*w.rate()*lanePacket/float64(stripesched.MinPiece)))
}

// capLanes is laneGrow's decision (target lanes and growth state g) for
// an interface with lanes, whose growth state was in, held to limit
// (laneLimit): a growth step or trial adds no lane past it, and a step or
// trial judged now that leaves the interface above it is taken back, as
// one that raised the rate too little is (what the interface delivers
// rose, but not what the stripe can use). The first step on random loss
// (laneTarget) is not limited: one connection's rate on a lossy path
// says little of what lossyLanes of them deliver.
func capLanes(lanes, limit, target int, in, g laneGrowth) (int, laneGrowth) {
	switch {
	case in.added > 0 && !in.settle && target >= lanes && lanes > limit:
		return lanes - in.added, laneGrowth{capped: true}
	case g.added == 0 || target <= limit:
		return target, g
	case limit <= lanes:
		return lanes, laneGrowth{capped: true}
	}
	g.added -= target - limit
	return limit, g
}

// laneDecide is the keeper's decision on an interface after verdict v on
// its window w (laneGrow's, with rate w's) held to laneLimit beside fast,
// the swiftest other interface's last judged window (ok false: none): the
// lanes it should have, its growth state after g, and the limit.
func laneDecide(v, prev laneVerdict, lanes, base, free int, w, fast laneWindow, ok bool, g laneGrowth) (int, laneGrowth, int) {
	target, next := laneGrow(v, prev, lanes, base, free, w.rate(), g)
	limit := laneLimit(w, fast, ok)
	target, next = capLanes(lanes, limit, target, g, next)
	return target, next, limit
}

// laneCounters are a lane's last HdrSendStats and the connection they came on.
type laneCounters struct {
	conn *quic.Conn
	st   wire.SendStats
}

// noteSendStats records ct-server's counters for p's connection conn.
func (p *path) noteSendStats(conn *quic.Conn, st wire.SendStats) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sendStats.conn == conn && st.Sent < p.sendStats.st.Sent {
		return // an older response's head, read late
	}
	p.sendStats = laneCounters{conn: conn, st: st}
}

// iface is the interface a lane belongs to: its name before "#k".
func iface(name string) string {
	base, _, _ := strings.Cut(name, "#")
	return base
}

// laneKeeper runs the automatic lanes until the client closes.
type laneKeeper struct {
	c      *Client
	prev   map[*path]laneCounters // each lane's counters at the last look
	window map[string]laneWindow  // interface → its sending since judged
	added  map[string][]string    // interface → names of the lanes added
	last   map[string]laneVerdict // interface → the verdict on its last window
	grow   map[string]laneGrowth  // interface → its growth beyond lossyLanes
	looks  int                    // the looks taken (check), the current one's number
	event  map[string]int         // interface → the look its last loss event began at (laneWindow.lossEvent)
	seen   map[string]laneWindow  // interface → its last judged window (laneLimit's fast path)
}

// keepLanes looks every laneCheck (ClientConfig.FixedLanes turns it off).
func (c *Client) keepLanes() {
	k := &laneKeeper{c: c, prev: map[*path]laneCounters{}, window: map[string]laneWindow{}, added: map[string][]string{},
		last: map[string]laneVerdict{}, grow: map[string]laneGrowth{}, event: map[string]int{}, seen: map[string]laneWindow{}}
	t := time.NewTicker(laneCheck)
	defer t.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
			k.check()
		}
	}
}

// check adds what each lane sent to its interface's window, judges the
// windows that are full, and adds or retires the lanes they call for.
func (k *laneKeeper) check() {
	active := k.c.activePaths()
	lanes := k.accumulate(active)
	want := make([]LocalPath, 0, len(active)+wire.MaxLanes)
	for _, p := range active {
		want = append(want, p.LocalPath)
	}
	changed := false
	for _, p := range active {
		name := iface(p.Name)
		if p.Name != name {
			continue // each interface once, at its first lane
		}
		w, added := k.window[name], k.added[name]
		v := judge(w, len(added) == 0)
		if v == laneUnjudged {
			continue
		}
		fast, ok := k.swiftest(name)
		target, g, limit := laneDecide(v, k.last[name], lanes[name], lanes[name]-len(added), laneBudget-len(want), w, fast, ok, k.grow[name])
		k.last[name], k.grow[name], k.seen[name] = v, g, w
		delete(k.window, name)
		for ; lanes[name] < target; lanes[name]++ {
			lp := p.LocalPath
			lp.Name = freeName(name, want)
			want = append(want, lp)
			k.added[name] = append(k.added[name], lp.Name)
			k.c.cfg.Log.Info("path loses packets at random; another connection on it", "path", name, "lane", lp.Name, "loss", lossOf(w), "rate_pps", int(w.rate()),
				"trial", g.trial, "limit", limit)
			changed = true
		}
		if n := min(lanes[name]-target, len(added)); n > 0 {
			gone := added[len(added)-n:]
			want = slices.DeleteFunc(want, func(lp LocalPath) bool { return slices.Contains(gone, lp.Name) })
			k.added[name] = added[:len(added)-n]
			k.c.cfg.Log.Info("path's added connections retired", "path", name, "lanes", n, "loss", lossOf(w), "rate_pps", int(w.rate()),
				"why", retireWhy(v, lanes[name] > limit), "limit", limit)
			changed = true
		}
	}
	if changed {
		if err := k.c.ReloadPaths(want); err != nil {
			k.c.cfg.Log.Warn("lanes not changed", "err", err)
		}
	}
}

// swiftest is the last judged window of the interface other than name
// that delivered the most (ok false: none judged yet).
func (k *laneKeeper) swiftest(name string) (fast laneWindow, ok bool) {
	for n, w := range k.seen {
		if n != name && (!ok || w.rate() > fast.rate()) {
			fast, ok = w, true
		}
	}
	return fast, ok
}

// accumulate adds each lane's sending since the last look to its
// interface's window, with the loss events that began in it, and counts
// each interface's lanes; it forgets lanes that are gone, added lanes a
// reload (SIGHUP) removed and the judged windows of interfaces gone.
func (k *laneKeeper) accumulate(active []*path) map[string]int {
	lanes, now, names, busy, lost := map[string]int{}, map[*path]laneCounters{}, map[string]bool{}, map[string]bool{}, map[string]uint64{}
	k.looks++
	for _, p := range active {
		p.mu.Lock()
		cur := p.sendStats
		p.mu.Unlock()
		now[p], names[p.Name] = cur, true
		name := iface(p.Name)
		lanes[name]++
		old, ok := k.prev[p]
		if !ok || old.conn != cur.conn || cur.st.Sent < old.st.Sent {
			continue // a new connection: it counts from now
		}
		sent, l := cur.st.Sent-old.st.Sent, cur.st.Lost-min(old.st.Lost, cur.st.Lost)
		k.window[name] = k.window[name].add(sent, l, cur.st)
		busy[name] = busy[name] || sent > 0
		lost[name] += l
	}
	k.prev = now
	for name, l := range lost {
		k.window[name], k.event[name] = k.window[name].lossEvent(k.looks, k.event[name], l)
	}
	for name := range busy {
		w := k.window[name]
		w.Busy += laneCheck
		k.window[name] = w
	}
	for name, added := range k.added {
		k.added[name] = slices.DeleteFunc(added, func(n string) bool { return !names[n] })
	}
	for name := range k.seen {
		if !names[name] {
			delete(k.seen, name)
		}
	}
	return lanes
}

// freeName is the first lane name "NAME#k" that want lacks.
func freeName(name string, want []LocalPath) string {
	for i := 2; ; i++ {
		n := fmt.Sprintf("%s#%d", name, i)
		if !slices.ContainsFunc(want, func(lp LocalPath) bool { return lp.Name == n }) {
			return n
		}
	}
}

// lossOf is w's loss as a fraction, for the log.
func lossOf(w laneWindow) float64 {
	if w.Sent == 0 {
		return 0
	}
	return float64(w.Lost) / float64(w.Sent)
}

// retireWhy says in the log why lanes went after verdict v; over: the
// interface had more than laneLimit.
func retireWhy(v laneVerdict, over bool) string {
	switch {
	case v == laneClean:
		return "the loss has gone"
	case over:
		return "more lanes than a striped download can use beside a faster path"
	}
	return "the last lanes added raised the delivered rate too little"
}
