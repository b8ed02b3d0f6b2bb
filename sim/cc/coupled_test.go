package cc

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// twoSubflows is the hand-computed case of the coupled tests: w1 = 10
// packets at 100 ms, w2 = 20 packets at 200 ms, so x1 = x2 = 100 pkt/s.
func twoSubflows(t *testing.T, name string) (Controller, Controller, *Group) {
	t.Helper()
	g := NewGroup()
	a, err := New(name, Config{MSS: mss, InitialWindow: 10 * mss, Group: g})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(name, Config{MSS: mss, InitialWindow: 20 * mss, Group: g})
	a.OnRTTSample(0, RTT{Smoothed: 100 * time.Millisecond, Latest: 100 * time.Millisecond})
	b.OnRTTSample(0, RTT{Smoothed: 200 * time.Millisecond, Latest: 200 * time.Millisecond})
	// Leave slow start without changing the windows (MACO's quick start
	// set its own initial windows: put 10 and 20 packets back).
	for i, c := range []Controller{a, b} {
		switch x := c.(type) {
		case *Coupled:
			x.ssthresh = x.me.cwnd
		case *MACO:
			x.me.cwnd = float64((i + 1) * 10 * mss)
			x.ssthresh = x.me.cwnd
		}
	}
	return a, b, g
}

func near(got, want float64) bool { return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want)) }

func TestCoupledIncreaseHandComputed(t *testing.T) {
	// LIA (RFC 6356): α = w_tot·max(w/τ²)/(Σ w/τ)² = 30·1000/200² = 0.75;
	// per packet on path 1: min(α/w_tot, 1/w_1) = min(0.025, 0.1) = 0.025.
	// OLIA (Eq. 3.1), no losses yet: the ACKed packet makes ℓ of the ACKing
	// path the only non-zero one, so B = {that path}, M = {2}. Path 1:
	// α_1 = 1/(|R|·|B∖M|) = 0.5, (10/0.01)/200² + 0.5/10 = 0.075. Path 2:
	// B∖M = ∅, α_2 = 0, (20/0.04)/200² = 0.0125.
	// BALIA: α = 1 on both; path 1: 100/(0.1·200²)·1·1 = 0.025, path 2:
	// 100/(0.2·200²) = 0.0125.
	// MACO Eq. 3.26 with T = τ: 3·max(x²√T)/(2τ(Σx)^2.5) = 3·100²·√0.2 /
	// (2·0.1·200^2.5) on path 1, /(2·0.2·…) on path 2.
	maco1 := 3 * 1e4 * math.Sqrt(0.2) / (2 * 0.1 * math.Pow(200, 2.5))
	for _, tc := range []struct {
		name       string
		inc1, inc2 float64 // packets per acknowledged packet
	}{
		{"lia", 0.025, 1.0 / 20 * 0}, // path 2 checked below separately
		{"olia", 0.075, 0.0125},
		{"balia", 0.025, 0.0125},
		{"maco", maco1, maco1 / 2},
	} {
		a, b, _ := twoSubflows(t, tc.name)
		a.OnAck(time.Second, mss, time.Second/2, RTT{})
		if got := float64(a.Window()-10*mss) / mss; math.Abs(got-tc.inc1) > 1.0/mss {
			t.Errorf("%s path 1: +%.5f packets, want %.5f", tc.name, got, tc.inc1)
		}
		if tc.name == "lia" {
			// α is now computed with w1 = 10.025: check LIAAlpha directly.
			g := NewGroup()
			NewCoupled(LIA, Config{MSS: mss, InitialWindow: 10 * mss, Group: g}).OnRTTSample(0, RTT{Smoothed: 100 * time.Millisecond})
			NewCoupled(LIA, Config{MSS: mss, InitialWindow: 20 * mss, Group: g}).OnRTTSample(0, RTT{Smoothed: 200 * time.Millisecond})
			if got := LIAAlpha(g, mss); !near(got, 0.75) {
				t.Errorf("LIA α = %v, want 0.75", got)
			}
			continue
		}
		a2, b2, _ := twoSubflows(t, tc.name)
		_ = a2
		b2.OnAck(time.Second, mss, time.Second/2, RTT{})
		if got := (float64(b2.Window()) - 20*mss) / mss; math.Abs(got-tc.inc2) > 1.0/mss {
			t.Errorf("%s path 2: %+.5f packets, want %+.5f", tc.name, got, tc.inc2)
		}
		_ = b
	}
}

func TestOLIAAlphaAfterLosses(t *testing.T) {
	// Path 1 (small window) carried 100 packets since its last loss at
	// 100 ms: ℓ/τ² = 150000/0.01 beats path 2's 0 → B = {1}, M = {2}.
	a, b, g := twoSubflows(t, "olia")
	ca, cb := a.(*Coupled), b.(*Coupled)
	ca.me.l2 = 100 * mss
	if got := OLIAAlpha(g, ca); !near(got, 0.5) {
		t.Errorf("α_1 = %v, want 1/(|R|·|B∖M|) = 0.5", got)
	}
	if got := OLIAAlpha(g, cb); !near(got, -0.5) {
		t.Errorf("α_2 = %v, want −1/(|R|·|M|) = −0.5", got)
	}
	// Path 2 best and largest: B∖M = ∅, α = 0 everywhere.
	ca.me.l2, cb.me.l2 = 0, 1000*mss
	if a1, a2 := OLIAAlpha(g, ca), OLIAAlpha(g, cb); a1 != 0 || a2 != 0 {
		t.Errorf("B ⊆ M: α = %v, %v, want 0, 0", a1, a2)
	}
}

