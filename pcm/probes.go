package pcm

import (
	"cmp"
	"context"
	"math"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// Probes configures a Client's side probes of idle paths (SideProber,
// run by an AsyncProber): out-of-band round-trip samples that let the
// selector notice an idle path that got better, and bring a path that
// failed back. They follow pathsel.ProbeSchedule: at the start every idle
// path at once (the start-up sweep: one handshake and one probe per path,
// up to maxProbesAtOnce at once), so that the selector knows every path's
// round trip before it spends a request on each; then PerSecond, each to
// the next idle path in turn. They run when the client has two or more paths, Off is
// false, and the selector learns from probes (pathsel.ProbeObserver: the
// default strategy does; an external selector, as the experiment runner's,
// does its own probing). A probe never delays or fails a request.
type Probes struct {
	// Off turns the probes off.
	Off bool
	// PerSecond is the probes per second over all idle paths after the
	// start-up sweep (default pathsel.DefaultProbesPerSecond); each goes
	// to the next idle path in turn.
	PerSecond float64
	// WorkingSet is the most side connections open at once (default
	// pathsel.DefaultProbeWorkingSet, 3) besides those whose probe is
	// under way; probing a path beyond it closes the least recently probed
	// one, and that path's next probe costs a handshake.
	WorkingSet int
	// Target is the request target of a probe, a HEAD timed to the
	// response's head. Unset, the probe asks for "/bytes/0", which
	// hetquic's origin serves empty and other origins most often answer
	// 404, and any status measures the path (Client.headRTT says why), so
	// the default probes any origin. Set, it names a resource the origin
	// serves: an answer other than 2xx is a wrong target and turns the
	// probes off with one warning. Either, a target that never answers
	// while requests do turns them off with one warning.
	Target string
	// Timeout bounds one probe (default 1 s): a slower one measures +Inf.
	Timeout time.Duration
}

// probeGiveUp is how many probes in a row may time out, with none answered
// since the start, while the connection itself receives, before the target
// counts as never answering: every path of a typical client tried several
// times. With many paths it is twice the idle paths (probeGiveUpAfter): a
// start-up sweep into paths that are down is no verdict on the target. The
// other probe defaults are pathsel's (DefaultProbesPerSecond,
// DefaultProbeWorkingSet, DefaultProbeTimeoutMs, with their reasons), which
// the stationary tests' model uses too.
const probeGiveUp = 12

// probeGiveUpAfter is probeGiveUp for a client of k paths.
func probeGiveUpAfter(k int) int { return max(probeGiveUp, 2*(k-1)) }

func (p *Probes) setDefaults() {
	if p.PerSecond == 0 {
		p.PerSecond = pathsel.DefaultProbesPerSecond
	}
	if p.WorkingSet == 0 {
		p.WorkingSet = pathsel.DefaultProbeWorkingSet
	}
	if p.Timeout == 0 {
		p.Timeout = pathsel.DefaultProbeTimeoutMs * time.Millisecond
	}
}

// startProbes starts the side probes when they apply (Probes says when).
func (c *Client) startProbes() {
	po, ok := c.sel.(pathsel.ProbeObserver)
	pr := c.cfg.Probes
	if !ok || pr.Off || len(c.paths) < 2 || pr.PerSecond < 0 {
		return
	}
	cfg := c.cfg
	cfg.Probes.Off = true // a side connection probes nothing itself
	if cfg.QUIC != nil && cfg.QUIC.Tracer != nil {
		// The caller's tracer (qlog: `hetquic pcm get --qlog-dir`) traces
		// the connection, not the side connections, which the start-up
		// sweep dials with it.
		cfg.QUIC = cfg.QUIC.Clone()
		cfg.QUIC.Tracer = nil
	}
	sp, err := NewSideProber(cfg, pr.Timeout, pr.Target, pr.WorkingSet)
	if err != nil {
		c.cfg.Logf("pcm: WARNING: side probes off: %v", err)
		return
	}
	c.probing = true
	ap := NewAsyncProber(len(c.paths), func(context.Context) (*SideProber, error) { return sp, nil })
	c.prober = ap
	c.bg.Go(func() { c.runProbes(ap, po) })
}

// runProbes runs the probe schedule (pathsel.ProbeSchedule: the start-up
// sweep, then a probe every 1/PerSecond of the next idle path in turn),
// tells the selector which probes are under way, and hands it each answer
// as it comes back; a finite answer for a path that is down brings it
// back. It ends with the connection, or when the probes turn themselves
// off; either way the selector hears that the probes still out will not
// be answered.
func (c *Client) runProbes(ap *AsyncProber, po pathsel.ProbeObserver) {
	r := probeRun{c: c, ap: ap, po: po, out: make([]bool, len(c.paths)), giveUp: probeGiveUpAfter(len(c.paths)),
		soon: make([]askedProbe, len(c.paths)), early: time.NewTimer(time.Hour)}
	r.early.Stop()
	defer r.early.Stop()
	defer r.callOff()
	defer ap.Close()
	sched := pathsel.NewProbeSchedule(c.cfg.Probes.PerSecond)
	every := time.Duration(sched.EveryMs() * float64(time.Millisecond))
	r.turn = time.Duration(len(c.paths)-1) * every
	tick := time.NewTicker(every)
	defer tick.Stop()
	for _, q := range sched.Sweep(len(c.paths), c.probeIdle) {
		r.ask(q)
	}
	done := c.life.Done()
	for {
		select {
		case <-done:
			return
		case <-ap.Ready():
			if !r.handOver() {
				return
			}
		case <-tick.C:
			if !r.handOver() {
				return
			}
			if q := sched.Next(len(c.paths), c.probeIdle); q >= 0 {
				r.ask(q)
			}
		case <-r.early.C:
			if !r.handOver() {
				return
			}
			r.askEarly()
		}
	}
}

// probeRun is runProbes' state: the probes out, and the give-up count.
type probeRun struct {
	c                *Client
	ap               *AsyncProber
	po               pathsel.ProbeObserver
	out              []bool // asked, answer not handed over yet
	timeouts, giveUp int
	answered         bool
	// soon is the probe the selector asked of each path ahead of its
	// turn (pathsel.ProbeAsker), and early fires at the first of them;
	// turn is the period of a path's turns with every other path idle.
	soon  []askedProbe
	early *time.Timer
	turn  time.Duration
}

// askedProbe is a probe the selector asked ahead of its path's turn: due
// at at, again wait later while the path is not idle (the connection on
// it for a request), and no more after until, one turn after the answer
// that asked it, by when the path's turn has come (zero: none asked).
type askedProbe struct {
	at, until time.Time
	wait      time.Duration
}

// ask asks for a probe of path q and tells the selector it is under way,
// and the failover when it left (probeLate), before its answer can be
// handed over: both on runProbes' goroutine.
func (r *probeRun) ask(q int) {
	if !r.ap.Ask(q) {
		return
	}
	r.out[q] = true
	r.c.mu.Lock()
	ps := r.c.paths[q]
	ps.probe = r.c.markLocked(q)
	r.c.mu.Unlock()
	r.c.selMu.Lock()
	r.po.ProbeUnderWay(pathsel.PathID(q), true) // a path down is unknown: no harm
	r.c.selMu.Unlock()
}

// handOver hands the answers that came back to the selector; false when
// the probes turn themselves off (a configured target that fails, or any
// that never answers).
func (r *probeRun) handOver() bool {
	c := r.c
	for _, a := range r.ap.Answers() {
		r.out[a.Path] = false
		if a.Err != nil {
			c.cfg.Logf("pcm: WARNING: side probes off: %v", a.Err)
			return false
		}
		if math.IsInf(a.RTTms, 1) {
			r.timeouts++
		} else {
			r.answered, r.timeouts = true, 0
		}
		if d, ok := c.probeAnswer(r.po, a, r.answered); ok {
			now := time.Now()
			r.soon[a.Path] = askedProbe{at: now.Add(d), until: now.Add(r.turn), wait: d}
			r.setEarly()
		}
	}
	if !r.answered && r.timeouts >= r.giveUp && c.s().conn.ConnectionStats().PacketsReceived > 0 {
		c.cfg.Logf("pcm: WARNING: side probes off: %d probes of %s timed out and none answered", r.timeouts, cmp.Or(c.cfg.Probes.Target, sideTarget))
		return false
	}
	return true
}

// askEarly asks the probes the selector asked ahead of their turn whose
// time has come. One whose path is not idle waits again: a re-probe by
// request takes the connection to a path for a round trip or two, and
// the answer that asked it may land just then (traced on 50 / 15 / 35
// ms, TestLateBurstTakenBackSoon: the early probe was dropped, and the
// second came at the path's turn, 1.9 s after the leave).
func (r *probeRun) askEarly() {
	now := time.Now()
	for q, e := range r.soon {
		switch {
		case e.at.IsZero() || e.at.After(now):
		case now.After(e.until):
			r.soon[q] = askedProbe{}
		case r.c.probeIdle(q):
			r.soon[q] = askedProbe{}
			r.ask(q)
		default:
			r.soon[q].at = now.Add(e.wait)
		}
	}
	r.setEarly()
}

// setEarly sets the early timer to the first probe asked ahead of its
// turn, or stops it when none is.
func (r *probeRun) setEarly() {
	var first time.Time
	for _, e := range r.soon {
		if !e.at.IsZero() && (first.IsZero() || e.at.Before(first)) {
			first = e.at
		}
	}
	if first.IsZero() {
		r.early.Stop()
		return
	}
	r.early.Reset(time.Until(first))
}

// callOff tells the selector that the probes still out will not be
// answered, so that it no longer waits for them (pathsel's ProbeUnderWay),
// and the failover that none is late (probeLate).
func (r *probeRun) callOff() {
	r.c.mu.Lock()
	for _, ps := range r.c.paths {
		ps.probe = pathMark{}
	}
	r.c.mu.Unlock()
	r.c.selMu.Lock()
	defer r.c.selMu.Unlock()
	for q, out := range r.out {
		if out {
			r.po.ProbeUnderWay(pathsel.PathID(q), false)
		}
	}
}

// probeIdle says whether path q is idle: not the active one, not removed,
// and not down before its rest ended.
func (c *Client) probeIdle(q int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps := c.paths[q]
	return q != c.active && !ps.removed && !(ps.down && c.cfg.Now().Before(ps.retryAt))
}

// probeAnswer hands a probe's answer to the selector, or, for a path that
// is down, brings the path back when the probe was answered and, when
// not, judges the silence (revivalFailedLocked). A live path whose probe
// went unanswered rests too (probeLostLocked), once a probe has been
// answered (trusted: the target answers) and when its silence tells of
// it (silenceTellsLocked). It returns how soon the selector asks the live
// path's next probe, ahead of its turn (probeSoon), if it does.
func (c *Client) probeAnswer(po pathsel.ProbeObserver, a ProbeAnswer, trusted bool) (time.Duration, bool) {
	c.mu.Lock()
	ps := c.paths[a.Path]
	m := ps.probe
	ps.probe = pathMark{}
	c.probedLocked(a)
	if ps.removed {
		c.mu.Unlock()
		return 0, false
	}
	if ps.down {
		if math.IsInf(a.RTTms, 1) {
			c.revivalFailedLocked(a.Path, m)
			c.mu.Unlock()
			return 0, false
		}
		c.reviveLocked(a.Path, func() { po.ObserveProbe(pathsel.PathID(a.Path), a.RTTms) })
		c.mu.Unlock()
		return 0, false
	}
	if trusted && c.silenceTellsLocked(a.Path, m) && c.probeLostLocked(a) {
		c.mu.Unlock()
		return 0, false
	}
	c.mu.Unlock()
	c.selMu.Lock()
	defer c.selMu.Unlock()
	po.ObserveProbe(pathsel.PathID(a.Path), a.RTTms) // an unknown path is no harm
	return probeSoon(po, a.Path)
}

// probeSoon says whether the selector, having just observed a probe of
// path q, asks q's next probe ahead of its turn, and how soon
// (pathsel.ProbeAsker: the default does so when a probe leaves a path one
// short of its burst rule, whose second probe otherwise came a probe turn
// later, while the load stayed on a worse path). Called under selMu.
func probeSoon(po pathsel.ProbeObserver, q int) (time.Duration, bool) {
	pa, ok := po.(pathsel.ProbeAsker)
	if !ok {
		return 0, false
	}
	ms, ok := pa.ProbeSoon(pathsel.PathID(q))
	return time.Duration(ms * float64(time.Millisecond)), ok
}
