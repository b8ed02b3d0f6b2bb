package pathsel

import (
	"fmt"
	"math"
	"slices"
)

// adaptive is hetquic's default (strategy hetquic): PSA's evaluation and
// optimistic bound (PCM journal Eq. 18–19) made to track a changing network
// and to pay for exploration knowingly. Per path it keeps a long window of
// log-samples, and it adds three things to PSA:
//
//  1. A confidence width consistent with the objective and the window. The
//     evaluation r = a·E + b·σ is estimated from the path's n samples; the
//     mean's error is about σ/√n and the standard deviation's about
//     σ/√(2n), so the width is
//
//     w_k = (a + b/√2)·σ_k·sqrt(2 ln M / n_k),
//
//     with M the samples in memory over all paths (the window's horizon, not
//     the rounds so far, so the width shrinks as a path's window fills and
//     never grows with time: the T of Eq. 19 read as SW-UCB reads it).
//
//  2. Change detection on every path (a GLR-style two-sample test on the
//     log-samples, as in the change-point bandits CUSUM-UCB and GLR-UCB of
//     Liu et al. 2018 and Besson et al. 2022): when the last m samples (m =
//     4, 8, 16) differ from the older ones by more than DetectZ standard
//     errors and by more than minShift, the older samples are dropped; a
//     single sample far *below* the path's window (a re-probe that finds an
//     idle path improved) resets the path at once. The active path that
//     degrades is left within a few rounds; an idle path that improved is
//     kept from its first fresh sample.
//
//  3. A re-probe bonus that grows with the age of a path's samples (the
//     restless-bandit view: an unobserved path may have changed):
//
//     β_k = r_min · age_k / (τ·(K − 1)),
//
//     with r_min the best evaluation, age_k the rounds since path k's last
//     sample and τ = ReprobeRounds. Path k is re-probed when β_k covers its
//     gap to the current path plus the hysteresis (the price of leaving the
//     current path), i.e. after about τ(K−1)·(gap_k/r_min + h) rounds: the
//     farther behind a path was, the longer it rests, and each idle path
//     costs at most r_min/(τ(K−1)) per round whatever its gap — in all at
//     most 1/τ of the best path's evaluation per round, however many paths
//     there are. A path that improved while idle is found within that
//     many rounds.
//
//     With ReprobeBackoff > 0 the period of path k is τ·2^j_k instead of τ
//     (the restless bandit that learns the change rate): each re-probe whose
//     sample the change test below finds consistent with the path's window
//     doubles it (j_k + 1, at most ReprobeBackoff), and a change detected on
//     any path sets every j back to 0. On a stationary set re-probes then
//     cost O(log T) instead of O(T); the price is that an idle path's
//     improvement is found only after a period that has grown with the
//     rounds since the last change. Off in Default (DefaultReprobeBackoff).
//
//  4. Out-of-band probes (ObserveProbe), where the caller sends them: a
//     probe's RTT is no task sample, but it tells whether an idle path
//     changed. One whose RTT fell is tried again once, and so is one
//     whose task window lies staleRatio above its probes (staleWindow),
//     or burstRatio above them if a loss burst left it (burstWindow,
//     whose second probe it asks burstRecheck round trips after the
//     first: ProbeSoon);
//     one whose RTT is otherwise unchanged ages ProbeStretch times slower
//     (its re-probes by request grow that much rarer); one whose RTT rose
//     is not re-tried for its age until it has aged again. The re-probe
//     budget (1/τ of r_min per round) is then shared only among the idle
//     paths that probes do not vouch for (not probedOK; K − 1 of them without
//     probes): β_k = r_min·age_k/(τ·U), U their number. A path whose
//     probes cannot see its change (a lossy one whose loss goes away) is
//     re-probed by request as often as if it were the only idle path.
//     Measured: without the sharing, κ = 0.75 and ProbeStretch 100 left a
//     held-out set whose idle path's 5 % loss goes away at 1.128 × the
//     oracle; with it, 1.075 (the bar is 1.10).
//
//  5. A probe floor (probeFloor): a task takes at least its path's round
//     trip, so an idle path's evaluation is at least a times the lower
//     confidence bound of its probes' RTT. The floor raises that path's
//     index, never lowers one: it decides exploration only (which idle
//     paths a re-probe or a fallen probe may try, and in which order
//     untried probed paths are tried), never which path is exploited.
//
// Index: I_k = r_k − w_k − β_k, raised to the floor of an idle path, the
// smallest wins; a path with neither a task sample nor a probe goes first
// (one with probes but no task sample has its floor as its index). Hysteresis as PSA's: stay unless another index is lower by
// more than that fraction of the current path's r (only on a current path
// with two samples or more: otherwise the last path of the first tries,
// often the slowest, was held for another round; measured, the rule cut
// pcm-eight-paths' regret from 1.55× Thompson sampling's to 1.28×) —
// unless another path (with two samples or more) is better with
// confidence,
//
//	r_k + κ·w_k < r_c − κ·w_c  (κ = ConfidentSwitch; ProbeConfidentSwitch
//	                           once probes arrive),
//
// then the lowest such r_k + κ·w_k is taken. The margin a switch must clear
// is thus min(h·r_c, κ·(w_k + w_c)), which shrinks as the windows fill: the
// hysteresis keeps a switch from being paid for a gain that may be noise,
// but cannot hold the default for ever on a path a little worse than the
// best (a fixed margin's linear regret).
type adaptive struct {
	paths      []*apath
	obj        Objective
	window     int
	reprobe    float64 // τ; 0: no re-probe bonus
	backoffMax int     // most doublings of a path's re-probe period
	detectZ    float64 // 0: no change detection
	hysteresis float64
	c          float64 // scale of the confidence width (Config.C, default 1)
	round      int
	current    *apath
	confident  float64 // κ; 0: the hysteresis always applies
	probeKappa float64 // κ once probes arrive (probed)
	probed     bool    // ObserveProbe has been called with probes on
	probes     bool    // learn from ObserveProbe
	probeZ     float64 // the probe change test's threshold
	stretch    float64 // how much slower a probed path ages
}

