package layeredvideo

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/hetquic/hetquic/fec"
)

// total is the packets an allocation sends.
func total(a []int) int {
	n := 0
	for _, x := range a {
		n += x
	}
	return n
}

// onTimeOf is the on-time probability of an allocation, computed afresh.
func onTimeOf(k int, fs []pathForecast, base, alloc []int) float64 {
	ds := make([]pathDist, len(fs))
	for i, f := range fs {
		ds[i] = newPathDist(f, base[i])
		for range alloc[i] {
			ds[i] = ds[i].grown()
		}
	}
	return onTime(ds, k)
}

// With a capacity certain to fit (SD 0), the on-time probability of n
// packets on one path is the RS block's decoding probability, 1 − Eq. 4.1.
func TestOnTimeMatchesFECFailure(t *testing.T) {
	for _, c := range []struct {
		k, n int
		eps  float64
	}{{10, 13, 0.05}, {1, 2, 0.3}, {40, 52, 0.01}, {5, 5, 0.1}} {
		got := onTimeOf(c.k, []pathForecast{{Mean: 1000, Loss: c.eps}}, []int{0}, []int{c.n})
		want := 1 - fec.FailureProb(fec.Block{K: c.k, N: c.n}, c.eps)
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("k=%d n=%d ε=%g: P(on time) %.12f, want %.12f", c.k, c.n, c.eps, got, want)
		}
	}
}

func TestAllocate(t *testing.T) {
	wide := []int{256, 256}
	for _, c := range []struct {
		name   string
		k      int
		fs     []pathForecast
		limit  []int
		target float64
		check  func(t *testing.T, alloc []int, p float64)
	}{
		{"certain lossless paths: no redundancy", 10, []pathForecast{{Mean: 50}, {Mean: 50}}, wide, 0.99,
			func(t *testing.T, a []int, p float64) {
				if total(a) != 10 || p < 0.99 {
					t.Errorf("alloc %v (P %.4f), want 10 packets and the target", a, p)
				}
			}},
		{"capacity follows the forecast: the wide path carries the most", 20, []pathForecast{{Mean: 40, SD: 4}, {Mean: 8, SD: 4}}, wide, 0.99,
			func(t *testing.T, a []int, p float64) {
				if a[0] <= a[1] || p < 0.99 {
					t.Errorf("alloc %v (P %.4f), want path 0 > path 1 and the target", a, p)
				}
			}},
		{"loss adds redundancy", 20, []pathForecast{{Mean: 100, Loss: 0.1}, {Mean: 100, Loss: 0.1}}, wide, 0.99,
			func(t *testing.T, a []int, p float64) {
				if total(a) <= 22 || p < 0.99 {
					t.Errorf("alloc %v (P %.4f), want > 22 packets for 20 over 10 %% loss and the target", a, p)
				}
			}},
		{"no capacity: the source alone, target missed", 5, []pathForecast{{Mean: -3}, {Mean: 0}}, wide, 0.99,
			func(t *testing.T, a []int, p float64) {
				if total(a) != 5 || p > 0.01 {
					t.Errorf("alloc %v (P %.4f), want the 5 source packets and P ≈ 0", a, p)
				}
			}},
		{"the rate limit bounds redundancy", 10, []pathForecast{{Mean: 12, SD: 6}, {Mean: 12, SD: 6}}, []int{7, 7}, 0.99,
			func(t *testing.T, a []int, p float64) {
				if a[0] > 7 || a[1] > 7 || total(a) < 10 {
					t.Errorf("alloc %v, want ≤ 7 a path and ≥ 10 in all", a)
				}
			}},
		{"the source exceeds a too-low limit", 10, []pathForecast{{Mean: 30}, {Mean: 30}}, []int{2, 3}, 0.99,
			func(t *testing.T, a []int, p float64) {
				if total(a) != 10 {
					t.Errorf("alloc %v, want exactly the 10 source packets", a)
				}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			base := []int{0, 0}
			a, p := allocate(c.k, c.fs, base, c.limit, c.target, fec.MaxShards)
			if q := onTimeOf(c.k, c.fs, base, a); math.Abs(q-p) > 1e-9 {
				t.Fatalf("allocate says P %.6f, recomputed %.6f", p, q)
			}
			c.check(t, a, p)
		})
	}
}

