package cc

import (
	"math"
	"time"
)

// Group is what the coupled controllers of one connection share: each
// subflow's window and RTT (LIA, OLIA, BALIA, MACO Eq. 3.26) and MACO's
// per-subflow history of windows at congestion (thesis Algorithm 4's 𝒲_r).
// The connection creates one Group and passes it in every path's Config.
type Group struct{ subs []*subflow }

// NewGroup returns an empty group.
func NewGroup() *Group { return &Group{} }

// subflow is one member's shared state.
type subflow struct {
	cwnd    float64       // bytes
	srtt    time.Duration // smoothed RTT (0: no sample yet)
	maxRTT  time.Duration // largest RTT sample (MACO's T_r)
	history []float64     // MACO 𝒲_r: windows (bytes) at congestion
	// OLIA: bytes acknowledged between the last two losses (l1) and since
	// the last loss (l2); ℓ_r = max(l1, l2).
	l1, l2 float64
}

func (g *Group) join(s *subflow) { g.subs = append(g.subs, s) }

// rttSec is the RTT in seconds used by the coupled formulas; before the
// first sample RFC 9002's initial 333 ms.
func (s *subflow) rttSec() float64 {
	if s.srtt <= 0 {
		return 0.333
	}
	return s.srtt.Seconds()
}

// CoupledKind selects the coupled increase/decrease rule.
type CoupledKind int

const (
	// LIA is RFC 6356 (Linked Increases).
	LIA CoupledKind = iota
	// OLIA is Khalili et al., "MPTCP is not Pareto-optimal", IEEE/ACM ToN
	// 2013; thesis Eq. 3.1.
	OLIA
	// BALIA is Peng et al., "Multipath TCP: analysis, design and
	// implementation", IEEE/ACM ToN 2016 (Balanced Linked Adaptation).
	BALIA
)

// Coupled is LIA, OLIA or BALIA on one subflow: RFC 9002 slow start and
// recovery periods as NewReno, and a coupled congestion-avoidance increase
// and loss decrease. Windows are kept in bytes as float64; the formulas use
// packets (w/MSS) and seconds, as the papers do.
type Coupled struct {
	kind          CoupledKind
	cfg           Config
	g             *Group
	me            *subflow
	ssthresh      float64
	inRecovery    bool
	recoveryStart time.Duration
	sig           Signals
}

// NewCoupled returns a coupled controller that joins cfg.Group (a new group
// of one when nil).
func NewCoupled(kind CoupledKind, cfg Config) *Coupled {
	g := cfg.Group
	if g == nil {
		g = NewGroup()
	}
	c := &Coupled{kind: kind, cfg: cfg, g: g, me: &subflow{cwnd: float64(cfg.initialWindow())},
		ssthresh: math.Inf(1), recoveryStart: -1}
	g.join(c.me)
	return c
}

func (c *Coupled) Name() string {
	return [...]string{"lia", "olia", "balia"}[c.kind]
}
func (c *Coupled) Window() int       { return int(c.me.cwnd) }
func (c *Coupled) InSlowStart() bool { return c.me.cwnd < c.ssthresh }
func (c *Coupled) Ssthresh() int {
	if math.IsInf(c.ssthresh, 1) {
		return math.MaxInt
	}
	return int(c.ssthresh)
}
func (c *Coupled) Signals() Signals                     { return c.sig }
func (c *Coupled) OnPacketSent(time.Duration, int, int) {}

func (c *Coupled) OnRTTSample(_ time.Duration, r RTT) {
	c.me.srtt = r.Smoothed
	c.me.maxRTT = max(c.me.maxRTT, r.Latest)
}

// OnAck: slow start as RFC 9002 §7.3.1, else the coupled increase.
func (c *Coupled) OnAck(now time.Duration, bytes int, sentAt time.Duration, _ RTT) {
	c.me.l2 += float64(bytes)
	if c.inRecovery && sentAt <= c.recoveryStart {
		return
	}
	c.inRecovery = false
	if c.me.cwnd < c.ssthresh {
		c.me.cwnd += float64(bytes)
		return
	}
	mss := float64(c.cfg.MSS)
	acked := float64(bytes) / mss // packets acknowledged
	var inc float64               // packets
	switch c.kind {
	case LIA:
		inc = liaIncrease(c.g, c.me, acked, mss)
	case OLIA:
		inc = acked * oliaIncrease(c.g, c, mss)
	case BALIA:
		inc = acked * baliaIncrease(c.g, c.me, mss)
	}
	c.me.cwnd = max(c.me.cwnd+inc*mss, float64(c.cfg.minWindow()))
}

// liaIncrease is RFC 6356 §3: for each ACK of bytes_acked on subflow i,
// cwnd_i += min(α·bytes_acked·MSS/cwnd_total, bytes_acked·MSS/cwnd_i), in
// packets here: min(α·acked/w_total, acked/w_i).
func liaIncrease(g *Group, me *subflow, acked, mss float64) float64 {
	total := 0.0
	for _, s := range g.subs {
		total += s.cwnd / mss
	}
	return min(LIAAlpha(g, mss)*acked/total, acked/(me.cwnd/mss))
}

