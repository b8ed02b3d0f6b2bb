package pcm

import (
	"context"
	"math"
	"time"

	"github.com/hetquic/hetquic/pathsel"
)

// Probes configures a Client's side probes of idle paths (SideProber,
// run by an AsyncProber): out-of-band round-trip samples that let the
// selector notice an idle path that got better, and bring a path that
// failed back. They run when the client has two or more paths, Off is
// false, and the selector learns from probes (pathsel.ProbeObserver: the
// default strategy does; an external selector, as the experiment runner's,
// does its own probing). A probe never delays or fails a request.
type Probes struct {
	// Off turns the probes off.
	Off bool
	// PerSecond is the probes per second over all idle paths (default
	// pathsel.DefaultProbesPerSecond); each goes to the next idle path in
	// turn.
	PerSecond float64
	// WorkingSet is the most side connections open at once (default
	// pathsel.DefaultProbeWorkingSet, 3);
	// probing a path beyond it closes the least recently probed one, and
	// that path's next probe costs a handshake.
	WorkingSet int
	// Target is the request target of a probe (default "/bytes/0", which
	// hetquic's origin serves empty). One that answers other than 2xx, or
	// that never answers while requests do, turns the probes off with one
	// warning.
	Target string
	// Timeout bounds one probe (default 1 s): a slower one measures +Inf.
	Timeout time.Duration
}

// probeGiveUp is how many probes in a row may time out, with none answered
// since the start, while the connection itself receives, before the target
// counts as never answering: every path of a typical client tried several
// times. The other probe defaults are pathsel's (DefaultProbesPerSecond,
// DefaultProbeWorkingSet, DefaultProbeTimeoutMs, with their reasons), which
// the stationary tests' model uses too.
const probeGiveUp = 12

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
	if p.Target == "" {
		p.Target = sideTarget
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
	sp, err := NewSideProber(cfg, pr.Timeout, pr.Target, pr.WorkingSet)
	if err != nil {
		c.cfg.Logf("pcm: WARNING: side probes off: %v", err)
		return
	}
	c.probing = true
	ap := NewAsyncProber(len(c.paths), func(context.Context) (*SideProber, error) { return sp, nil })
	c.prober = ap
	go c.runProbes(ap, po)
}

// runProbes asks for a probe every 1/PerSecond, each of the next idle path
// in turn, and hands the answers to the selector; a finite answer for a
// path that is down brings it back. It ends with the connection.
func (c *Client) runProbes(ap *AsyncProber, po pathsel.ProbeObserver) {
	defer ap.Close()
	tick := time.NewTicker(time.Duration(float64(time.Second) / c.cfg.Probes.PerSecond))
	defer tick.Stop()
	done := c.life.Done()
	turn, timeouts, answered := 0, 0, false
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		for _, a := range ap.Answers() {
			if a.Err != nil {
				c.cfg.Logf("pcm: WARNING: side probes off: %v", a.Err)
				return
			}
			if math.IsInf(a.RTTms, 1) {
				timeouts++
			} else {
				answered, timeouts = true, 0
			}
			c.probeAnswer(po, a)
		}
		if !answered && timeouts >= probeGiveUp && c.s().conn.ConnectionStats().PacketsReceived > 0 {
			c.cfg.Logf("pcm: WARNING: side probes off: %d probes of %s timed out and none answered", timeouts, c.cfg.Probes.Target)
			return
		}
		if q := c.nextProbePath(&turn); q >= 0 {
			ap.Ask(q)
		}
	}
}

// nextProbePath is the next path in turn that is idle: not the active
// one, not removed, and not down before its rest ended; -1 when none is.
func (c *Client) nextProbePath(turn *int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.cfg.Now()
	k := len(c.paths)
	for range k {
		q := *turn % k
		*turn = q + 1
		ps := c.paths[q]
		if q != c.active && !ps.removed && !(ps.down && now.Before(ps.retryAt)) {
			return q
		}
	}
	return -1
}

// probeAnswer hands a probe's answer to the selector, or, for a path that
// is down, brings the path back when the probe was answered and rests it
// again (doubled) when it was not.
func (c *Client) probeAnswer(po pathsel.ProbeObserver, a ProbeAnswer) {
	c.mu.Lock()
	ps := c.paths[a.Path]
	if ps.removed {
		c.mu.Unlock()
		return
	}
	if ps.down {
		if math.IsInf(a.RTTms, 1) {
			c.markDownLocked(a.Path)
			c.mu.Unlock()
			return
		}
		ps.down = false
		c.mu.Unlock()
		c.selMu.Lock()
		c.sel.AddPath(pathsel.PathID(a.Path))
		po.ObserveProbe(pathsel.PathID(a.Path), a.RTTms)
		c.selMu.Unlock()
		return
	}
	c.mu.Unlock()
	c.selMu.Lock()
	po.ObserveProbe(pathsel.PathID(a.Path), a.RTTms) // an unknown path is no harm
	c.selMu.Unlock()
}
