package sched

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// MAMS is the thesis's Mobility-Aware Multipath Scheduler (ch. 2 §2.5): at
// the start of each scheduling cycle it estimates, per path, q_p(ΔT), the
// expected number of packets delivered within a time budget (the Markov
// model of §2.5.2–2.5.3, Eqs. 2.9–2.23), picks the path set with
// Algorithm 1 and assigns stream positions to paths with Algorithm 2, so
// that a slow path carries packets the fast paths will not have reached by
// the time it delivers them (low reordering delay).
//
// Readings where the thesis is vague (documented in sim/DESIGN.md):
//   - Algorithm 1 line 4 initialises Q_P once but accumulates inside the
//     j loop for every i; we reset Q_P for each i, so Q_P is the expected
//     delivery of paths m_1..m_i within OWD_{m_i} (τ_{m_i}/2 in the thesis).
//   - Algorithm 2 gives path m_i (i < P) the stream positions
//     [Q_i, Q_{i+1}), where Q_i = Σ_{f<i} q_f(OWD_{m_i}) (Q_1 = 0), and the
//     slowest path m_P the Φ_{m_P} positions from Q_P (the while loop
//     "until the number of packets on the slowest path approaches Φ_P").
//     Pending chunks beyond the plan go to the fastest path with space.
//   - Two refinements of ours, needed once queues build up: a packet sent
//     now arrives after OWD = SRTT − MinRTT/2 (the thesis's τ/2 ignores the
//     standing queue), which is also the round's T^C and the budget of
//     Algorithms 1–2; and a round's Φ packets are ACK-clocked over τ, so
//     only the share min(1, (T^B − OWD)/τ) counts as delivered.
//   - Λ_p is the sender's measured loss rate (the mobility model's Eq. 2.8
//     loss reaches it through the links), τ_p the smoothed RTT, RTO_p the probe timeout, C_p·τ_p the MMQUIC
//     ACK's BDP for the round's time (now, +0.5 s, +1 s; Eq. 2.20).
//   - The slowest path's share, Φ_{m_P}, is its window left now.
//   - A cycle ends when a planned path with window space has no planned
//     chunk left; then the plan is recomputed.
type MAMS struct {
	memo    map[qKey]float64
	plan    [][]int // chunks per path, ascending
	inPlan  []bool
	order   []int // paths by ascending τ
	replans int
}

// NewMAMS returns a MAMS scheduler.
func NewMAMS() *MAMS { return &MAMS{memo: map[qKey]float64{}} }

func (*MAMS) Name() string { return "mams" }

// Replans is the number of scheduling cycles so far.
func (m *MAMS) Replans() int { return m.replans }

// maxMemo bounds the memo table; it is cleared when full.
const maxMemo = 1 << 16

func (m *MAMS) Next(v *View) Decision {
	if v.Pending == 0 {
		return Decision{Wait, Head}
	}
	for attempt := 0; attempt < 2; attempt++ {
		if m.plan == nil || len(m.plan) != len(v.Paths) {
			m.replan(v)
		}
		exhausted := false
		for _, i := range m.order {
			p := &v.Paths[i]
			if !m.inPlan[i] || !p.CanSend(v.PacketBytes) {
				continue
			}
			l := m.plan[i]
			for len(l) > 0 && !v.Queue.IsPending(l[0]) {
				l = l[1:]
			}
			m.plan[i] = l
			if len(l) > 0 {
				m.plan[i] = l[1:]
				return Decision{i, l[0]}
			}
			exhausted = true
		}
		if !exhausted {
			return Decision{Wait, Head}
		}
		if attempt == 0 {
			m.replan(v)
			continue
		}
		// Past the plan: the fastest planned path with space takes the head.
		for _, i := range m.order {
			if m.inPlan[i] && v.Paths[i].CanSend(v.PacketBytes) {
				return Decision{i, Head}
			}
		}
	}
	return Decision{Wait, Head}
}

