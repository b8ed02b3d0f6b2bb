package cc

import (
	"math"
	"testing"
	"time"
)

// subflows returns n coupled controllers name in one Group, in congestion
// avoidance, subflow i with w[i] packets and smoothed (and latest) RTT
// rtt[i]. MACO's quick-start windows are replaced by w.
func subflows(t *testing.T, name string, w []float64, rtt []time.Duration) ([]Controller, *Group) {
	t.Helper()
	g := NewGroup()
	var cs []Controller
	for i := range w {
		c, err := New(name, Config{MSS: mss, InitialWindow: int(w[i] * mss), Group: g})
		if err != nil {
			t.Fatal(err)
		}
		c.OnRTTSample(0, RTT{Smoothed: rtt[i], Latest: rtt[i]})
		switch x := c.(type) {
		case *Coupled:
			x.ssthresh = x.me.cwnd
		case *MACO:
			x.me.cwnd = w[i] * mss
			x.ssthresh = x.me.cwnd
		}
		cs = append(cs, c)
	}
	return cs, g
}

// TestCoupledThreeSubflowsHandComputed: w = 10, 20, 30 packets at 100,
// 200, 300 ms, so x = 100 pkt/s on each and Σx = 300. The increase per
// acknowledged packet on each path, by hand:
//
//   - LIA: α = w_tot·max(w/τ²)/(Σx)² = 60·1000/300² = 2/3; path r:
//     min(α/60, 1/w_r) = 1/90 on every path.
//   - OLIA: the ACK makes ℓ of the ACKing path the only non-zero one, so
//     B = {r} and M = {3} (largest window). Paths 1 and 2: α_r = 1/(3·1),
//     (w_r/τ_r²)/300² + (1/3)/w_r = 1/90 + 1/30 = 2/45 and 1/180 + 1/60 =
//     1/45. Path 3: B ⊆ M, α = 0: (30/0.09)/300² = 1/270.
//   - BALIA: α = 1 everywhere: x_r/(τ_r·300²) = 1/90, 1/180, 1/270.
//   - MACO (T = τ): 3·max(x²√T)/(2τ_r·300^{5/2}) with max(x²√T) =
//     100²·√0.3 (the longest T).
func TestCoupledThreeSubflowsHandComputed(t *testing.T) {
	w := []float64{10, 20, 30}
	rtt := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 300 * time.Millisecond}
	maco := func(tau float64) float64 { return 3 * 1e4 * math.Sqrt(0.3) / (2 * tau * math.Pow(300, 2.5)) }
	for _, tc := range []struct {
		name string
		inc  [3]float64
	}{
		{"lia", [3]float64{1.0 / 90, 1.0 / 90, 1.0 / 90}},
		{"olia", [3]float64{2.0 / 45, 1.0 / 45, 1.0 / 270}},
		{"balia", [3]float64{1.0 / 90, 1.0 / 180, 1.0 / 270}},
		{"maco", [3]float64{maco(0.1), maco(0.2), maco(0.3)}},
	} {
		for i := range 3 {
			cs, _ := subflows(t, tc.name, w, rtt)
			cs[i].OnAck(time.Second, mss, time.Second/2, RTT{})
			// Windows are float64 bytes; Window() truncates to whole bytes.
			if got := float64(cs[i].Window())/mss - w[i]; math.Abs(got-tc.inc[i]) > 1.0/mss {
				t.Errorf("%s path %d: %+.5f packets, want %+.5f", tc.name, i+1, got, tc.inc[i])
			}
		}
	}
	_, g := subflows(t, "lia", w, rtt)
	if got := LIAAlpha(g, mss); !near(got, 2.0/3) {
		t.Errorf("LIA α with 3 subflows = %v, want 2/3", got)
	}
}

// TestMACOFourSubflows checks Eq. 3.26 with four subflows term by term:
// the exact increase (not truncated to bytes), the max over subflows of
// x_k²√T_k when one subflow has seen a longer RTT than its smoothed one,
// and the aggregate gain per RTT of n equal subflows at one bottleneck,
// 3·√W/(2n²) packets (the figure MACOIncrease's comment quotes).
func TestMACOFourSubflows(t *testing.T) {
	ms := time.Millisecond
	w := []float64{10, 20, 30, 40}
	rtt := []time.Duration{100 * ms, 200 * ms, 300 * ms, 400 * ms}
	cs, g := subflows(t, "maco", w, rtt)
	// x = 100 pkt/s on each, Σx = 400; T = τ, the largest x²√T is path 4's.
	for i, c := range cs {
		want := 3 * 1e4 * math.Sqrt(0.4) / (2 * rtt[i].Seconds() * math.Pow(400, 2.5))
		if got := MACOIncrease(g, c.(*MACO).me, mss); !near(got, want) {
			t.Errorf("path %d: U = %v, want %v", i+1, got, want)
		}
	}
	// Path 1 once saw 900 ms (smoothed still 100 ms): T_1 = 0.9 s makes
	// x_1²√T_1 = 100²·0.3·√10 the max, for every subflow's increase.
	cs[0].OnRTTSample(time.Second, RTT{Smoothed: 100 * ms, Latest: 900 * ms})
	for i, c := range cs {
		want := 3 * 1e4 * math.Sqrt(0.9) / (2 * rtt[i].Seconds() * math.Pow(400, 2.5))
		if got := MACOIncrease(g, c.(*MACO).me, mss); !near(got, want) {
			t.Errorf("T_1 = 0.9 s, path %d: U = %v, want %v", i+1, got, want)
		}
	}
	// n equal subflows of 100 packets at 100 ms (T = τ): Σ_r w_r·U_r =
	// 3·√(100n)/(2n²) packets per RTT.
	for _, n := range []int{1, 2, 3, 4} {
		w := make([]float64, n)
		r := make([]time.Duration, n)
		for i := range w {
			w[i], r[i] = 100, 100*ms
		}
		cs, g := subflows(t, "maco", w, r)
		agg := 0.0
		for i, c := range cs {
			agg += w[i] * MACOIncrease(g, c.(*MACO).me, mss)
		}
		want := 3 * math.Sqrt(100*float64(n)) / (2 * float64(n*n))
		if !near(agg, want) {
			t.Errorf("%d equal subflows: %.6f packets per RTT, want %.6f", n, agg, want)
		}
	}
}

