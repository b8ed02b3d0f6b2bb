package cc

import (
	"math"
	"time"

	"github.com/hetquic/hetquic/internal/akf"
)

// MACO is the mobility-aware multipath congestion control of thesis ch. 3:
// BDP estimation (Algorithm 3), BDP-inspired quick start (Algorithm 4) and
// mobility-aware congestion avoidance (Algorithm 5, Eq. 3.26), one per
// subflow, coupled through Config.Group.
//
// Readings where the thesis is vague (also in sim/DESIGN.md):
//
//   - C^A (Eq. 3.2–3.3) and D (Eq. 3.11) come from Config.Access, the
//     cross-layer database of Fig. 3.7; sim/leo computes both from the
//     satellite geometry. Without it C^A is unknown (C = Ĉ^N) and D is the
//     path's minimum RTT.
//   - Eq. 3.4's ACK-rate sample is taken once at least a quarter of the
//     smoothed RTT has passed since the previous one (per-ACK Δt is too
//     short to mean anything with ACKs every second packet).
//   - TP_r(t) of Eq. 3.17 is the AKF-cleaned Ĉ^N; C_r(t−1) is the C^A
//     predicted at the last send (or Ĉ^N's running max when C^A is unknown);
//     τ_r(t) is the latest RTT sample; Δ_R is the standard deviation of the
//     last 32 differences (RTT sample − D), but at least 5 % of D
//     (macoDeltaRFloor): the simulator's delays have no noise unless a
//     scenario adds jitter, so the literal Δ_R is ~0 and a queue of one or
//     two packets (0.1 ms at 200 Mbit/s) made every loss "congestion" —
//     126 of 127 in a 60 s run with 0.1 % channel loss. 5 % of a 100 ms
//     RTT is about the spread of the Starlink RTTs of thesis Fig. 3.4(b).
//   - The loss classification runs in slow start too (a handover loss in
//     quick start should not halve either); one classification per loss
//     episode: losses of packets sent before the episode's first loss was
//     declared belong to it (RFC 9002 §7.3.2's recovery period), as other
//     controllers reduce once per episode.
//   - Only an episode classified as congestion opens a recovery period
//     without growth. Algorithm 5's else branch (line 6) applies Eq. 3.26
//     whenever the loss is not congestion, so a handover or channel loss
//     does not pause the increase either.
//   - T_r of Eq. 3.26 (the largest RTT "ever experienced") is the largest
//     sample since the subflow (re)started: Elastic-TCP's Linux module,
//     where T comes from, forgets it at a retransmission timeout, and
//     persistent congestion is QUIC's counterpart. τ_k is the smoothed RTT
//     (Algorithm 5 line 9's τ_k(t_n) could be the latest sample; smoothing
//     keeps one delayed ACK from moving every subflow's increase).
//     "max_{r∈R} x_r²√T_r" is read as max over subflows of x_k²·√T_k;
//     units are packets and seconds (see MACOIncrease for the derivation
//     and why only packets are right).
//   - "For each ACK" (Eq. 3.26) and "# of ACKs" (Algorithm 4 line 18) are
//     per acknowledged packet: the fluid model behind Eq. 3.26 has one ACK
//     per packet (ACK rate x_r); counting ACK frames would halve both with
//     the receiver's every-second-packet ACKs.
//   - Algorithm 4 runs at creation and after persistent congestion (a
//     "broken subflow", e.g. a handover outage). Ω is floored at the
//     2-packet minimum window; with no history it is 4 MSS as the thesis
//     says. SST is set to B̄ (Eq. 3.14) at those times, even when B̄ is
//     below Ω (the subflow then starts in congestion avoidance).
type MACO struct {
	cfg      Config
	g        *Group
	me       *subflow
	ssthresh float64
	// episodeStart is when the current loss episode's first loss was
	// declared (−1: none yet); cutting is set while that episode, having
	// halved the window, is a recovery period without growth.
	episodeStart time.Duration
	cutting      bool
	sig          Signals

	akf       akf.Filter
	capN      float64 // Ĉ^N, bytes/s (0: no sample yet)
	capNMax   float64
	capA      float64 // C^A at the last send, bytes/s (C_r(t−1)); 0: unknown
	prop      time.Duration
	minRTT    time.Duration
	latest    time.Duration
	ackedS    float64       // S_t: bytes acknowledged so far (Eq. 3.4)
	lastS     float64       // S_{t−1}
	lastT     time.Duration // time of S_{t−1}
	sampled   bool
	bdpHist   []bdpPoint // C·D samples for Eq. 3.14
	devs      [macoDevWindow]float64
	nDevs     int
	lastOmega float64 // the last quick-start initial window (bytes)
}