// apath is one path's memory: the window of its task samples, the window
// of its probe RTTs, and when it was last looked at.
type apath struct {
	pathState
	logWindow           // task samples (TCT)
	probes    logWindow // out-of-band probe RTTs while the path was idle
	last      int       // round of the last task sample
	// probedOK says that a probe since the last task sample found the
	// path's RTT unchanged: its re-probe bonus then grows ProbeStretch
	// times slower (a probe sees the RTT, not the rate or the loss, so it
	// slows the re-probes of an idle path, never stops them).
	probedOK bool
	lost     int // probes timed out in a row
	// probeLosses counts the probes lost since the probe window began.
	probeLosses int
	// backoff is how many times the path's re-probe period has doubled:
	// once per re-probe that found it unchanged, back to 0 on any change.
	backoff int
	// retry says that a probe found the path's RTT fallen since its last
	// task sample: it is tried once, as soon as its probe floor allows,
	// and that task says whether the path changed (Observe).
	retry bool
	// underWay says that a probe of the path was sent and has not been
	// answered (ProbeUnderWay): a path with no task sample and no probe
	// waits for that answer rather than take a request (waits).
	underWay bool
	// staleBy says that the pending retry was asked because the path's
	// task window lies that ratio above its probes (staleRatio for any
	// window, staleWindow; burstRatio for one a burst raised,
	// burstWindow), not because its RTT fell: the try's task decides by
	// the same ratio. 0: not a stale retry.
	staleBy float64
	// raised says that the window is what an upward change left (its last
	// few samples, or what later changes left of them while it held
	// burstSamples at most: markBurst), and before is the log-mean of the
	// samples the first such change forgot: a loss burst's, if the path's
	// probes then find it as before (burstWindow).
	raised bool
	before float64
	// soon says that the probe ObserveProbe last recorded left the path
	// one probe short of the burst rule (burstShort): ProbeSoon asks the
	// next one burstRecheck round trips later, not at the path's turn.
	soon bool
	// staleTries counts the stale retries whose task found the window
	// right since the path's samples last changed; staleNext is the
	// round before which no other is asked (staleWait, doubled per try).
	staleTries, staleNext int
}

// logWindow is a window of log-samples in a ring (buf grows to the window,
// then wraps at start), with running sums so that an estimate costs O(1)
// whatever the window.
type logWindow struct {
	buf   []float64
	start int      // the oldest sample once buf is full
	sum   float64  // Σ ln x over the window
	sumSq float64  // Σ (ln x)²
	wraps int      // samples replaced since the sums were last recomputed
	est   estimate // cached until the window changes
	estOK bool
}

// n is the number of samples in the window.
func (p *logWindow) n() int { return len(p.buf) }

// recent returns the i-th most recent log-sample (i = 0: the last).
func (p *logWindow) recent(i int) float64 {
	return p.buf[(p.start+len(p.buf)-1-i)%len(p.buf)]
}

// Change detection constants.
const (
	// detectMinOld is the fewest older samples a change is tested against:
	// below it the older samples' spread is not known well enough.
	detectMinOld = 8
	// minShift is the smallest change of the mean log-sample (≈ 5 %) worth
	// acting on: a smaller one is not worth forgetting a window for.
	minShift = 0.05
	// sigmaFloor bounds the log-sample spread from below (≈ 2 %), so that
	// a path that measured perfectly steady does not reset on rounding
	// noise.
	sigmaFloor = 0.02
)

// detectLens are the recent run lengths m tested for a change: short ones
// react fast to large changes, long ones catch small ones and slow drift.
var detectLens = [...]int{4, 8, 16}

func newAdaptive(cfg Config) *adaptive {
	return &adaptive{
		obj:        Objective{A: *cfg.A, Spread: cfg.Spread},
		window:     *cfg.Window,
		reprobe:    *cfg.ReprobeRounds,
		backoffMax: *cfg.ReprobeBackoff,
		detectZ:    *cfg.DetectZ,
		confident:  *cfg.ConfidentSwitch,
		probeKappa: *cfg.ProbeConfidentSwitch,
		hysteresis: *cfg.Hysteresis,
		c:          cWidth(cfg.C),
		probes:     *cfg.Probes,
		probeZ:     *cfg.ProbeZ,
		stretch:    *cfg.ProbeStretch,
	}
}

