package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic/ride"
)

func TestEvaluateAndWrite(t *testing.T) {
	pols, err := Baselines(1)
	if err != nil {
		t.Fatal(err)
	}
	// RIDE's slot: a policy named "ride" (here always Wi-Fi, for the claims' ratio rows).
	pols = append([]ride.Policy{named{"ride", 1}}, pols...)
	ms, err := Evaluate(Config{Seed: 2, Frames: 60}, pols)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := Evaluate(Config{Seed: 2, Frames: 60}, pols[:1])
	if ms[0].MeanFrameReward() != again[0].MeanFrameReward() {
		t.Error("the same seed and policy gave another reward")
	}
	for _, m := range ms {
		if len(m.FrameReward) < 55 || m.Decided[ride.I] == 0 || len(m.ViewportMbps) == 0 {
			t.Errorf("%s: %d frames rewarded, %v decided", m.Policy, len(m.FrameReward), m.Decided)
		}
		for _, ty := range []ride.FrameType{ride.I, ride.P, ride.B} {
			if z := m.ZeroRebuff(ty); z < 0 || z > 1 {
				t.Errorf("%s: zero-rebuffering share %v", m.Policy, z)
			}
		}
	}
	dir := t.TempDir()
	files, err := Write(dir, ms, "test")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if st, err := os.Stat(f); err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}
	rep, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	for _, want := range []string{"| ride |", "| peekaboo |", "ride viewport bitrate ÷ rr's", "I-frame interruption rate", "reward order"} {
		if !strings.Contains(string(rep), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

type named struct {
	name string
	path int
}

func (n named) Name() string        { return n.name }
func (n named) Act(*ride.State) int { return n.path }

func TestParseSpec(t *testing.T) {
	pol, err := os.ReadFile("../policies/ride-short-seed1.json")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"p/pol.json": {Data: pol}, "p/bad.json": {Data: []byte(`{"format":"x"}`)}}
	good := "name: r\nmode: ride\nride:\n  policy: pol.json\n  frames: 20\n"
	s, err := Parse(fsys, "p/r.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	if pols, _ := s.Policies(); len(pols) != 4 || pols[0].Name() != "ride" || s.Ride.Seed != 1 {
		t.Errorf("policies %d, first %q, seed %d: want ride + 3 baselines, seed defaulted to 1", len(pols), pols[0].Name(), s.Ride.Seed)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"name: r\nmode: ride\nride:\n  polcy: pol.json\n", "polcy"},
		{"name: r\nmode: ride\nride:\n  frames: -3\n", "ride.frames: -3"},
		{"name: r\nmode: ride\nride:\n  policy: none.json\n", "ride.policy"},
		{"name: r\nmode: ride\nride:\n  policy: bad.json\n", "format"},
		{"name: r\nmode: sim\n", "want ride"},
	} {
		if _, err := Parse(fsys, "p/r.yaml", []byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err = %v, want one mentioning %q", tc.yaml, err, tc.want)
		}
	}
}
