package ride

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func types(s string) []FrameType {
	out := make([]FrameType, len(s))
	for k, c := range s {
		t, err := ParseFrameType(string(c))
		if err != nil {
			panic(err)
		}
		out[k] = t
	}
	return out
}

func viewed(s string) []bool {
	out := make([]bool, len(s))
	for k, c := range s {
		out[k] = c == '1'
	}
	return out
}

// Fig. 5.2/5.4's GoP: I₁ B₁ B₂ P₁ B₃ B₄ P₂ B₅ B₆ (indices 0…8).
const fig54 = "IBBPBBPBB"

func TestDeadlineFrameEq58(t *testing.T) {
	for _, tc := range []struct {
		name   string
		gop, v string
		i, j   int
	}{
		// Eq. 5.7 (everything viewed), the examples under Fig. 5.4.
		{"I1 all viewed: last frame B6", fig54, "111111111", 0, 8},
		{"P1 all viewed: next P", fig54, "111111111", 3, 6},
		{"B1: itself", fig54, "111111111", 1, 1},
		{"P2 no later P: last frame of GoP", fig54, "111111111", 6, 8},
		// Fig. 5.5, tile 1: B6 not viewed; B3, B4 and P2 not viewed.
		{"I1 FoV: last viewed B5", fig54, "111100010", 0, 7},
		{"P1 FoV: nextP and B3,B4 unviewed → itself", fig54, "111100010", 3, 3},
		// The other branches of Eq. 5.8.
		{"P1 nextP unviewed, B4 viewed → B4", fig54, "111101000", 3, 5},
		{"P1 nextP unviewed, B3 viewed only → B3", fig54, "111110000", 3, 4},
		{"P1 nextP viewed although B3,B4 not", fig54, "111100100", 3, 6},
		{"P2 last P, B5 viewed, B6 not → B5", fig54, "000000110", 6, 7},
		{"P2 last P, nothing later viewed → itself", fig54, "111111100", 6, 6},
		{"P2 last P, earlier frames viewed only → itself", fig54, "110000000", 6, 6},
		{"I nothing viewed → itself", fig54, "000000000", 0, 0},
		{"I only itself viewed", fig54, "100000000", 0, 0},
		{"B unviewed still itself", fig54, "000000000", 4, 4},
		{"default GoP: P before closing P → closing P", DefaultGoP, strings.Repeat("1", 50), 48, 49},
		{"default GoP: closing P → last viewed", DefaultGoP, strings.Repeat("1", 50), 49, 49},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := DeadlineFrame(types(tc.gop), viewed(tc.v), tc.i); got != tc.j {
				t.Errorf("DeadlineFrame(%s, v=%s, %d) = %d, want %d", tc.gop, tc.v, tc.i, got, tc.j)
			}
		})
	}
}

func TestDepsAndClosure(t *testing.T) {
	h := types(fig54)
	for _, tc := range []struct {
		i          int
		deps, clos []int
	}{
		{0, nil, []int{0}},
		{1, []int{0, 3}, []int{0, 1, 3}},
		{3, []int{0}, []int{0, 3}},
		{4, []int{3, 6}, []int{0, 3, 4, 6}},
		{6, []int{3}, []int{0, 3, 6}},
		{8, []int{6}, []int{0, 3, 6, 8}}, // trailing B: no i⁺ in the GoP
	} {
		if got := Deps(h, tc.i); !slices.Equal(got, tc.deps) {
			t.Errorf("Deps(%d) = %v, want %v", tc.i, got, tc.deps)
		}
		if got := Closure(h, tc.i); !slices.Equal(got, tc.clos) {
			t.Errorf("Closure(%d) = %v, want %v", tc.i, got, tc.clos)
		}
	}
}

func ms(x float64) time.Duration { return time.Duration(x * float64(time.Millisecond)) }

func TestDecodeTimes(t *testing.T) {
	h := types(fig54)
	a := []time.Duration{ms(50), ms(10), ms(20), ms(30), ms(200), ms(5), ms(100), ms(1), Never}
	want := []time.Duration{
		ms(50),  // I: own arrival
		ms(50),  // B1: max(10, d_I 50, d_P1 50)
		ms(50),  // B2
		ms(50),  // P1: max(30, d_I 50)
		ms(200), // B3: own arrival 200
		ms(100), // B4: max(5, d_P1 50, d_P2 100)
		ms(100), // P2: max(100, 50)
		ms(100), // B5: max(1, d_P2)
		Never,   // B6 never arrives
	}
	if got := DecodeTimes(h, a); !slices.Equal(got, want) {
		t.Errorf("DecodeTimes = %v, want %v", got, want)
	}
	a[0] = Never // a lost I frame blocks the whole GoP
	for x, d := range DecodeTimes(h, a) {
		if d != Never {
			t.Errorf("frame %d decodes at %v without its I frame", x, d)
		}
	}
}