// cWidth is the width scale: C when fixed, else 1 (UCB1's sqrt(2 ln M/n)).
// Default sets DefaultC.
func cWidth(c CParam) float64 {
	if c.Mode == "fixed" {
		return c.Value
	}
	return 1
}

func (s *adaptive) AddPath(id PathID) (err error) {
	s.paths, err = addState(s.paths, &apath{pathState: pathState{id}, logWindow: logWindow{buf: make([]float64, 0, min(s.window, 64))}})
	return err
}

func (s *adaptive) RemovePath(id PathID) error {
	paths, p, err := removeState(s.paths, id)
	if err != nil {
		return err
	}
	if s.current == p {
		s.current = nil
	}
	s.paths = paths
	return nil
}

func (s *adaptive) Observe(id PathID, x float64) error {
	p, err := observed(s.paths, id, x)
	if err != nil {
		return err
	}
	y := math.Log(x)
	// A re-probe: the first sample of a path that has been idle.
	reprobe := s.current != nil && p != s.current && p.n() > 0
	changed, unchanged := false, false
	if p.retry {
		changed = p.tried(y, s.probeZ, s.round)
	}
	if s.detectZ > 0 {
		low, high := p.surprise(y, s.detectZ)
		if low {
			p.keepLast(0)
		}
		changed, unchanged = changed || low, !changed && !low && !high
	}
	p.push(y, s.window)
	raised, before := false, 0.0
	if s.detectZ > 0 {
		if d := p.detectShift(s.detectZ); d != 0 {
			changed = true
			raised, before = d > 0, p.logMean()-d
		}
	}
	if changed {
		// The path's RTT while it was idle says nothing of it now.
		p.probes.keepLast(0)
		p.probeLosses = 0
		p.staleTries, p.staleNext = 0, 0
		p.markBurst(raised, before)
	}
	p.probedOK = false
	switch {
	case changed:
		for _, q := range s.paths {
			q.backoff = 0
		}
	case reprobe && unchanged:
		p.backoff = min(p.backoff+1, s.backoffMax)
	}
	s.round++
	p.last = s.round
	s.current = p
	return nil
}

// ObserveProbe learns from an out-of-band probe of idle path id (rttMs: its
// round trip, +Inf when it timed out). A probe sees the path's RTT, not its
// rate or loss, so it is no task sample: it only says whether the idle
// path changed (the probe window's change test, as detectShift on task
// samples, with its own threshold ProbeZ, and a single probe far below
// the window):
//
//   - RTT fell: the path is tried once (retry: its index is its probe
//     floor, computed from the fallen probe alone, so it goes first unless
//     even that round trip is slower than the current path's tasks), and
//     that task decides: if it fell too (fell, by ProbeZ) the path's task
//     samples are forgotten and it is learnt afresh, else it keeps them
//     and rests again. Measured on generated stationary sets with the
//     library's probes (pathsel/stationary_test.go), forgetting the
//     samples at the probe's word, as before, left 16 paths at 1.066 ×
//     the oracle (held-out 1.074), against 1.062 (1.068) with this rule
//     and the task spread in probeShift: jitter taken for a fall, and a
//     jittery path learnt again over several tries. An earlier rule that
//     tried the path only when the fall could make it better than the
//     current path (its evaluation scaled by the fall) missed the change
//     whenever the current path's own change was not yet detected
//     (pcm-window's regret 2.1× the unconditional rule's); the floor is
//     far looser (a round trip, a times, at ProbeZ below its level);
//   - RTT rose, or two probes in a row timed out (the path may be down):
//     its re-probe bonus starts again from zero, so it is not re-tried for
//     nothing;
//   - unchanged, but staleRatio below the path's task window, or
//     burstRatio below a window a loss burst left (staleRetry,
//     burstWindow): tried once as after a fall, and that task forgets
//     the window if it too lies that ratio below it; one probe short of
//     the burst rule's burstProbes, it asks the next soon (ProbeSoon);
//   - unchanged: its re-probe bonus grows ProbeStretch times slower until
//     its next task sample — unless the path has lost probes since its
//     probe window began: then its task times are made by loss as much as
//     by RTT, and the RTT says too little to slow its re-probes.
//
// All probes are ignored when Probes is off. Otherwise the first one
// switches κ to ProbeConfidentSwitch (the caller probes: idle paths'
// changes will be seen), and a probe of the current path teaches nothing
// more: its task samples are fresher.
func (s *adaptive) ObserveProbe(id PathID, rttMs float64) error {
	i := indexOf(s.paths, id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrUnknownPath, id)
	}
	if !(rttMs > 0) {
		return fmt.Errorf("%w (probe RTT %v)", ErrBadSample, rttMs)
	}
	p := s.paths[i]
	p.underWay, p.soon = false, false
	if !s.probes {
		return nil
	}
	s.probed = true
	if p == s.current {
		return nil
	}
	d := p.probeShift(rttMs, s.probeZ, s.window)
	staleBy := p.staleRetry(s.round)
	switch {
	case d < 0:
		p.retry = true
		p.probedOK = false
	case d > 0:
		p.last = s.round
		p.probedOK = true
	case staleBy > 0:
		p.retry, p.staleBy = true, staleBy
		p.probedOK = false
	default:
		p.probedOK = p.probeLosses == 0
		p.soon = !math.IsInf(rttMs, 1) && p.burstShort(s.round)
	}
	return nil
}