type bdpPoint struct {
	t time.Duration
	v float64 // bytes
}

// MACO constants.
const (
	macoGamma     = 0.5 // Algorithm 4 / Eq. 3.15: γ = 1/2 (thesis, empirical)
	macoNoHistPkt = 4   // Algorithm 4 line 14: Ω = 4 MSS without history
	macoDevWindow = 32  // RTT deviations behind Δ_R (Eq. 3.17)
	// macoDeltaRFloor is Δ_R's floor as a fraction of D (see the type
	// comment).
	macoDeltaRFloor = 0.05
)

// NewMACO returns a MACO subflow that joins cfg.Group and runs quick start
// at time 0.
func NewMACO(cfg Config) *MACO {
	g := cfg.Group
	if g == nil {
		g = NewGroup()
	}
	m := &MACO{cfg: cfg, g: g, me: &subflow{}, episodeStart: -1, minRTT: -1}
	g.join(m.me)
	m.readAccess(0)
	m.quickStart(0)
	return m
}

func (m *MACO) Name() string      { return "maco" }
func (m *MACO) Window() int       { return int(m.me.cwnd) }
func (m *MACO) InSlowStart() bool { return m.me.cwnd < m.ssthresh }
func (m *MACO) Signals() Signals  { return m.sig }
func (m *MACO) Ssthresh() int {
	if math.IsInf(m.ssthresh, 1) {
		return math.MaxInt
	}
	return int(m.ssthresh)
}

// CapacityN is the AKF-cleaned network-side capacity Ĉ^N in bytes/s.
func (m *MACO) CapacityN() float64 { return m.capN }

// Omega is the last quick-start initial window in bytes.
func (m *MACO) Omega() float64 { return m.lastOmega }

// History is this subflow's 𝒲_r (windows at congestion, bytes).
func (m *MACO) History() []float64 { return m.me.history }

// readAccess refreshes C^A and D from the cross-layer database (Algorithm 3
// lines 4–5).
func (m *MACO) readAccess(now time.Duration) {
	if m.cfg.Access == nil {
		return
	}
	c, d := m.cfg.Access(now)
	m.capA = c / 8
	if d > 0 {
		m.prop = d
	}
}

// propDelay is D_r (Eq. 3.11) or, unknown, the minimum RTT.
func (m *MACO) propDelay() time.Duration {
	if m.prop > 0 {
		return m.prop
	}
	return max(m.minRTT, 0)
}

// capacity is C_r,t = min(C^A, C^N) (Eq. 3.12) in bytes/s; 0: unknown.
func (m *MACO) capacity() float64 {
	switch {
	case m.capA > 0 && m.capN > 0:
		return min(m.capA, m.capN)
	case m.capA > 0:
		return m.capA // Algorithm 3 lines 6–8: C^A alone in the first RTT
	}
	return m.capN
}

// AvgBDP is B̄_r(t) of Eq. 3.14 in bytes: C·D averaged over the last
// smoothed RTT (piecewise constant between samples); before any ACK,
// C^A·D (Algorithm 3 line 7). 0: unknown.
func (m *MACO) AvgBDP(now time.Duration) float64 {
	inst := m.capacity() * m.propDelay().Seconds()
	if len(m.bdpHist) == 0 {
		return inst
	}
	tau := m.me.srtt
	if tau <= 0 {
		return inst
	}
	from := now - tau
	area, span := 0.0, time.Duration(0)
	for i, p := range m.bdpHist {
		end := now
		if i+1 < len(m.bdpHist) {
			end = m.bdpHist[i+1].t
		}
		start := max(p.t, from)
		if end <= start {
			continue
		}
		area += p.v * (end - start).Seconds()
		span += end - start
	}
	if span <= 0 {
		return inst
	}
	return area / span.Seconds()
}

func (m *MACO) recordBDP(now time.Duration) {
	v := m.capacity() * m.propDelay().Seconds()
	m.bdpHist = append(m.bdpHist, bdpPoint{now, v})
	// Keep one point at or before now − srtt (it covers the window start).
	tau := max(m.me.srtt, time.Second)
	i := 0
	for i+1 < len(m.bdpHist) && m.bdpHist[i+1].t <= now-tau {
		i++
	}
	if i > 0 {
		m.bdpHist = append(m.bdpHist[:0], m.bdpHist[i:]...)
	}
}