// Fig. 5.6's four cases with t₁ = 100 ms, t₂ = 133 ms, Γ = 200 ms.
func TestRewardFig56(t *testing.T) {
	t1, t2, gamma := ms(100), ms(133), ms(200)
	p := RewardParams{Alpha: 0.5, Unit: time.Millisecond}
	cost := ms(5)
	for _, tc := range []struct {
		name   string
		d      time.Duration
		st     Stages
		reward float64
	}{
		{"(a) decoded before playback", ms(70), Stages{EA: ms(30), EP: ms(33), DH: ms(67)}, 0.5*30 + 0.5*(33+67) - 5},
		{"(b) decoded within its slot", ms(110), Stages{EP: ms(23), DH: ms(67), Rebuff: ms(10)}, 0.5*(23+67) - 10 - 5},
		{"(c) late but helps decoding", ms(150), Stages{DH: ms(50), Rebuff: ms(50)}, 0.5*50 - 50 - 5},
		{"(d) too late to help", ms(250), Stages{Rebuff: ms(100)}, -100 - 5},
		{"(d) never decoded", Never, Stages{Rebuff: ms(100)}, -100 - 5},
		{"boundary d = t1", ms(100), Stages{EP: ms(33), DH: ms(67)}, 0.5*100 - 5},
		{"boundary d = Γ", ms(200), Stages{Rebuff: ms(100)}, -100 - 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := StagesOf(tc.d, t1, t2, gamma)
			if st != tc.st {
				t.Errorf("StagesOf(%v) = %+v, want %+v", tc.d, st, tc.st)
			}
			if r := Reward(p, false, st, t1, gamma, cost); math.Abs(r-tc.reward) > 1e-9 {
				t.Errorf("Reward = %v, want %v", r, tc.reward)
			}
		})
	}
	if r := Reward(p, true, Stages{}, t1, gamma, cost); r != -100 {
		t.Errorf("skip reward = %v, want −(Γ−t₁) = −100", r)
	}
	if r := Reward(RewardParams{Alpha: 1, Unit: time.Millisecond}, false, StagesOf(ms(70), t1, t2, gamma), t1, gamma, 0); r != 30 {
		t.Errorf("α = 1 reward = %v, want T_EA = 30", r)
	}
}

func TestTxCost(t *testing.T) {
	if got := TxCost(125000, 10e6); got != 100*time.Millisecond {
		t.Errorf("TxCost(125 kB, 10 Mbit/s) = %v, want 100ms", got)
	}
	if got := TxCost(1000, 0); got != 0 {
		t.Errorf("TxCost without a rate = %v, want 0", got)
	}
}