// replan runs Algorithms 1 and 2 for the pending chunks.
func (m *MAMS) replan(v *View) {
	m.replans++
	n := len(v.Paths)
	if len(m.memo) > maxMemo {
		clear(m.memo)
	}
	m.plan = make([][]int, n)
	m.inPlan = make([]bool, n)
	m.order = m.order[:0]
	for i := range v.Paths {
		m.order = append(m.order, i)
	}
	slices.SortStableFunc(m.order, func(a, b int) int { return cmp.Compare(v.Paths[a].SRTT, v.Paths[b].SRTT) })
	pkt := v.PacketBytes
	K := float64(v.Pending)

	// Algorithm 1: the smallest prefix of paths (by τ) whose expected
	// deliveries within τ_{m_i}/2 cover the K_v pending packets.
	P := n
	for i := 1; i < n; i++ { // i is 0-based: prefix m_0..m_i
		budget := owd(&v.Paths[m.order[i]])
		q := 0.0
		for j := 0; j <= i; j++ {
			q += m.q(&v.Paths[m.order[j]], budget, pkt)
		}
		if q >= K {
			P = i + 1
			break
		}
	}
	for _, i := range m.order[:P] {
		m.inPlan[i] = true
	}

	// Algorithm 2: Q_i = Σ_{f<i} q_f(OWD_{m_i}); path m_i gets [Q_i, Q_{i+1}),
	// the slowest gets Φ positions from Q_P.
	bounds := make([]int, P+1)
	for i := 1; i < P; i++ {
		owd := owd(&v.Paths[m.order[i]])
		q := 0.0
		for f := 0; f < i; f++ {
			q += m.q(&v.Paths[m.order[f]], owd, pkt)
		}
		bounds[i] = max(bounds[i-1], int(math.Round(q)))
	}
	slow := &v.Paths[m.order[P-1]]
	phi := phiFirst(slow, pkt)
	if P == 1 {
		phi = v.Pending
	}
	bounds[P] = bounds[P-1] + phi
	queue := v.Queue.AppendPending(nil, min(bounds[P], v.Pending))
	for i := 0; i < P; i++ {
		lo, hi := min(bounds[i], len(queue)), min(bounds[i+1], len(queue))
		m.plan[m.order[i]] = queue[lo:hi:hi]
	}
}

// owd is a path's one-way delay for a packet sent now: half the minimum
// RTT plus the queueing the smoothed RTT shows (SRTT − MinRTT), as the
// queue sits in front of the data direction. The thesis writes τ_p/2; with
// a standing queue τ/2 misjudges when a new packet arrives, which made MAMS
// place slow-path packets too far ahead (sim/DESIGN.md).
func owd(p *PathView) time.Duration {
	if p.MinRTT <= 0 {
		return p.SRTT / 2
	}
	return max(p.SRTT, p.MinRTT) - p.MinRTT/2
}

// phiFirst is Φ_p(s_1) for new packets: min(w, C·τ) − in flight, in packets
// (Eq. 2.17), at least 0.
func phiFirst(p *PathView, pkt int) int {
	w := float64(p.Cwnd)
	if b := bdpNow(p, 0); b > 0 {
		w = min(w, b)
	}
	return max(0, int((w-float64(p.InFlight))/float64(pkt)))
}

// bdpNow is C_p(t')·τ_p(t') of Eq. 2.17/2.20 in bytes: the MMQUIC ACK's
// BDP field k (capacity × base RTT) rescaled to the current smoothed RTT, so
// that a queue on the path counts as room for packets; 0 when unknown.
func bdpNow(p *PathView, k int) float64 {
	if p.BDP[k] <= 0 || p.MinRTT <= 0 {
		return p.BDP[k]
	}
	return p.BDP[k] * float64(max(p.SRTT, p.MinRTT)) / float64(p.MinRTT)
}

// Sub-states of the Markov model (thesis Fig. 2.4, the u of Table 2.2).
const (
	stOK  = 1 // slow start or congestion avoidance
	stFR  = 2 // fast recovery
	stRTO = 3 // retransmission timeout
)

type qKey struct {
	tauUs, rtoUs, budgetUs int64
	owdUs                  int64
	loss                   float64
	w, g                   int
	bdp                    [3]int
	state                  int
}

// q is q_p(ΔT) for the path's current state (Eqs. 2.11–2.14, 2.23),
// memoised.
func (m *MAMS) q(p *PathView, budget time.Duration, pkt int) float64 {
	st := stOK
	if p.PTOCount > 0 {
		st = stRTO
	}
	g := math.MaxInt32
	if p.Ssthresh < math.MaxInt32 {
		g = max(2, p.Ssthresh/pkt)
	}
	k := qKey{
		tauUs: max(p.SRTT, time.Millisecond).Microseconds(), rtoUs: max(p.RTO, p.SRTT).Microseconds(),
		owdUs:    owd(p).Microseconds(),
		budgetUs: budget.Microseconds(), loss: math.Round(p.LossRate*1e5) / 1e5,
		w: max(1, p.Cwnd/pkt), g: g, state: st,
	}
	for i := range k.bdp {
		k.bdp[i] = int(bdpNow(p, i)) / pkt
	}
	if v, ok := m.memo[k]; ok {
		return v
	}
	mm := markov{tau: k.tauUs, owd: k.owdUs, rto: k.rtoUs, loss: k.loss, bdp: k.bdp, memo: map[rKey]float64{}}
	// The first round counts the whole Φ(s_1), as Eq. 2.19 does: packets
	// in flight now are acknowledged within the round and the window they
	// free carries new ones.
	v := mm.rounds(k.budgetUs, 0, k.w, k.g, st, 0)
	m.memo[k] = v
	return v
}