// QuickStartWindow is Algorithm 4 lines 3–14 (Eqs. 3.15–3.16): γ·min(B̄,
// w_max) with w_max the largest window at congestion of this subflow, or
// else of the others; 4 MSS without any history. bdp ≤ 0 means unknown
// (then γ·w_max). The result is at least minWin.
func QuickStartWindow(bdp float64, own []float64, others [][]float64, mss, minWin float64) float64 {
	wmax := 0.0
	for _, w := range own {
		wmax = max(wmax, w)
	}
	if len(own) == 0 {
		for _, h := range others {
			for _, w := range h {
				wmax = max(wmax, w)
			}
		}
	}
	if wmax == 0 {
		return macoNoHistPkt * mss
	}
	if bdp > 0 {
		wmax = min(bdp, wmax)
	}
	return max(macoGamma*wmax, minWin)
}

// quickStart sets the initial window and SST (Algorithm 4, §3.4.2).
func (m *MACO) quickStart(now time.Duration) {
	var others [][]float64
	for _, s := range m.g.subs {
		if s != m.me {
			others = append(others, s.history)
		}
	}
	bdp := m.AvgBDP(now)
	mss := float64(m.cfg.MSS)
	m.lastOmega = QuickStartWindow(bdp, m.me.history, others, mss, float64(m.cfg.minWindow()))
	m.me.cwnd = m.lastOmega
	m.ssthresh = math.Inf(1)
	if bdp > 0 {
		m.ssthresh = bdp // SST = B̄ (§3.4.2)
	}
	m.me.maxRTT = 0
}

func (m *MACO) OnPacketSent(now time.Duration, _, _ int) { m.readAccess(now) }

func (m *MACO) OnRTTSample(now time.Duration, r RTT) {
	m.me.srtt = r.Smoothed
	m.me.maxRTT = max(m.me.maxRTT, r.Latest)
	m.latest = r.Latest
	if m.minRTT < 0 || r.Latest < m.minRTT {
		m.minRTT = r.Latest
	}
	d := (r.Latest - m.propDelay()).Seconds()
	m.devs[m.nDevs%macoDevWindow] = d
	m.nDevs++
}

// deltaR is Δ_R of Eq. 3.17: the standard deviation of the recent
// differences between RTT samples and D, at least macoDeltaRFloor·D.
func (m *MACO) deltaR() time.Duration {
	return max(m.deltaRStd(), time.Duration(macoDeltaRFloor*float64(m.propDelay())))
}

func (m *MACO) deltaRStd() time.Duration {
	n := min(m.nDevs, macoDevWindow)
	if n < 2 {
		return 0
	}
	mean := 0.0
	for i := 0; i < n; i++ {
		mean += m.devs[i]
	}
	mean /= float64(n)
	v := 0.0
	for i := 0; i < n; i++ {
		v += (m.devs[i] - mean) * (m.devs[i] - mean)
	}
	return time.Duration(math.Sqrt(v/float64(n-1)) * float64(time.Second))
}

// measure is Algorithm 3 lines 10–15: Eq. 3.4's ACK-rate sample, the AKF
// (Eqs. 3.5–3.10), and a new C·D point for Eq. 3.14.
func (m *MACO) measure(now time.Duration) {
	if !m.sampled {
		m.sampled, m.lastS, m.lastT = true, m.ackedS, now
		return
	}
	iv := max(m.me.srtt/4, time.Millisecond)
	if now-m.lastT < iv {
		return
	}
	y := (m.ackedS - m.lastS) / (now - m.lastT).Seconds() // Eq. 3.4
	m.lastS, m.lastT = m.ackedS, now
	m.capN = max(m.akf.Update(y), 0)
	m.capNMax = max(m.capNMax, m.capN)
	m.recordBDP(now)
}

// OnAck: quick-start growth (Algorithm 4 line 18) below SST, else Eq. 3.26.
func (m *MACO) OnAck(now time.Duration, bytes int, sentAt time.Duration, _ RTT) {
	m.ackedS += float64(bytes)
	m.measure(now)
	if m.cutting && sentAt <= m.episodeStart {
		return
	}
	m.cutting = false
	if m.me.cwnd < m.ssthresh {
		m.me.cwnd += float64(bytes)
		return
	}
	mss := float64(m.cfg.MSS)
	m.me.cwnd += float64(bytes) * MACOIncrease(m.g, m.me, mss)
}