func TestGenerateStatistics(t *testing.T) {
	v, err := Generate(GenConfig{Name: "t", Seconds: 20}, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Validate(); err != nil {
		t.Fatal(err)
	}
	if v.Frames() != 600 {
		t.Fatalf("frames = %d, want 20 s × 30 fps = 600", v.Frames())
	}
	// Every GoP: 50 frames, 1 I, 13 P, 36 B (§5.5.1).
	for s := 0; s < v.Frames(); s = v.GoPEnd(s) {
		var n [3]int
		for i := s; i < v.GoPEnd(s); i++ {
			n[v.Types[i]]++
		}
		if e := v.GoPEnd(s); e-s != 50 || n != [3]int{1, 13, 36} {
			t.Fatalf("GoP at %d: %d frames, I/P/B %v; want 50 frames 1/13/36", s, e-s, n)
		}
	}
	// Top-quality tile sizes: within 10–200 kbit, and I > P > B on average.
	top := v.Levels - 1
	var sum [3]float64
	var cnt [3]int
	for i := range v.Size {
		for z := range v.Size[i] {
			bits := float64(v.Size[i][z][top]) * 8
			if bits < MinTileBits-8 || bits > MaxTileBits+8 {
				t.Fatalf("frame %d tile %d: %v bits outside 10–200 kbit", i, z, bits)
			}
			sum[v.Types[i]] += bits
			cnt[v.Types[i]]++
			for q := 1; q < v.Levels; q++ {
				if v.Size[i][z][q] <= v.Size[i][z][q-1] {
					t.Fatalf("frame %d tile %d: level %d not larger than level %d", i, z, q, q-1)
				}
			}
		}
	}
	mI, mP, mB := sum[I]/float64(cnt[I]), sum[P]/float64(cnt[P]), sum[B]/float64(cnt[B])
	if !(mI > 1.5*mP && mP > 1.5*mB) {
		t.Errorf("mean tile bits I %.0f, P %.0f, B %.0f: want I > P > B clearly", mI, mP, mB)
	}
	// Saliency spreads sizes: the largest B tile is several times the smallest.
	lo, hi := math.Inf(1), 0.0
	for z := 0; z < Tiles; z++ {
		b := float64(v.Size[1][z][top])
		lo, hi = math.Min(lo, b), math.Max(hi, b)
	}
	if hi < 3*lo {
		t.Errorf("B tile sizes in one frame span %.0f–%.0f bytes: saliency should spread them ≥ 3×", lo, hi)
	}
	// The same seed gives the same video; another seed another.
	w, _ := Generate(GenConfig{Name: "t", Seconds: 20}, rand.New(rand.NewPCG(1, 2)))
	x, _ := Generate(GenConfig{Name: "t", Seconds: 20}, rand.New(rand.NewPCG(1, 3)))
	if v.Size[7][33][top] != w.Size[7][33][top] || v.Size[7][33][top] == x.Size[7][33][top] && v.Size[9][150][top] == x.Size[9][150][top] {
		t.Errorf("generator is not a function of its seed")
	}
}

func TestGenerateBadConfig(t *testing.T) {
	if _, err := Generate(GenConfig{GoP: "BBI"}, rand.New(rand.NewPCG(1, 1))); err == nil {
		t.Error("a GoP not starting with I: no error")
	}
	if _, err := Generate(GenConfig{GoP: "IXB"}, rand.New(rand.NewPCG(1, 1))); err == nil || !strings.Contains(err.Error(), "gop[1]") {
		t.Errorf("unknown frame type: err = %v, want one naming gop[1]", err)
	}
}

func TestViewportModel(t *testing.T) {
	const n = 1800
	h := GenerateHead(n, FoVConfig{}, rand.New(rand.NewPCG(7, 7)))
	vp, err := ViewportFromHead(h, FoVConfig{})
	if err != nil {
		t.Fatal(err)
	}
	total, minC, maxC := 0, Tiles, 0
	for i := 0; i < n; i++ {
		c := vp.Count(i)
		total += c
		minC, maxC = min(minC, c), max(maxC, c)
	}
	mean := float64(total) / n
	if mean < 35 || mean > 48 {
		t.Errorf("mean viewport %.1f tiles (range %d–%d), want about 40", mean, minC, maxC)
	}
	// Switches like Fig. 5.5: some turns move the view by ≥ 60° within
	// 200 ms, and some tiles leave the viewport and come back.
	turns := 0
	for i := 6; i < n; i++ {
		d := math.Abs(math.Mod(h.Yaw[i]-h.Yaw[i-6]+540, 360) - 180)
		if d >= 60 {
			turns++
			i += 6
		}
	}
	if turns < 5 {
		t.Errorf("%d fast turns in 60 s, want several", turns)
	}
	returns := 0
	for z := 0; z < Tiles; z++ {
		state, changes := vp.View[0][z], 0
		for i := 1; i < n; i++ {
			if vp.View[i][z] != state {
				state = vp.View[i][z]
				changes++
			}
		}
		if changes >= 2 {
			returns++
		}
	}
	if returns < 20 {
		t.Errorf("only %d tiles leave the viewport and return", returns)
	}
}

// DecodeTimes agrees with §5.3.3's recursion through Deps on every GoP
// shape: random runs of I, P and B frames, random arrivals.
func TestDecodeTimesFollowsDeps(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 500 {
		h := []FrameType{I}
		for range rng.IntN(20) {
			h = append(h, []FrameType{P, B, B}[rng.IntN(3)])
		}
		a := make([]time.Duration, len(h))
		for x := range a {
			if a[x] = ms(float64(rng.IntN(300))); rng.IntN(8) == 0 {
				a[x] = Never
			}
		}
		want := make([]time.Duration, len(h))
		var decode func(x int) time.Duration
		decode = func(x int) time.Duration {
			d := a[x]
			for _, dep := range Deps(h, x) {
				d = max(d, decode(dep))
			}
			return d
		}
		for x := range h {
			want[x] = decode(x)
		}
		if got := DecodeTimes(h, a); !slices.Equal(got, want) {
			t.Fatalf("GoP %v, arrivals %v: DecodeTimes = %v, want %v", h, a, got, want)
		}
	}
}