// LEAP's redundancy grows with the forecast's uncertainty, and each
// allocation meets the target with no packet to spare on any path.
func TestRedundancyGrowsWithVariance(t *testing.T) {
	const k, target = 40, 0.99
	prev, first := 0, 0
	for _, sd := range []float64{0, 1, 1.5, 2} {
		fs := []pathForecast{{Mean: 24, SD: sd}, {Mean: 24, SD: sd}}
		base := []int{0, 0}
		a, p := allocate(k, fs, base, []int{256, 256}, target, fec.MaxShards)
		if p < target {
			t.Fatalf("SD %g: alloc %v reaches %.4f < %g", sd, a, p, target)
		}
		for i := range a {
			if a[i] == 0 {
				continue
			}
			less := append([]int(nil), a...)
			less[i]--
			if q := onTimeOf(k, fs, base, less); q >= target {
				t.Errorf("SD %g: alloc %v meets the target with one packet fewer on path %d (%.4f)", sd, a, i, q)
			}
		}
		if sd == 0 {
			first = total(a)
		}
		if total(a) < prev {
			t.Errorf("SD %g: %d packets, fewer than %d at a smaller SD", sd, total(a), prev)
		}
		t.Logf("SD %g: alloc %v, P %.4f", sd, a, p)
		prev = total(a)
	}
	if prev <= first {
		t.Errorf("SD 2: %d packets, want more than the %d at SD 0", prev, first)
	}
}

// An earlier layer's packets use up the path's forecast: the next block
// planned after them needs more redundancy for the same target.
func TestLaterLayerSeesLessCapacity(t *testing.T) {
	fs := []pathForecast{{Mean: 30, SD: 5}, {Mean: 30, SD: 5}}
	free, _ := allocate(10, fs, []int{0, 0}, []int{256, 256}, 0.99, fec.MaxShards)
	after, _ := allocate(10, fs, []int{20, 20}, []int{256, 256}, 0.99, fec.MaxShards)
	if total(after) <= total(free) {
		t.Errorf("after 40 packets: %v, free: %v; want more packets after", after, free)
	}
}

func TestCapEstimate(t *testing.T) {
	var e capEstimate
	for range 200 {
		e.observe(100)
	}
	if math.Abs(e.mean-100) > 1e-9 || e.vari > 1e-9 {
		t.Errorf("steady samples: mean %g var %g, want 100 and 0", e.mean, e.vari)
	}
	var n capEstimate
	for i := range 200 {
		n.observe(100 + 40*float64(i%2*2-1))
	}
	if math.Abs(n.mean-100) > 10 || n.vari < 1000 {
		t.Errorf("±40 samples: mean %g var %g, want ≈ 100 and ≈ 1600", n.mean, n.vari)
	}
	f := forecast(n, 0.15, 0.05, 2, 0.01)
	if math.Abs(f.Mean-(n.mean*0.1-2)) > 1e-9 || math.Abs(f.SD-math.Sqrt(n.vari)*0.1) > 1e-9 {
		t.Errorf("forecast %+v, want mean·0.1 − 2 and sd·0.1", f)
	}
}

// The source packets (the lowest offsets) ride the slots most likely to
// arrive in time.
func TestAssignOffsets(t *testing.T) {
	fs := []pathForecast{{Mean: 3, SD: 1}, {Mean: 40}}
	got := assignOffsets([]int{3, 4}, fs, []int{0, 0})
	want := []int{1, 1, 1, 1, 0, 0, 0}
	if len(got) != len(want) {
		t.Fatalf("assign %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("assign %v, want %v", got, want)
		}
	}
}

// In a run, LEAP codes only the frames its forecast says need it, while
// the ablation codes every frame; both run the same scenario.
func TestLEAPRedundancyAdapts(t *testing.T) {
	sc := Scenario{Kind: "backbone", Duration: 20 * time.Second}
	leap, err := Run(context.Background(), sc, Variant{Label: "LEAP", Controller: LEAP}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	abl, err := Run(context.Background(), sc, Variant{Label: "LEAP-FEC-BBR", Controller: LEAPFECBBR}, 1, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("coded frames: LEAP %d of %d (IR %.3f), ablation %d of %d (IR %.3f)", leap.FECFrames, leap.Frames, leap.IR(), abl.FECFrames, abl.Frames, abl.IR())
	if leap.FECFrames == 0 || leap.FECFrames >= leap.Frames {
		t.Errorf("LEAP coded %d of %d frames, want some but not all", leap.FECFrames, leap.Frames)
	}
	if abl.FECFrames != abl.Frames {
		t.Errorf("ablation coded %d of %d frames, want all", abl.FECFrames, abl.Frames)
	}
}
