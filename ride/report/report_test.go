package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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