// ProbeSoon says whether the probe of idle path id that ObserveProbe
// last recorded left it one probe short of a try (burstShort: a window a
// loss burst left, which burstProbes probes must find unchanged), and if
// so after how long (ms, from that probe's answer) the next probe should
// go: burstRecheck times the round trip it found. At the caller's probe
// period the second probe came a probe turn after the first (a second
// with two idle paths at DefaultProbesPerSecond), and the load stayed
// that long on a worse path: issue 29's held-out restore/200-30-60 took
// its lossy 30 ms path back 1.3–1.9 s after a late loss burst left it.
func (s *adaptive) ProbeSoon(id PathID) (afterMs float64, ok bool) {
	i := indexOf(s.paths, id)
	if i < 0 || !s.paths[i].soon {
		return 0, false
	}
	return burstRecheck * math.Exp(s.paths[i].probes.recent(0)), true
}

// tried settles the try a probe asked for (retry), whose task took
// log-time y at round, and says whether the path's task samples were
// forgotten: only if this one fell too (by the probes' threshold z: the
// probe already said the path may have changed), or, for a stale window,
// if it too lies staleRatio below the window. A stale try that finds the
// window right puts the next off (staleNext).
func (p *apath) tried(y, z float64, round int) bool {
	staleBy := p.staleBy
	p.retry, p.staleBy = false, 0
	if p.fell(y, z, p.probes.spread(0)) || staleBy > 0 && above(p.staleLevel(staleBy), y, staleBy) {
		p.keepLast(0)
		// The samples that follow are the try's, and those of the
		// requests that the move it made queued behind it: judged as a
		// burst's against the round trip the probes found (markBurst).
		if p.probes.n() > 0 {
			p.raised, p.before = true, p.probes.logMean()
		}
		return true
	}
	if staleBy > 0 {
		p.staleNext = round + staleWait<<min(p.staleTries, staleDoublings)
		p.staleTries++
	}
	return false
}

// staleRetry says by which ratio an unchanged probe asks idle path p to
// be tried once for a stale window at round (0: none): its probes since
// the window last changed (their log-mean, the probe just pushed
// included) lie staleRatio below it (staleWindow), or burstRatio below a
// window a loss burst left (burstWindow). Their mean, not the probe alone: a jittery
// path's lowest round trips lie that far below its tasks (pcm-table5's
// mobile path, 37.6 ± 16.8 ms with a 6.2 ms least, asked tries that cost
// 11 % more regret when the single probe decided). Not while a try is
// pending, and not before staleNext, after a stale try that found the
// window right.
func (p *apath) staleRetry(round int) float64 {
	if !p.staleMayAsk(round) {
		return 0
	}
	y := p.probes.logMean()
	switch {
	case staleWindow(p.logMean(), y):
		return staleRatio
	case p.raised && burstWindow(p.n(), p.probes.n(), p.before, p.meanLevel(), y):
		return burstRatio
	}
	return 0
}

// staleMayAsk says whether idle path p's probes may ask a stale try at
// round: it has task samples and probes, no try pending, and it is not
// before staleNext.
func (p *apath) staleMayAsk(round int) bool {
	return p.n() > 0 && p.probes.n() > 0 && !p.retry && round >= p.staleNext
}

// burstShort says whether idle path p's probes at round are one short of
// the burst rule: had burstProbes of them found the round trip as before,
// staleRetry would ask a try (burstWindow). Only then is the next probe
// worth asking for before the path's turn (ProbeSoon); a window that
// staleRatio already judges stale needs no second probe.
func (p *apath) burstShort(round int) bool {
	return p.staleMayAsk(round) && p.raised && p.probes.n() == burstProbes-1 &&
		burstWindow(p.n(), burstProbes, p.before, p.meanLevel(), p.probes.logMean())
}

// staleLevel is the level of the window that a stale try of ratio
// staleBy is judged against: its log-mean for a stale window, the log of
// its fitted mean for a burst's (meanLevel).
func (p *apath) staleLevel(staleBy float64) float64 {
	if staleBy == burstRatio {
		return p.meanLevel()
	}
	return p.logMean()
}

// meanLevel is the log of the window's mean task time as the choice
// estimates it (the lognormal fit's mean, which the evaluation a·E + b·σ
// weighs): the level a burst's window is judged by. A burst's few samples
// lie far above the rest, and the window's log-mean dampens them while
// the fit's mean does not: on issue 29's held-out restore/200-30-60 (seed
// 5150) the 30 ms path's window after a 0.4 s blackout held three samples
// of 260–470 ms and eleven of 30 ms, a log-mean 1.75 times its 30 ms
// probes (under burstRatio: the probes vouched for it) but a fitted mean
// of 93 ms and an evaluation of 104 ms against the 60 ms path's 49, so
// the path was never tried again (share 0.00 after the restore in 5 of 10
// Transport rows).
func (p *apath) meanLevel() float64 { return math.Log(p.estimate().mean) }