func TestCoupledLossDecrease(t *testing.T) {
	for _, tc := range []struct {
		name string
		w1   int // window of path 1 after a loss, bytes
	}{
		{"lia", 5 * mss},
		{"olia", 5 * mss},
		{"balia", 5 * mss}, // α = 1: w − w/2·min(1, 1.5)
	} {
		a, _, _ := twoSubflows(t, tc.name)
		a.OnLoss(time.Second, mss, time.Second-time.Millisecond)
		if a.Window() != tc.w1 {
			t.Errorf("%s: window after loss %d, want %d", tc.name, a.Window(), tc.w1)
		}
		if s := a.(SignalCounter).Signals(); s.LossEvents != 1 || s.Reductions != 1 {
			t.Errorf("%s: signals %+v", tc.name, s)
		}
	}
	// BALIA with α = 2 (path 1 half as fast): w − w/2·1.5 = w/4.
	g := NewGroup()
	a := NewCoupled(BALIA, Config{MSS: mss, InitialWindow: 8 * mss, Group: g})
	b := NewCoupled(BALIA, Config{MSS: mss, InitialWindow: 16 * mss, Group: g})
	a.OnRTTSample(0, RTT{Smoothed: 100 * time.Millisecond})
	b.OnRTTSample(0, RTT{Smoothed: 100 * time.Millisecond})
	a.OnLoss(time.Second, mss, time.Second-time.Millisecond)
	if a.Window() != 2*mss {
		t.Errorf("BALIA α=2 decrease: %d, want %d", a.Window(), 2*mss)
	}
}

func TestNewRenoCubicIgnoreGroup(t *testing.T) {
	// Passing a Group must not change the uncoupled controllers.
	for _, name := range []string{"newreno", "cubic"} {
		a, _ := New(name, Config{MSS: mss})
		b, _ := New(name, Config{MSS: mss, Group: NewGroup()})
		for i := 0; i < 200; i++ {
			now := time.Duration(i) * time.Millisecond
			for _, c := range []Controller{a, b} {
				c.OnAck(now, mss, now-50*time.Millisecond, RTT{Smoothed: 50 * time.Millisecond})
				if i%50 == 49 {
					c.OnLoss(now, mss, now-time.Millisecond)
				}
			}
			if a.Window() != b.Window() {
				t.Fatalf("%s: windows differ with a Group: %d vs %d", name, a.Window(), b.Window())
			}
		}
	}
}

func TestQuickStartWindow(t *testing.T) {
	const m, minW = 1500.0, 3000.0
	for _, tc := range []struct {
		name   string
		bdp    float64
		own    []float64
		others [][]float64
		want   float64
	}{
		{"no history: 4 MSS (Alg. 4 l. 14)", 500 * m, nil, nil, 4 * m},
		{"own history, BDP larger (Eq. 3.16)", 500 * m, []float64{100 * m, 300 * m}, nil, 150 * m},
		{"own history, BDP smaller", 200 * m, []float64{300 * m}, [][]float64{{900 * m}}, 100 * m},
		{"others' history (Eq. 3.15, l. 7–12)", 500 * m, nil, [][]float64{{100 * m}, {240 * m}}, 120 * m},
		{"BDP unknown", 0, []float64{300 * m}, nil, 150 * m},
		{"tiny BDP: floor", 2 * m, []float64{300 * m}, nil, minW},
	} {
		if got := QuickStartWindow(tc.bdp, tc.own, tc.others, m, minW); !near(got, tc.want) {
			t.Errorf("%s: Ω = %.0f, want %.0f", tc.name, got, tc.want)
		}
	}
	// Never above the BDP (when the BDP is at least the floor/γ).
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 10000; i++ {
		bdp := (8 + 2000*rng.Float64()) * m
		own := []float64{}
		for j := rng.IntN(4); j > 0; j-- {
			own = append(own, 3000*m*rng.Float64())
		}
		others := [][]float64{{5000 * m * rng.Float64()}}
		if got := QuickStartWindow(bdp, own, others, m, minW); got > bdp {
			t.Fatalf("Ω = %.0f > BDP %.0f (own %v, others %v)", got, bdp, own, others)
		}
	}
}

