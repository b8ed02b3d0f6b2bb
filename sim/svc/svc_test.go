package svc

import (
	"math"
	"reflect"
	"testing"
	"time"
)

func TestLadder(t *testing.T) {
	if len(Ladder) != 8 || Ladder[0] != 0.088 || Ladder[7] != 20.5 {
		t.Fatalf("ladder %v, want 8 rungs from 0.088 to 20.5 Mbit/s (§4.5.1)", Ladder)
	}
	for _, bad := range []string{"index,mbps\n0,1\n1,0.5\n", "idx,rate\n0,1\n1,2\n", "index,mbps\n0,1\n"} {
		if _, err := parseLadder(bad); err == nil {
			t.Errorf("ladder %q accepted", bad)
		}
	}
}

var lattice = Scenario{Kind: "lattice", APSpacingM: 20, AreaM: 100, SpeedMps: 10, Duration: 20 * time.Second}

func TestRunSmoke(t *testing.T) {
	for _, v := range []Variant{
		{Label: "QC-MAB", Controller: QCMAB},
		{Label: "Peekaboo", Controller: Peekaboo},
		{Label: "LEAP", Controller: LEAP},
		{Label: "minRTT", Controller: MinRTT},
	} {
		r, err := Run(lattice, v, 1, false)
		if err != nil {
			t.Fatal(err)
		}
		mq := 0.0
		for _, q := range r.Quality {
			mq += q / float64(len(r.Quality))
		}
		gp := 0.0
		for _, g := range r.GoodputMbps {
			gp += g / float64(len(r.GoodputMbps))
		}
		onTime := 0
		for _, d := range r.BLDelayMs {
			if d <= 150 {
				onTime++
			}
		}
		t.Logf("%-8s frames %d IR %.3f quality %.2f goodput %.2f P(BL≤150) %.3f handovers %d fec %d reward %.3f",
			v.Label, r.Frames, r.IR(), mq, gp, float64(onTime)/float64(len(r.BLDelayMs)), r.Handovers, r.FECFrames, mean(r.Reward))
		if r.Frames != int(lattice.Duration/FrameInterval) || len(r.Reward) != r.Frames {
			t.Fatalf("%s: %d frames, %d rewards", v.Label, r.Frames, len(r.Reward))
		}
	}
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / math.Max(float64(len(x)), 1)
}

func TestDeterministic(t *testing.T) {
	a, _ := Run(lattice, Variant{Controller: QCMAB}, 7, true)
	b, _ := Run(lattice, Variant{Controller: QCMAB}, 7, true)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed, different results")
	}
}