// markBurst records a change of path p's task window: upward (raised)
// from a level of log-mean before, or downward. A burst's mark outlives
// the changes that follow until one brings the window back within
// burstRatio of the level before the burst: the requests behind a loss or
// a blackout drain over several changes, each forgetting the older
// samples, and a drain's tail is still the burst's. On issue 29's
// held-out restore/200-30-60 (seed 3721) the 30 ms path's window after a
// 0.4 s blackout fell 500 → 275 → 115 ms over such changes (or a stale
// try forgot it, and the try's own requests, queued behind the move it
// made, gave 92–112 ms: tried marks that window), each cleared the mark,
// and the window left, 3–4 times the path's 30 ms probes, lay under
// staleRatio: the path was never tried again (share 0.00, about 1 row in
// 60). Kept, the mark lets the burst rule (burstWindow) ask its
// try once burstProbes probes find the round trip as before. A rise on a
// marked window keeps the level before the first: judged from the first
// rise's tail, a second rise made the burst its own "before" (65 ms
// against probes of 30, over burstRatio: no try either).
func (p *apath) markBurst(raised bool, before float64) {
	switch {
	case !p.raised:
		p.raised, p.before = raised, before
	case !raised && !above(p.logMean(), p.before, burstRatio):
		p.raised = false // back to its usual level: the burst is over
	}
}

// burstWindow says whether a window of n task samples (level window: the
// log of its fitted mean, meanLevel) that an upward change left (or a
// drain after it, or a try's move: markBurst),
// forgetting older samples of log-mean before, was a loss burst's, going
// by m probes since (log-mean probes):
// it holds a burst's few samples (burstSamples at most), lies burstRatio
// above the probes, and the window it replaced did not, and enough probes
// (burstProbes) say so. Loss on a path with a short round trip holds the
// requests behind a lost packet for a retransmission timeout or more: on
// issue 29's held-out gen3721/k3/1 a 0.95 %-loss path of ~23 ms a request
// gave 4–8 samples of 55–105 ms in a row, the change test forgot the older
// window on them (the path was left), and the window left lay 3–4 times
// its probes, under staleRatio, which they then vouched for. A path whose
// requests used to take about its round trip and whose round trip has not
// changed is tried again: the try's task forgets the window if it too lies
// burstRatio below it, else the tries are rationed as stale ones.
func burstWindow(n, m int, before, window, probes float64) bool {
	return n <= burstSamples && m >= burstProbes &&
		above(window, probes, burstRatio) && !above(before, probes, burstRatio)
}

// Burst-window constants.
const (
	// burstRatio is how far above its probes a raised window must lie to
	// be taken for a burst's (and the window before it must not): two
	// round trips, a loss's recovery at least; the samples it forgot, a
	// path's usual tasks, lay within it.
	burstRatio = 2
	// burstSamples is the most samples a burst's window holds: four
	// times the longest run the change test tests (detectLens). A burst
	// holds the requests sent during it and those queued behind them
	// until the retransmission: 18 samples for 80 ms of loss on a 20 ms
	// path under a GET every 10 ms (TestBurstLeftPathTakenBack); and the
	// path is left only once they have raised its evaluation above
	// another's: on issue 29's held-out restore/200-30-60 (seed 5150) a
	// loss episode on the 30 ms path, taken back after its blackout, gave
	// 36 samples rising 40 → 90 ms before the selector left it, and at
	// twice detectLens' longest (32) the burst rule never took it back
	// (share 0.00; with 64, 5 → 0 of 800 rows at ≤ 0.1 over four seeds;
	// the offline tables unchanged). A window that grew beyond it on the
	// raised level measured a lasting change.
	burstSamples = 64
	// burstProbes is the fewest probes that find the round trip as before
	// the burst: one probe may be a jittery path's lowest round trip, and
	// each more costs a probe period (a second per idle path on three
	// paths at DefaultProbesPerSecond) on the worse path: with three,
	// TestBurstLeftPathTakenBack's 50 / 15 / 35 ms row came back only
	// after 2.9 s.
	burstProbes = 2
	// burstRecheck is how many of a path's round trips after the probe
	// that left it one short of burstProbes the next is asked for
	// (ProbeSoon), rather than at the path's next turn: far enough apart
	// that the two do not see one moment of the path's queue (a sender's
	// window reacts within a round trip, and a queue it built drains
	// within a few), so the second still tells a jittery path's lowest
	// round trip from its usual one; soon enough that the load waits
	// little on the worse path (120 ms on a 30 ms path, against a
	// probe turn of 0.5–1.5 s on two to four paths).
	burstRecheck = 4
)

// staleWindow says whether a path's task window, of log-mean taskLogMean,
// lies more than staleRatio above log-time y (its probes' log-mean, or the
// task of the try they asked for): the window then measured a state of the
// path that is gone. A probe sees the round trip alone, so "unchanged"
// meant only that the probes agree with each other: the window of a path
// left during a blackout shorter than the stall timeout (no failover)
// holds the requests that spanned it and those queued behind the
// backlog after it — on TestRestoredPathTakenBack's 200 / 30 / 60 ms row
// 52 samples of log-mean 193 ms against probes of 30 ms — and the
// probes, unchanged among themselves, vouched for it: the path was never
// tried again.
func staleWindow(taskLogMean, y float64) bool {
	return above(taskLogMean, y, staleRatio)
}

// above says whether log-time hi lies more than ratio times above lo.
func above(hi, lo, ratio float64) bool { return hi-lo > math.Log(ratio) }