// MACOIncrease is Eq. 3.26 per acknowledged packet on subflow me, in
// packets (x_k = w_k/τ_k in packets/s, τ and T in seconds):
//
//	U_r = 3·max_k(x_k²·√T_k) / (2·τ_r·(Σ_k x_k)^{5/2}).
//
// Derivation (thesis §3.5.2, re-done to check each term). In the fluid
// model of [51, 109] a subflow gains U_r per ACK and loses V_r per loss,
// and φ_r = U_r/V_r sets the equilibrium loss rate. Elastic-TCP [9] adds
// √(w·T/τ)/w packets per ACK (w in packets, T the largest RTT, τ the
// current one) and halves, so with w = x·τ
//
//	φ^E = 2·√(T/τ)·w^{−3/2} = 2·√T·τ^{−2}·x^{−3/2},
//	∂φ^E/∂x = −3·√T·τ^{−2}·x^{−5/2}                         (Eq. 3.20).
//
// MACO takes φ_r = θ_r/x_r (Eq. 3.19, so an equilibrium exists) and
// matches the slope at the Elastic-TCP rate x^TCP: θ_r/x_r² =
// 3·√T_r/(τ_r²·(x^TCP)^{5/2}) (Eq. 3.21). Goal 3 sets the aggregate to
// that rate, Σ_k x_k = max_r x_r^TCP, and Eq. 3.22 moves the max onto
// x_r²·√T_r (τ_r² stays outside, as Eq. 3.23 writes it):
// θ_r = 3·max_k(x_k²√T_k)/(τ_r²·(Σx)^{5/2}). With V_r = w_r/2 = x_r·τ_r/2,
// U_r = φ_r·V_r = θ_r·τ_r/2, which is the line above (Eqs. 3.25–3.26).
//
// Units: the seconds cancel (x²·√T/(τ·x^{5/2}) is s^0), so seconds or
// milliseconds give the same U_r, but U_r scales as w^{−1/2}: it holds
// only with windows in packets, as Elastic-TCP's √w does (in bytes it
// would be √MSS ≈ 39 times smaller). Checks: one subflow with T = τ gives
// 3/(2√w) per ACK, 1.5·√w packets per RTT (Elastic-TCP: √w; slope
// matching, not φ matching, brings the 3/2). n equal subflows sharing one
// bottleneck (aggregate W packets) gain 3·√W/(2n²) packets per RTT
// together: 0.375·√W for two, against NewReno's 1 (about 12 at W = 1000).
// Goal 3 is a lower bound (at least Elastic-TCP's throughput), so the
// equation is not built to be friendly to NewReno, and it is not.
func MACOIncrease(g *Group, me *subflow, mss float64) float64 {
	sum, best := 0.0, 0.0
	for _, s := range g.subs {
		x := (s.cwnd / mss) / s.rttSec()
		t := s.rttSec()
		if s.maxRTT > 0 {
			t = max(t, s.maxRTT.Seconds())
		}
		sum += x
		best = max(best, x*x*math.Sqrt(t))
	}
	return 3 * best / (2 * me.rttSec() * math.Pow(sum, 2.5))
}

// IsCongestion is Algorithm 5 lines 1–3 (Eq. 3.17) for a loss: congestion
// only if the measured throughput tp is below the predicted capacity
// capPred AND the RTT sample rtt exceeds D + Δ_R. capPred ≤ 0 (unknown)
// leaves only the delay test.
func IsCongestion(tp, capPred float64, rtt, d, deltaR time.Duration) bool {
	conI := capPred <= 0 || tp < capPred
	conII := rtt > d+deltaR
	return conI && conII
}

// OnLoss classifies the loss episode (Algorithm 5); only congestion halves
// the window and enters the window in 𝒲_r.
func (m *MACO) OnLoss(now time.Duration, _ int, sentAt time.Duration) {
	if sentAt <= m.episodeStart {
		return // this episode was classified at its first loss
	}
	m.episodeStart = now
	m.sig.LossEvents++
	capPred := m.capA
	if capPred <= 0 {
		capPred = m.capNMax
	}
	if !IsCongestion(m.capN, capPred, m.latest, m.propDelay(), m.deltaR()) {
		return
	}
	m.sig.Reductions++
	m.cutting = true
	m.me.history = append(m.me.history, m.me.cwnd)
	m.me.cwnd = max(m.me.cwnd/2, float64(m.cfg.minWindow()))
	m.ssthresh = m.me.cwnd
}

// OnPersistentCongestion treats the subflow as broken and reconnected:
// quick start again from the shared history (Algorithm 4, Eq. 3.16).
func (m *MACO) OnPersistentCongestion(now time.Duration) {
	m.readAccess(now)
	m.quickStart(now)
	m.cutting, m.episodeStart = false, now
	m.sampled = false
}
