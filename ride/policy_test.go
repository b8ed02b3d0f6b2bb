package ride

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"
)

// The fixture holds an actor exported by python/src/hetquic_rl/fixture.py,
// observations from the environment and the greedy actions JAX computed:
// the Go forward pass must choose the same ones.
func TestPolicyFixture(t *testing.T) {
	data, err := os.ReadFile("testdata/policy_fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var fx struct {
		Policy  json.RawMessage `json:"policy"`
		Obs     [][]float64     `json:"obs"`
		Actions []int           `json:"actions"`
	}
	if err := json.Unmarshal(data, &fx); err != nil {
		t.Fatal(err)
	}
	m, err := ReadMLP(strings.NewReader(string(fx.Policy)))
	if err != nil {
		t.Fatal(err)
	}
	if len(fx.Obs) < 100 || len(fx.Obs) != len(fx.Actions) {
		t.Fatalf("fixture has %d observations and %d actions", len(fx.Obs), len(fx.Actions))
	}
	seen := map[int]int{}
	for k, x := range fx.Obs {
		got := m.ActFeatures(x) + 1 // Python's index: 0 is skip
		if got != fx.Actions[k] {
			t.Fatalf("observation %d: Go picks action %d, Python %d", k, got, fx.Actions[k])
		}
		seen[got]++
	}
	if len(seen) != m.Paths+1 {
		t.Errorf("the fixture exercises actions %v only", seen)
	}
}

func TestReadMLPErrors(t *testing.T) {
	ok := func() MLPPolicy {
		in := FeatureDim(2)
		row := make([]float64, in)
		return MLPPolicy{Format: MLPFormat, Paths: 2, Features: in, Layers: []Layer{
			{W: [][]float64{row, row}, B: []float64{0, 0}},
			{W: [][]float64{{1, 0}, {0, 1}, {1, 1}}, B: []float64{0, 0, 0}},
		}}
	}
	enc := func(m MLPPolicy) string { b, _ := json.Marshal(m); return string(b) }
	if _, err := ReadMLP(strings.NewReader(enc(ok()))); err != nil {
		t.Fatalf("a valid file: %v", err)
	}
	labelled := ok()
	labelled.Training = &Training{Steps: 600_000, Seed: 2, Run: 1_200_000}
	if m, err := ReadMLP(strings.NewReader(enc(labelled))); err != nil || *m.Training != *labelled.Training {
		t.Fatalf("a file with its training: %v, %+v", err, m)
	}
	for _, tc := range []struct {
		name string
		edit func(*MLPPolicy)
		want string
	}{
		{"format", func(m *MLPPolicy) { m.Format = "x" }, "format"},
		{"features", func(m *MLPPolicy) { m.Features = 3 }, "features"},
		{"row width", func(m *MLPPolicy) { m.Layers[0].W[1] = []float64{1} }, "layer 0 row 1"},
		{"outputs", func(m *MLPPolicy) { m.Layers[1].W = m.Layers[1].W[:2]; m.Layers[1].B = m.Layers[1].B[:2] }, "outputs"},
		{"no layers", func(m *MLPPolicy) { m.Layers = nil }, "no layers"},
		{"no steps", func(m *MLPPolicy) { m.Training = &Training{Seed: 1} }, "training: steps 0"},
		{"more than the run", func(m *MLPPolicy) { m.Training = &Training{Steps: 300, Run: 200} }, "at most run_steps 200"},
	} {
		m := ok()
		tc.edit(&m)
		if _, err := ReadMLP(strings.NewReader(enc(m))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := ReadMLP(strings.NewReader(`{"format":"hetquic-ride-mlp/1","extra":1}`)); err == nil {
		t.Error("unknown field accepted")
	}
}

func TestBaselinePolicies(t *testing.T) {
	st := &State{Paths: []PathState{
		{SRTT: 30 * time.Millisecond, CanSend: true},
		{SRTT: 20 * time.Millisecond, CanSend: false},
	}}
	if a := (MinRTT{}).Act(st); a != 0 {
		t.Errorf("minRTT with the fast path's window full: %d, want the open path 0", a)
	}
	st.Paths[1].CanSend = true
	if a := (MinRTT{}).Act(st); a != 1 {
		t.Errorf("minRTT: %d, want the lower-RTT path 1", a)
	}
	st.Paths[0].CanSend, st.Paths[1].CanSend = false, false
	if a := (MinRTT{}).Act(st); a != 1 {
		t.Errorf("minRTT with no window anywhere: %d, want the lower-RTT path", a)
	}
	rr := &RoundRobin{}
	for k, want := range []int{0, 1, 0, 1} {
		if a := rr.Act(st); a != want {
			t.Errorf("rr decision %d: %d, want %d", k, a, want)
		}
	}
}

func TestArrivalEstimate(t *testing.T) {
	const mss = 1448
	now := time.Second
	srtt := 20 * time.Millisecond
	// Fits in the window: r_min = 0 → now + transmission + OWD.
	got := ArrivalEstimate(now, 10*mss, mss, 10e6, 20, 0, srtt)
	want := now + time.Duration(float64(10*mss*8)/10e6*float64(time.Second)) + srtt/2
	if d := got - want; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("in-window arrival %v, want %v", got, want)
	}
	// 30 packets, window 10, no loss: rounds 10 + 11 + 12 ≥ 30 → r_min = 3.
	got = ArrivalEstimate(now, 30*mss, mss, 10e6, 10, 0, srtt)
	want = now + time.Duration(float64(30*mss*8)/10e6*float64(time.Second)) + 3*srtt + srtt/2
	if d := got - want; d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("Eq. 5.2 arrival %v, want %v (r_min 3)", got, want)
	}
	// Loss only delays.
	if ArrivalEstimate(now, 30*mss, mss, 10e6, 10, 0.3, srtt) <= got {
		t.Error("loss does not delay the estimate")
	}
	if ArrivalEstimate(now, mss, mss, 0, 10, 0, srtt) != Never {
		t.Error("no rate estimate should give Never")
	}
}