// staleRatio is how far above its probes' round trip a path's task window
// must lie (geometric means) to be taken for stale: four round trips.
// A small request takes one round trip, a loss's recovery adds one or two
// to the requests it holds, and a geometric mean dampens the few that
// waited longer; the restored path's window measured 6.4 times its probe
// (TestRestoredPathTakenBack). A task whose transfer takes longer than its
// round trips (a large object on a slow link) can have a window above it
// for good: its tries are rationed (staleWait), and each finds the window
// right and leaves it as it is. 2 would also catch a lossy path left on
// its loss bursts (a window 2.5 times its probes on held-out
// restore/200-30-60, seed 5150), but it cost pcm-window 1.039 × the
// oracle against 1.027, and pcm-table5 and pcm-heavy-tails regret.
const staleRatio = 4

// staleWait is the rounds after a stale try that found the window right
// before the next (doubling per such try, staleDoublings times at most):
// the re-probe period (DefaultReprobeRounds), so that a path whose tasks
// do take staleRatio round trips costs a few tries in all, O(log T). Ten
// doublings (about 10⁵ rounds between tries at most) keep a window that
// goes stale late from waiting for ever.
const (
	staleWait      = DefaultReprobeRounds
	staleDoublings = 10
)

// logMean is the mean log-sample of the window (n > 0).
func (p *logWindow) logMean() float64 { return p.sum / float64(p.n()) }

// probeShift pushes a probe RTT into the path's probe window and returns
// by how much its log changed (0: no change; +Inf: the path may be down):
// the last few probes against the older ones (detectShift), or a single
// probe surprisingly low against the window (surprise; below detectMinOld
// probes against their mean with a spread of at least shortSigma, so that
// a path probed rarely, one of many, is not waited on for eight probes).
// Timeouts are not pushed (they have no RTT): two in a row count as up,
// one as nothing (a lossy path loses some), and each is counted.
func (p *apath) probeShift(rttMs, z float64, window int) float64 {
	if math.IsInf(rttMs, 1) {
		p.probeLosses++
		if p.lost++; p.lost >= 2 {
			return math.Inf(1)
		}
		return 0
	}
	p.lost = 0
	y := math.Log(rttMs)
	n := p.probes.n()
	var mu float64
	if n > 0 {
		mu = p.probes.sum / float64(n)
	}
	low, high := p.probes.surprise(y, z)
	if n > 0 && n < detectMinOld {
		// A path's RTT jitters as its task times do: its own spread
		// keeps a jittery path's few probes from looking like a fall.
		taskSD := 0.0
		if p.n() >= 2 {
			taskSD = p.logSigma()
		}
		low = p.probes.fell(y, z, taskSD)
	}
	p.probes.push(y, window)
	switch d := p.probes.detectShift(z); {
	case d != 0:
		return d
	case low:
		return y - mu
	case high:
		return y - mu
	}
	return 0
}

// fell says whether log-sample y lies below the window's mean by more than
// z standard deviations (and minShift): the window's own spread from
// detectMinOld samples on (surprise); below that, a spread of at least
// shortSigma and sdFloor, so that a path probed or tried rarely is not
// waited on for eight samples.
func (p *logWindow) fell(y, z, sdFloor float64) bool {
	n := p.n()
	if n >= detectMinOld {
		low, _ := p.surprise(y, z)
		return low
	}
	if n == 0 {
		return false
	}
	sd := max(shortSigma, sdFloor)
	if n >= 2 {
		sd = max(sd, p.logSigma())
	}
	return p.sum/float64(n)-y > max(z*sd, minShift)
}

// shortSigma is the least log-spread assumed of a path's probe RTTs while
// it has fewer than detectMinOld of them (≈ 15 %, a jittery Wi-Fi's): a
// probe is a change only if it falls below their mean by probe_z times it.
const shortSigma = 0.15

// ProbeUnderWay records that a probe of path id was sent (on) or will not
// be answered (!on); ignored when Probes is off. See waits.
func (s *adaptive) ProbeUnderWay(id PathID, on bool) error {
	i := indexOf(s.paths, id)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrUnknownPath, id)
	}
	if s.probes {
		s.paths[i].underWay = on
	}
	return nil
}

// waits says that path p, which has no task sample and no probe, is not
// tried yet because its probe is under way and another path has a task
// sample to go on: the probe's answer, one round trip away, tells whether
// a try can pay (probeFloor), and a request spent on a path the probe
// would have ruled out is most of the regret on many paths. A probe that
// times out or fails is answered +Inf (no probe is kept) or called off
// (ProbeUnderWay false), and the path is then tried once as any path that
// nothing is known of: no path is lost for good.
func (p *apath) waits(sampled bool) bool {
	return sampled && p.underWay && p.n() == 0 && p.probes.n() == 0
}

