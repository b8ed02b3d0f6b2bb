package peekaboo

import (
	"math"
	"math/rand/v2"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

// A LinUCB step worked by hand, d = 2, α = 2:
//
//	A = I, b = 0. Update with x = (1, 0), r = 3:
//	A = [[2,0],[0,1]], A⁻¹ = [[½,0],[0,1]], b = (3, 0), θ = A⁻¹b = (1.5, 0).
//	Second update x = (1, 1), r = 1: A = [[3,1],[1,2]], det 5,
//	A⁻¹ = [[⅖,−⅕],[−⅕,⅗]], b = (4, 1), θ = (8/5 − 1/5, −4/5 + 3/5) = (1.4, −0.2).
//	Score of x = (0, 1): mean −0.2, width √⅗, UCB −0.2 + 2√0.6.
//
// θ = A·b would give (11, 6) here; the test fails for that bug.
func TestLinUCBHandStep(t *testing.T) {
	l, err := NewLinUCB(2, 2, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Update(0, []float64{1, 0}, 3); err != nil {
		t.Fatal(err)
	}
	if th := l.Theta(0); !near(th[0], 1.5) || !near(th[1], 0) {
		t.Fatalf("after one step θ = %v, want (1.5, 0)", th)
	}
	if err := l.Update(0, []float64{1, 1}, 1); err != nil {
		t.Fatal(err)
	}
	if th := l.Theta(0); !near(th[0], 1.4) || !near(th[1], -0.2) {
		t.Fatalf("after two steps θ = %v, want (1.4, −0.2)", th)
	}
	m, w, err := l.Score(0, []float64{0, 1})
	if err != nil || !near(m, -0.2) || !near(w, math.Sqrt(0.6)) {
		t.Fatalf("Score = %v, %v, %v; want −0.2, √0.6", m, w, err)
	}
	// Arm 1 is untouched: mean 0, width |x| = 1, UCB 2 > −0.2 + 2√0.6 ≈ 1.349.
	a, u, err := l.Choose([]float64{0, 1}, []int{0, 1})
	if err != nil || a != 1 || !near(u, 2) {
		t.Fatalf("Choose = %d, %v, %v; want arm 1 with UCB 2", a, u, err)
	}
	// Greedy (α = 0) picks arm 1 too (0 > −0.2), and arm 0 for x = (1, 0).
	g, _ := NewLinUCB(2, 2, 0)
	_ = g.Update(0, []float64{1, 0}, 3)
	if a, _, _ := g.Choose([]float64{1, 0}, []int{0, 1}); a != 0 {
		t.Fatalf("greedy chose %d for x=(1,0), want 0 (θ₀ᵀx = 1.5 > 0)", a)
	}
}

// Sherman–Morrison keeps A⁻¹ equal to the inverse of I + Σxxᵀ.
func TestLinUCBInverseMatchesDirect(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const d = 4
	l, _ := NewLinUCB(1, d, 1)
	A := make([]float64, d*d)
	for i := range d {
		A[i*d+i] = 1
	}
	for range 50 {
		x := make([]float64, d)
		for i := range x {
			x[i] = rng.NormFloat64()
		}
		_ = l.Update(0, x, rng.Float64())
		for i := range d {
			for j := range d {
				A[i*d+j] += x[i] * x[j]
			}
		}
	}
	// A · A⁻¹ = I.
	for i := range d {
		for j := range d {
			s := 0.0
			for k := range d {
				s += A[i*d+k] * l.ainv[0][k*d+j]
			}
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(s-want) > 1e-9 {
				t.Fatalf("(A·A⁻¹)[%d][%d] = %v, want %v", i, j, s, want)
			}
		}
	}
}

func TestLinUCBBadInput(t *testing.T) {
	if _, err := NewLinUCB(0, 2, 1); err == nil {
		t.Error("0 arms accepted")
	}
	if _, err := NewLinUCB(1, 2, -1); err == nil {
		t.Error("negative alpha accepted")
	}
	l, _ := NewLinUCB(1, 2, 1)
	for _, tc := range []struct {
		a int
		x []float64
		r float64
	}{{1, []float64{1, 1}, 0}, {0, []float64{1}, 0}, {0, []float64{math.NaN(), 1}, 0}, {0, []float64{1, 1}, math.Inf(1)}} {
		if err := l.Update(tc.a, tc.x, tc.r); err == nil {
			t.Errorf("Update(%d, %v, %v) accepted", tc.a, tc.x, tc.r)
		}
	}
}

func paths2(fastCan, slowCan bool) []Path {
	return []Path{
		{ID: 7, Cwnd: 30000, Inflight: 30000, SendWindow: 1e6, RTT: 0.02, CanSend: fastCan},
		{ID: 9, Cwnd: 20000, Inflight: 5000, SendWindow: 1e6, RTT: 0.08, CanSend: slowCan},
	}
}

func TestDecideRules(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	s, err := New(DefaultConfig(9, 7))
	if err != nil {
		t.Fatal(err)
	}
	// Fast path open: send there, bandit not consulted.
	d, _ := s.Decide(paths2(true, true), rng)
	if !d.Send || d.Path != 7 || d.Ticket != 0 {
		t.Fatalf("fast path open: %+v, want send on 7 without a ticket", d)
	}
	// Nothing can send: wait, not consulted.
	d, _ = s.Decide(paths2(false, false), rng)
	if d.Send || d.Ticket != 0 {
		t.Fatalf("all blocked: %+v, want wait without a ticket", d)
	}
	// Fast blocked, slow open: consulted.
	d, _ = s.Decide(paths2(false, true), rng)
	if d.Ticket == 0 {
		t.Fatalf("fast blocked, slow open: %+v, want a consulted decision", d)
	}
	if d.Send && d.Path != 9 {
		t.Fatalf("sent on %d, want 9", d.Path)
	}
	if !d.Send {
		// Sticky wait: not consulted again until the fast path opens.
		d2, _ := s.Decide(paths2(false, true), rng)
		if d2.Send || d2.Ticket != 0 {
			t.Fatalf("after a wait: %+v, want a sticky wait", d2)
		}
	}
	if s.Pending() != 1 {
		t.Fatalf("pending %d, want 1", s.Pending())
	}
	if err := s.Learn(d.Ticket, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Learn(d.Ticket, 1); err == nil {
		t.Fatal("a ticket rewarded twice")
	}
}

// The stochastic adjustment: with a bandit that strongly prefers one
// action, the other is still taken at 1 − p (0.3 for wait, 0.1 for send).
func TestStochasticAdjustment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		teach    int // arm to reward high
		wantSend float64
	}{{"prefers wait", waitArm, 1 - DefaultPWait}, {"prefers send", 2, DefaultPSend}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := DefaultConfig(7, 9)
			cfg.Alpha = 0
			s, _ := New(cfg)
			x, _ := s.Features(paths2(false, true))
			for range 20 {
				_ = s.lin.Update(tc.teach, x, 10)
				_ = s.lin.Update(2+waitArm-tc.teach, x, 0.1) // the other arm, low
			}
			rng := rand.New(rand.NewPCG(5, 6))
			const n = 20000
			sends := 0
			for range n {
				s.waiting = false
				d, err := s.Decide(paths2(false, true), rng)
				if err != nil {
					t.Fatal(err)
				}
				if d.Send {
					sends++
				}
				s.Forget(d.Ticket)
			}
			if got := float64(sends) / n; math.Abs(got-tc.wantSend) > 0.015 {
				t.Fatalf("send share %.3f, want %.2f", got, tc.wantSend)
			}
		})
	}
}