// LIAAlpha is RFC 6356 §3's α = cwnd_total·max_i(cwnd_i/rtt_i²) /
// (Σ_i cwnd_i/rtt_i)², windows in packets.
func LIAAlpha(g *Group, mss float64) float64 {
	total, best, sum := 0.0, 0.0, 0.0
	for _, s := range g.subs {
		w, r := s.cwnd/mss, s.rttSec()
		total += w
		best = max(best, w/(r*r))
		sum += w / r
	}
	return total * best / (sum * sum)
}

// oliaIncrease is thesis Eq. 3.1 (Khalili et al. 2013, Eq. 5) per
// acknowledged packet on path r, in packets:
//
//	(w_r/τ_r²) / (Σ_p w_p/τ_p)² + α_r/w_r.
func oliaIncrease(g *Group, c *Coupled, mss float64) float64 {
	sum := 0.0
	for _, s := range g.subs {
		sum += (s.cwnd / mss) / s.rttSec()
	}
	w, r := c.me.cwnd/mss, c.me.rttSec()
	return (w/(r*r))/(sum*sum) + OLIAAlpha(g, c)/w
}

// OLIAAlpha is α_r of Khalili et al. 2013 §IV: with M the paths of largest
// window and B the presumed best paths (largest ℓ_p/τ_p², ℓ_p = bytes
// between the last two losses or since the last, whichever is larger, as
// Linux's mptcp_olia.c), α_r = 1/(|R|·|B∖M|) for r ∈ B∖M, −1/(|R|·|M|) for
// r ∈ M when B∖M ≠ ∅, else 0. Only subflows that are Coupled OLIA take
// part in B with their ℓ; other members have ℓ = 0.
func OLIAAlpha(g *Group, c *Coupled) float64 {
	n := len(g.subs)
	if n < 2 {
		return 0
	}
	ell := func(s *subflow) float64 { return max(s.l1, s.l2) }
	maxW, maxB := 0.0, 0.0
	for _, s := range g.subs {
		maxW = max(maxW, s.cwnd)
		r := s.rttSec()
		maxB = max(maxB, ell(s)/(r*r))
	}
	inM := func(s *subflow) bool { return s.cwnd >= maxW }
	inB := func(s *subflow) bool { r := s.rttSec(); return ell(s)/(r*r) >= maxB }
	nM, nBnotM := 0, 0
	for _, s := range g.subs {
		if inM(s) {
			nM++
		} else if inB(s) {
			nBnotM++
		}
	}
	switch {
	case nBnotM == 0:
		return 0
	case inB(c.me) && !inM(c.me):
		return 1 / float64(n*nBnotM)
	case inM(c.me):
		return -1 / float64(n*nM)
	}
	return 0
}

// baliaIncrease is Peng et al. 2016 (BALIA, also the Linux mptcp_balia.c)
// per acknowledged packet on path r, in packets, with x_k = w_k/τ_k and
// α_r = max_k x_k / x_r:
//
//	x_r / (τ_r·(Σ_k x_k)²) · (1+α_r)/2 · (4+α_r)/5.
func baliaIncrease(g *Group, me *subflow, mss float64) float64 {
	sum, best := 0.0, 0.0
	for _, s := range g.subs {
		x := (s.cwnd / mss) / s.rttSec()
		sum += x
		best = max(best, x)
	}
	x := (me.cwnd / mss) / me.rttSec()
	a := best / x
	return x / (me.rttSec() * sum * sum) * (1 + a) / 2 * (4 + a) / 5
}

// baliaDecrease is BALIA's loss response: w_r −= (w_r/2)·min(α_r, 1.5).
func baliaDecrease(g *Group, me *subflow, mss float64) float64 {
	best := 0.0
	for _, s := range g.subs {
		best = max(best, (s.cwnd/mss)/s.rttSec())
	}
	a := best / ((me.cwnd / mss) / me.rttSec())
	return me.cwnd - me.cwnd/2*min(a, 1.5)
}

// OnLoss: one decrease per recovery period (RFC 9002 §7.3.2); LIA and OLIA
// halve (RFC 6356 §3, thesis §3.3.2), BALIA uses its α-scaled decrease.
func (c *Coupled) OnLoss(now time.Duration, _ int, sentAt time.Duration) {
	if c.inRecovery && sentAt <= c.recoveryStart {
		return
	}
	c.inRecovery, c.recoveryStart = true, now
	c.sig.LossEvents++
	c.sig.Reductions++
	c.me.l1, c.me.l2 = c.me.l2, 0
	mss := float64(c.cfg.MSS)
	w := c.me.cwnd / 2
	if c.kind == BALIA {
		w = baliaDecrease(c.g, c.me, mss)
	}
	c.me.cwnd = max(w, float64(c.cfg.minWindow()))
	c.ssthresh = c.me.cwnd
}

// OnPersistentCongestion collapses the window (RFC 9002 §7.6.2).
func (c *Coupled) OnPersistentCongestion(now time.Duration) {
	c.ssthresh = max(c.me.cwnd/2, float64(c.cfg.minWindow()))
	c.me.cwnd = float64(c.cfg.minWindow())
	c.inRecovery, c.recoveryStart = false, now
	c.me.l1, c.me.l2 = c.me.l2, 0
}