// markov evaluates the recursion of Eqs. 2.11–2.13 for one path.
type markov struct {
	tau, rto int64 // µs
	owd      int64 // µs: when a packet sent now arrives (τ/2 in the thesis)
	loss     float64
	bdp      [3]int // packets now, +0.5 s, +1 s (0: unknown)
	memo     map[rKey]float64
}

type rKey struct {
	budget, elapsed int64
	w, g, st        int
}

// maxRounds bounds the recursion depth (the thesis's r_max = ⌊ΔT/τ⌋ is
// normally smaller).
const maxRounds = 64

// rounds returns the expected deliveries from a round starting with budget
// µs left, elapsed µs after the cycle start, window w, threshold g and
// state st. inflight (first round only) is subtracted from Φ.
func (mm *markov) rounds(budget, elapsed int64, w, g, st, inflight int) float64 {
	gamma := int64(0) // Eq. 2.10
	switch st {
	case stFR:
		gamma = mm.tau
	case stRTO:
		gamma = mm.rto
	}
	if budget < mm.owd+gamma || elapsed/max(mm.tau, 1) > maxRounds { // Eq. 2.9: T^C = τ/2 + γ
		return 0
	}
	key := rKey{budget, elapsed, w, g, st}
	if inflight == 0 {
		if v, ok := mm.memo[key]; ok {
			return v
		}
	}
	// Eq. 2.17 / 2.20: Φ = min(w, C(t')·τ(t')).
	phi := w
	if b := mm.bdp[min(2, int(elapsed/500_000))]; b > 0 {
		phi = min(phi, b)
	}
	fresh := max(0, phi-inflight)
	// Eq. 2.19: E[Binomial(Φ, 1−Λ)]. The thesis counts the whole round as
	// delivered; ACK clocking spreads a round's packets over τ, so only the
	// share sent early enough to arrive within the budget counts (ours).
	spread := min(1, float64(budget-mm.owd)/float64(max(mm.tau, 1)))
	x := float64(fresh) * (1 - mm.loss) * spread
	// Eq. 2.21 with Table 2.2: no loss → OK; 1..Φ−3 losses → FR; Φ−2..Φ → RTO.
	pOK := math.Pow(1-mm.loss, float64(phi))
	pRTO := 0.0
	for n := max(1, phi-2); n <= phi; n++ {
		pRTO += binom(phi, n, mm.loss)
	}
	pFR := max(0, 1-pOK-pRTO)
	total := x
	// Next-round windows follow NewReno ([164] (6)–(21)): OK grows (slow
	// start doubles up to g, then +1), FR halves, RTO restarts at 1.
	if pOK > 1e-9 {
		nw := w + 1
		if w < g {
			nw = min(2*w, g)
		}
		total += pOK * mm.rounds(budget-mm.tau, elapsed+mm.tau, nw, g, stOK, 0)
	}
	half := max(2, w/2)
	if pFR > 1e-9 {
		total += pFR * mm.rounds(budget-mm.tau, elapsed+mm.tau, half, half, stFR, 0)
	}
	if pRTO > 1e-9 {
		total += pRTO * mm.rounds(budget-mm.rto, elapsed+mm.rto, 1, half, stRTO, 0)
	}
	if inflight == 0 {
		mm.memo[key] = total
	}
	return total
}

// binom is C(n,k)·p^k·(1−p)^(n−k), computed in log space.
func binom(n, k int, p float64) float64 {
	if p <= 0 {
		if k == 0 {
			return 1
		}
		return 0
	}
	if p >= 1 {
		if k == n {
			return 1
		}
		return 0
	}
	lg := func(x int) float64 { v, _ := math.Lgamma(float64(x + 1)); return v }
	return math.Exp(lg(n) - lg(k) - lg(n-k) + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
}