// TestMACOThreeSubflowsQuickStart: a third subflow without history starts
// from the largest window at congestion of the other two (Algorithm 4
// lines 7–12), capped by B̄ (Eq. 3.15); its own history then takes over
// (lines 3–5, Eq. 3.16).
func TestMACOThreeSubflowsQuickStart(t *testing.T) {
	g := NewGroup()
	// C^A = 100 Mbit/s, D = 100 ms: B̄ = 1.25 MB ≈ 833 packets.
	acc := func(time.Duration) (float64, time.Duration) { return 100e6, 100 * time.Millisecond }
	m0 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	m1 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	m0.me.history = []float64{400 * mss}
	m1.me.history = []float64{600 * mss, 300 * mss}
	m2 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	if m2.Window() != 300*mss {
		t.Fatalf("third subflow: Ω = %d, want γ·max(400, 600, 300) MSS = %d", m2.Window(), 300*mss)
	}
	m1.me.history = append(m1.me.history, 2000*mss)
	m3 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	if m3.Window() != 625000 {
		t.Fatalf("fourth subflow: Ω = %d, want γ·B̄ = 625000 (the history's 2000 MSS is above B̄)", m3.Window())
	}
	// Subflow 2 broken and reconnected with its own history of 100 MSS:
	// Eq. 3.16 uses it, not the others' larger windows.
	m2.me.history = []float64{100 * mss}
	m2.OnPersistentCongestion(time.Second)
	if m2.Window() != 50*mss || m2.Ssthresh() != 1250000 {
		t.Fatalf("reconnected subflow: Ω %d, SST %d; want %d, 1250000", m2.Window(), m2.Ssthresh(), 50*mss)
	}
}

// TestMACONonCongestionLossKeepsGrowing: Algorithm 5's else branch applies
// Eq. 3.26 on every ACK after a loss that is not congestion; only a
// congestion loss opens a recovery period without growth.
func TestMACONonCongestionLossKeepsGrowing(t *testing.T) {
	ms := time.Millisecond
	acc := func(time.Duration) (float64, time.Duration) { return 10e6, 100 * ms }
	m := NewMACO(Config{MSS: mss, Access: acc})
	m.ssthresh, m.me.cwnd = 0, 100*mss
	at := func(now, rtt time.Duration) {
		m.OnPacketSent(now, mss, 0)
		m.OnRTTSample(now, RTT{Latest: rtt, Smoothed: rtt})
	}
	at(time.Second, 100*ms) // RTT at D: a loss now is not congestion
	m.OnLoss(time.Second, mss, time.Second-50*ms)
	w := m.Window()
	m.OnAck(time.Second+ms, mss, time.Second-40*ms, RTT{}) // sent before the loss
	if m.Window() <= w || m.Signals().Reductions != 0 {
		t.Fatalf("non-congestion loss: window %d → %d, signals %+v", w, m.Window(), m.Signals())
	}
	// A second loss of a packet sent before the first was declared belongs
	// to the same episode: not classified again.
	m.OnLoss(time.Second+2*ms, mss, time.Second-30*ms)
	if m.Signals().LossEvents != 1 {
		t.Fatalf("one episode counted %d times", m.Signals().LossEvents)
	}
	at(2*time.Second, 300*ms) // a standing queue: congestion
	m.OnLoss(2*time.Second, mss, 2*time.Second-ms)
	w = m.Window()
	m.OnAck(2*time.Second+ms, mss, 2*time.Second-ms, RTT{})
	if m.Window() != w || m.Signals().Reductions != 1 {
		t.Fatalf("congestion loss: window %d → %d in recovery, signals %+v", w, m.Window(), m.Signals())
	}
	m.OnAck(2*time.Second+400*ms, mss, 2*time.Second+100*ms, RTT{}) // sent after: recovery over
	if m.Window() <= w {
		t.Fatalf("after recovery: window %d, want above %d", m.Window(), w)
	}
}

// TestMACOSSTBelowOmega: SST is B̄ even when B̄ is below the initial
// window, so the subflow starts in congestion avoidance (§3.4.2), not in an
// unbounded slow start.
func TestMACOSSTBelowOmega(t *testing.T) {
	acc := func(time.Duration) (float64, time.Duration) { return 400e3, 100 * time.Millisecond } // B̄ = 5000 B
	m := NewMACO(Config{MSS: mss, Access: acc})
	if m.Window() != 4*mss || m.Ssthresh() != 5000 || m.InSlowStart() {
		t.Fatalf("Ω %d, SST %d, slow start %v; want %d, 5000, false", m.Window(), m.Ssthresh(), m.InSlowStart(), 4*mss)
	}
}