func TestMACOQuickStartFromGeometry(t *testing.T) {
	// C^A = 100 Mbit/s, D = 100 ms: B̄(t0) = 1.25 MB (Alg. 3 l. 7) is the SST;
	// the first subflow starts at 4 MSS.
	g := NewGroup()
	acc := func(time.Duration) (float64, time.Duration) { return 100e6, 100 * time.Millisecond }
	m0 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	if m0.Window() != 4*mss || m0.Ssthresh() != 1250000 {
		t.Fatalf("first subflow: Ω %d, SST %d; want %d, 1250000", m0.Window(), m0.Ssthresh(), 4*mss)
	}
	// After subflow 0 saw congestion at 400 MSS, a new subflow starts at
	// γ·min(B̄, 400 MSS) = 200 MSS (Eq. 3.15), below the BDP.
	m0.me.history = append(m0.me.history, 400*mss)
	m1 := NewMACO(Config{MSS: mss, Group: g, Access: acc})
	if m1.Window() != 200*mss {
		t.Fatalf("second subflow: Ω %d, want %d", m1.Window(), 200*mss)
	}
	if float64(m1.Window()) > m1.AvgBDP(0) {
		t.Fatalf("Ω %d above B̄ %.0f", m1.Window(), m1.AvgBDP(0))
	}
}

func TestIsCongestion(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name          string
		tp, capPred   float64
		rtt, d, delta time.Duration
		want          bool
	}{
		{"queue built, below capacity", 8e6, 10e6, 180 * ms, 100 * ms, 10 * ms, true},
		{"handover: RTT at propagation", 2e6, 10e6, 105 * ms, 100 * ms, 10 * ms, false},
		{"at capacity: not congestion", 10e6, 10e6, 180 * ms, 100 * ms, 10 * ms, false},
		{"RTT inside Δ_R", 8e6, 10e6, 109 * ms, 100 * ms, 10 * ms, false},
		{"capacity unknown: delay only", 8e6, 0, 180 * ms, 100 * ms, 10 * ms, true},
	} {
		if got := IsCongestion(tc.tp, tc.capPred, tc.rtt, tc.d, tc.delta); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestMACOLossClassificationTrace feeds a crafted trace: ACKs at 4 Mbit/s on
// a 10 Mbit/s access link with D = 100 ms. A loss while the RTT sits at
// the propagation delay (handover, channel) keeps the window; a loss after
// the RTT rose by a standing queue halves it and enters 𝒲_r.
func TestMACOLossClassificationTrace(t *testing.T) {
	ms := time.Millisecond
	acc := func(time.Duration) (float64, time.Duration) { return 10e6, 100 * ms }
	m := NewMACO(Config{MSS: mss, Access: acc})
	m.ssthresh = 0 // congestion avoidance
	m.me.cwnd = 100 * mss
	rng := rand.New(rand.NewPCG(5, 6))
	now := time.Duration(0)
	step := 3 * ms // 1500 B every 3 ms = 4 Mbit/s
	feed := func(n int, rtt func() time.Duration) {
		for i := 0; i < n; i++ {
			now += step
			r := rtt()
			m.OnPacketSent(now, mss, 0)
			m.OnRTTSample(now, RTT{Latest: r, Smoothed: r, Min: 100 * ms})
			m.OnAck(now, mss, now-r, RTT{})
		}
	}
	jitter := func() time.Duration { return 100*ms + time.Duration(rng.IntN(4000))*time.Microsecond }
	feed(400, jitter)
	w := m.Window()
	m.OnLoss(now, mss, now-ms)
	if m.Window() < w || m.Signals().Reductions != 0 {
		t.Fatalf("handover-like loss cut the window %d → %d", w, m.Window())
	}
	if tp := m.CapacityN(); math.Abs(tp-0.5e6) > 0.05e6 {
		t.Errorf("Ĉ^N = %.0f B/s, want ≈ 500000 (4 Mbit/s)", tp)
	}
	feed(100, func() time.Duration { return 100*ms + 200*ms + time.Duration(rng.IntN(4000))*time.Microsecond })
	w = m.Window()
	m.OnLoss(now, mss, now-ms)
	if m.Window() != w/2 || m.Signals().Reductions != 1 || m.Signals().LossEvents != 2 {
		t.Fatalf("congestion loss: window %d → %d, signals %+v", w, m.Window(), m.Signals())
	}
	if h := m.History(); len(h) != 1 || int(h[0]) != w {
		t.Fatalf("𝒲_r = %v, want [%d]", h, w)
	}
}

// TestMACODeltaRFloor: without delay noise Δ_R is 5 % of D, so a loss with
// a one-packet queue (RTT = D + 0.1 ms) is not congestion.
func TestMACODeltaRFloor(t *testing.T) {
	ms := time.Millisecond
	acc := func(time.Duration) (float64, time.Duration) { return 200e6, 100 * ms }
	m := NewMACO(Config{MSS: mss, Access: acc})
	m.ssthresh, m.me.cwnd = 0, 500*mss
	r := 100*ms + 100*time.Microsecond
	for i := 0; i < 64; i++ {
		now := time.Duration(i) * ms
		m.OnRTTSample(now, RTT{Latest: r, Smoothed: r})
		m.OnAck(now, mss, now-r, RTT{})
	}
	if got := m.deltaR(); got != 5*ms {
		t.Fatalf("Δ_R = %v, want the 5 ms floor", got)
	}
	w := m.Window()
	m.OnLoss(time.Second, mss, time.Second-ms)
	if m.Window() != w {
		t.Fatalf("a one-packet queue counted as congestion: window %d", m.Window())
	}
}