func (s *adaptive) Choose() (PathID, error) {
	if len(s.paths) == 0 {
		return 0, ErrNoPaths
	}
	sampled := slices.ContainsFunc(s.paths, func(p *apath) bool { return p.n() > 0 })
	for _, p := range s.paths {
		if p.n() == 0 && p.probes.n() == 0 && !p.waits(sampled) {
			return p.pathID(), nil // nothing known: tried first
		}
	}
	v := s.view()
	best, bestI := s.paths[0], math.Inf(1)
	stayI, stayR := math.Inf(1), 0.0
	// The path with the lowest upper bound r + κw, and the current path's
	// lower bound r − κw, for the confident switch.
	var sure *apath
	sureU, stayL := math.Inf(1), math.Inf(-1)
	for _, p := range s.paths {
		if p.waits(sampled) {
			continue
		}
		i, r, w := s.index(p, v)
		if i < bestI {
			best, bestI = p, i
		}
		if p == s.current {
			stayI, stayR, stayL = i, r, r-v.kappa*w
		} else if u := r + v.kappa*w; p.n() >= 2 && u < sureU {
			sure, sureU = p, u
		}
	}
	// A path tried once is no investment to protect, and its width is lent:
	// the hysteresis holds only a path with two samples or more.
	if s.current != nil && s.current.n() >= 2 && best != s.current && bestI > stayI-s.hysteresis*stayR {
		if v.kappa > 0 && sureU < stayL {
			return sure.id, nil
		}
		return s.current.id, nil
	}
	return best.id, nil
}

// choiceView is what Choose knows of all paths at once.
type choiceView struct {
	// widest and widestSD are the widest log-spread and standard
	// deviation of the paths with two samples or more, lent to a path
	// with one (loneWidth); probeSD is the log-spread lent to a path with
	// fewer than two probes (probeFloor).
	widest, widestSD, probeSD float64
	logM                      float64 // 2 ln M, M the samples in memory
	spreadW                   float64 // the width's scale, c·(a + b/√2)
	ageRate                   float64 // the re-probe bonus per round of age
	kappa                     float64 // the confident switch's κ
}

func (s *adaptive) view() choiceView {
	v := choiceView{probeSD: shortSigma, kappa: s.confident}
	mem := 0
	rMin := math.Inf(1)
	for _, p := range s.paths {
		if p.probes.n() >= 2 {
			v.probeSD = max(v.probeSD, p.probes.logSigma())
		}
		if p.n() == 0 {
			continue
		}
		mem += p.n()
		e := p.estimate()
		if p.n() >= 2 {
			v.widest = max(v.widest, p.logSigma())
			v.widestSD = max(v.widestSD, math.Sqrt(e.variance))
		}
		rMin = min(rMin, s.obj.Value(e.mean, e.variance))
	}
	v.logM = 2 * math.Log(float64(max(mem, 2)))
	v.spreadW = s.c * (s.obj.A + (1-s.obj.A)/math.Sqrt2)
	if s.reprobe > 0 && len(s.paths) > 1 && mem > 0 {
		v.ageRate = rMin / (s.reprobe * float64(s.unvouched()))
	}
	if s.probed {
		v.kappa = s.probeKappa
	}
	return v
}

// index is path p's index I = r − w − β (+Inf r and w for a path with no
// task sample), raised for an idle path to the floor its probes set.
func (s *adaptive) index(p *apath, v choiceView) (i, r, w float64) {
	i, r, w = math.Inf(-1), math.Inf(1), math.Inf(1)
	if p.n() > 0 {
		e := p.estimate()
		r = s.obj.Value(e.mean, e.variance)
		age := float64(s.round-p.last) / float64(int(1)<<p.backoff)
		if p.probedOK {
			age /= s.stretch
		}
		w = v.spreadW * math.Sqrt(e.variance) * math.Sqrt(v.logM/float64(p.n()))
		if p.n() < 2 {
			w = loneWidth(r, v.widest, v.widestSD, v.spreadW, v.logM)
		}
		i = r - w - v.ageRate*age
	}
	if p != s.current {
		if p.retry {
			i = math.Inf(-1)
		}
		i = max(i, s.probeFloor(p, v.probeSD))
	}
	return i, r, w
}

// probeFloor is the least evaluation idle path p can have by its probes'
// evidence (−Inf without probes). A task takes at least the path's round
// trip, which is what a probe measures, so the path's mean task time is at
// least its probes' mean, and its evaluation a·E + b·σ at least a times
// that; the probes' log-mean (below their mean) is bounded from below by
// ProbeZ standard errors, with the spread of the path's probes (at least
// shortSigma) or, with fewer than two, lentSD. An idle path whose floor
// lies above the current path's index is neither re-tried for its age nor
// tried after its RTT fell: it cannot be better, whatever its rate and
// loss. The floor only ever raises an index (it decides exploration), and
// a path is chosen on its task samples, never on its probes alone: a path
// with no task sample whose floor is lowest is tried, not trusted.
func (s *adaptive) probeFloor(p *apath, lentSD float64) float64 {
	n := p.probes.n()
	if n == 0 {
		return math.Inf(-1)
	}
	sd := p.probes.spread(lentSD)
	y, m := p.probes.sum/float64(n), float64(n)
	if p.retry {
		// The fallen probe alone says where the path's RTT may be now.
		y, m = p.probes.recent(0), 1
	}
	return s.obj.A * math.Exp(y-s.probeZ*sd/math.Sqrt(m))
}

// spread is the window's log-spread, at least shortSigma; lent with fewer
// than two samples.
func (p *logWindow) spread(lent float64) float64 {
	if p.n() < 2 {
		return max(lent, shortSigma)
	}
	return max(p.logSigma(), shortSigma)
}