// Three paths: the candidates are wait plus each open slower path, and the
// bandit learns which slow path pays.
func TestThreePathsLearns(t *testing.T) {
	cfg := DefaultConfig(1, 2, 3)
	cfg.PSend, cfg.PWait = 1, 1 // no stochastic adjustment: see the bandit alone
	s, _ := New(cfg)
	rng := rand.New(rand.NewPCG(7, 8))
	ps := []Path{
		{ID: 1, Cwnd: 10000, Inflight: 10000, SendWindow: 1e5, RTT: 0.01},
		{ID: 2, Cwnd: 10000, Inflight: 0, SendWindow: 1e5, RTT: 0.05, CanSend: true},
		{ID: 3, Cwnd: 10000, Inflight: 0, SendWindow: 1e5, RTT: 0.03, CanSend: true},
	}
	// Path 2 delivers in 60 ms, path 3 in 200 ms, waiting in 100 ms.
	elapsed := map[int]float64{1: 0.1, 2: 0.06, 3: 0.2}
	counts := map[int]int{}
	for i := range 400 {
		s.waiting = false
		d, err := s.Decide(ps, rng)
		if err != nil || d.Ticket == 0 {
			t.Fatalf("step %d: %+v, %v", i, d, err)
		}
		p := 1
		if d.Send {
			p = d.Path
		}
		r, _ := Reward(1500, elapsed[p])
		if err := s.Learn(d.Ticket, r); err != nil {
			t.Fatal(err)
		}
		if i >= 300 {
			counts[p]++
		}
	}
	if counts[2] < 90 {
		t.Fatalf("last 100 decisions %v, want path 2 nearly always", counts)
	}
}

func TestNewBadConfig(t *testing.T) {
	for _, cfg := range []Config{
		{Paths: []int{1}, PWait: 0.7, PSend: 0.9},
		{Paths: []int{1, 1}, PWait: 0.7, PSend: 0.9},
		{Paths: []int{1, 2}, PWait: 1.5, PSend: 0.9},
		{Paths: []int{1, 2}, PWait: 0.7, PSend: 0.9, Alpha: -1},
	} {
		if _, err := New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := Reward(1500, 0); err == nil {
		t.Error("Reward with elapsed 0 accepted")
	}
}