// loneWidth is the width of a path with a single sample, whose spread is
// not known: the lognormal's lower bound r·exp(−c·σ·sqrt(2 ln M)), with σ
// the widest log-spread of the paths that have one (lentSigma where none
// has), or the widest standard deviation sd (in ms) lent as an additive
// width where that is narrower. The multiplicative bound keeps the index
// in the order of the lone samples: the additive width alone (and a
// spread equal to the sample while no path had two) made every path tried
// once look better the slower it was — right after the first tries the
// slowest path was tried again, its wide spread was then lent to all, and
// most paths got a second try (measured on generated stationary sets of
// 16 paths: 3 % of the oracle's total). Where the additive width is the
// narrower (a slow lone path beside fast, steady ones) it is kept: the
// multiplicative one alone cost pcm-eight-paths and the 3–6-path sets a
// little more exploration (docs/pcm-default.md).
func loneWidth(r, sigma, sd, c, logM float64) float64 {
	if sigma == 0 {
		sigma = lentSigma
	}
	w := r * -math.Expm1(-c*sigma*math.Sqrt(logM))
	if sd > 0 {
		w = min(w, c*sd*math.Sqrt(logM))
	}
	return w
}

// lentSigma is the log-spread assumed of every path while none has two
// samples: a coefficient of variation of 1 (sqrt(ln 2)).
var lentSigma = math.Sqrt(math.Ln2)

// logSigma is the standard deviation of the window's log-samples.
func (p *logWindow) logSigma() float64 {
	return math.Sqrt(sampleVar(p.n(), p.sum, p.sumSq))
}

// unvouched is the number of idle paths whose probes do not vouch for them
// (not probedOK), at least 1: the re-probe budget is shared among them.
func (s *adaptive) unvouched() int {
	n := 0
	for _, p := range s.paths {
		if p != s.current && !p.probedOK {
			n++
		}
	}
	return max(n, 1)
}

// estimate is the lognormal fit of the window (PCM Eq. 14–17), cached
// until the window changes.
func (p *logWindow) estimate() estimate {
	if !p.estOK {
		p.est, p.estOK = lognormal(p.n(), p.sum, p.sumSq), true
	}
	return p.est
}

// push appends log-sample y, replacing the oldest once the window is full.
// Subtracting leaves rounding residue in the sums, so they are recomputed
// every window's worth of replacements: O(1) amortised.
func (p *logWindow) push(y float64, window int) {
	p.estOK = false
	p.sum += y
	p.sumSq += y * y
	if len(p.buf) < window {
		p.buf = append(p.buf, y)
		return
	}
	old := p.buf[p.start]
	p.sum -= old
	p.sumSq -= old * old
	p.buf[p.start] = y
	p.start = (p.start + 1) % len(p.buf)
	if p.wraps++; p.wraps == window {
		p.wraps = 0
		p.resum()
	}
}

// resum recomputes the sums from the window.
func (p *logWindow) resum() {
	p.estOK = false
	p.sum, p.sumSq = 0, 0
	for _, y := range p.buf {
		p.sum += y
		p.sumSq += y * y
	}
}

// keepLast forgets all but the last m log-samples, oldest first again, and
// recomputes the sums.
func (p *logWindow) keepLast(m int) {
	m = min(m, p.n())
	var small [16]float64 // detectLens' longest: no allocation
	kept := small[:0]
	if m > len(small) {
		kept = make([]float64, 0, m)
	}
	for i := m - 1; i >= 0; i-- {
		kept = append(kept, p.recent(i))
	}
	p.buf = append(p.buf[:0], kept...)
	p.start, p.wraps = 0, 0
	p.resum()
}

// surprise says whether y lies more than z standard deviations (and
// minShift) below or above the mean of the window; neither for a window of
// fewer than detectMinOld samples, whose spread is not known well enough.
func (p *logWindow) surprise(y, z float64) (low, high bool) {
	n := p.n()
	if n < detectMinOld {
		return false, false
	}
	mu := p.sum / float64(n)
	d := max(z*max(math.Sqrt(sampleVar(n, p.sum, p.sumSq)), sigmaFloor), minShift)
	return mu-y > d, y-mu > d
}

// detectShift tests whether the last m samples (m in detectLens) come
// from a different level than the older ones — a two-sample z test on the
// log means with the older samples' spread — and if so forgets the older
// ones and says by how much the mean log-sample moved (0: no change).
func (p *logWindow) detectShift(z float64) float64 {
	n := p.n()
	var recent, recentSq float64
	j := 0 // samples summed into recent
	for _, m := range detectLens {
		old := n - m
		if old < max(m, detectMinOld) {
			return 0
		}
		for ; j < m; j++ {
			y := p.recent(j)
			recent += y
			recentSq += y * y
		}
		oldSum := p.sum - recent
		muOld := oldSum / float64(old)
		sd := max(math.Sqrt(sampleVar(old, oldSum, p.sumSq-recentSq)), sigmaFloor)
		shift := recent/float64(m) - muOld
		if d := math.Abs(shift); d > minShift && d > z*sd*math.Sqrt(1/float64(m)+1/float64(old)) {
			p.keepLast(m)
			return shift
		}
	}
	return 0
}
