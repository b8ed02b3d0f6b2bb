package pathsel

import (
	"math"
	"testing"
)

// run is n samples on one path, alternating mean·(1−rel) and mean·(1+rel)
// (so the path has mean ≈ mean and standard deviation ≈ rel·mean).
type run struct {
	p         PathID
	mean, rel float64
	n         int
}

// TestAdaptiveChoice pins the default's choice row by row on hand-built
// histories, in the style of Tailscale's TestBetterAddr: the objective's a
// decides between a steady and a jittery path, the width does not grow
// with time, an idle path is re-probed after τ(K−1)·gap rounds and not
// before, hysteresis keeps near-equal paths from flapping, and change
// detection reacts to one surprising sample of an idle path and a few of
// the active one; the hysteresis gives way to a path that is better with
// confidence. Paths 0 and 1; the last run's path is the current one.
func TestAdaptiveChoice(t *testing.T) {
	type cfg func(*Config)
	a := func(v float64) cfg { return func(c *Config) { c.A = ptr(v) } }
	noReprobe := func(c *Config) { c.ReprobeRounds = ptr(0) }
	noHyst := func(c *Config) { c.Hysteresis = ptr(0) }
	noSure := func(c *Config) { c.ConfidentSwitch = ptr(0) }
	// The re-probe bound for a steady path 0.2 behind a best of r ≈ 16
	// (a = 0.8, 20 ms ± 1 %): τ(K−1)·(gap + hysteresis)/r_min rounds.
	r0 := 0.8*20 + 0.2*0.2
	r1 := 0.8*24 + 0.2*0.24
	bound := int(DefaultReprobeRounds * (r1 - r0 + defaultHysteresis*r0) / r0)
	if bound < 10 {
		t.Fatalf("bound %d rounds is too short to test", bound)
	}
	for _, tc := range []struct {
		name string
		opts []cfg
		runs []run
		want PathID
	}{
		{"a path with no sample goes first", nil,
			[]run{{0, 10, 0.1, 50}}, 1},
		{"a = 0.8: steady 10 ms beats jittery 9.6 ms ± 6", []cfg{noReprobe},
			[]run{{1, 9.5, 0.53, 200}, {0, 10, 0.01, 200}}, 0},
		{"a = 0.8: and leaves a jitterier path for it", []cfg{noReprobe},
			[]run{{0, 10, 0.01, 200}, {1, 9.5, 0.8, 200}}, 0},
		{"a = 0.8: but not for less than the hysteresis", []cfg{noReprobe, noSure},
			[]run{{0, 10, 0.01, 200}, {1, 9.5, 0.53, 200}}, 1},
		{"a = 0.8: unless the steady path is better with confidence", []cfg{noReprobe},
			[]run{{0, 10, 0.01, 200}, {1, 9.5, 0.53, 200}}, 0},
		{"a = 1: the lower mean wins, jitter or not", []cfg{noReprobe, a(1)},
			[]run{{0, 10, 0.01, 200}, {1, 9.5, 0.53, 200}}, 1},
		{"a = 0.2: the lowest spread wins against a 30 % lower mean", []cfg{noReprobe, a(0.2)},
			[]run{{0, 10, 0.01, 200}, {1, 7, 0.53, 200}}, 0},
		{"the width does not grow with time: 10 % behind stays ruled out", []cfg{noReprobe},
			[]run{{1, 11, 0.05, 30}, {0, 10, 0.05, 20000}}, 0},
		{"an idle path is not re-probed before its bound", nil,
			[]run{{1, 24, 0.01, 50}, {0, 20, 0.01, bound * 9 / 10}}, 0},
		{"an idle path is re-probed after its bound", nil,
			[]run{{1, 24, 0.01, 50}, {0, 20, 0.01, bound * 11 / 10}}, 1},
		{"hysteresis: 5 % better is not worth a switch", []cfg{noReprobe, noSure},
			[]run{{1, 9.5, 0.01, 200}, {0, 10, 0.01, 200}}, 0},
		{"hysteresis: but 5 % better with confidence is", []cfg{noReprobe},
			[]run{{1, 9.5, 0.01, 200}, {0, 10, 0.01, 200}}, 1},
		{"hysteresis: and 1 % better with confidence too", []cfg{noReprobe},
			[]run{{1, 9.9, 0.01, 400}, {0, 10, 0.01, 400}}, 1},
		{"hysteresis: 1 % better within the widths is not", []cfg{noReprobe},
			[]run{{1, 9.9, 0.1, 50}, {0, 10, 0.1, 400}}, 0},
		{"hysteresis: 15 % better is", []cfg{noReprobe},
			[]run{{1, 8.5, 0.01, 200}, {0, 10, 0.01, 200}}, 1},
		{"hysteresis: it does not hold a path tried once", []cfg{noReprobe, noSure},
			[]run{{0, 10, 0.01, 200}, {1, 10.5, 0, 1}}, 0},
		{"hysteresis: but holds one with two samples", []cfg{noReprobe, noSure},
			[]run{{0, 10, 0.01, 200}, {1, 10.5, 0.01, 2}}, 1},
		{"without hysteresis 1 % better is taken", []cfg{noReprobe, noHyst},
			[]run{{1, 9.9, 0.01, 200}, {0, 10, 0.01, 200}}, 1},
		{"one surprisingly low sample of an idle path resets it", []cfg{noReprobe},
			[]run{{1, 30, 0.01, 100}, {0, 20, 0.01, 100}, {1, 8, 0, 1}}, 1},
		{"one ordinary sample of an idle path changes nothing", []cfg{noReprobe},
			[]run{{1, 30, 0.01, 100}, {0, 20, 0.01, 100}, {1, 30, 0, 1}, {0, 20, 0.01, 1}}, 0},
		{"the active path degrades: left within six samples", []cfg{noReprobe},
			[]run{{1, 30, 0.01, 100}, {0, 20, 0.01, 300}, {0, 50, 0.01, 6}}, 1},
		{"the active path degrades: not after one", []cfg{noReprobe},
			[]run{{1, 30, 0.01, 100}, {0, 20, 0.01, 300}, {0, 50, 0.01, 1}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			for _, o := range tc.opts {
				o(&c)
			}
			s := mustNew(t, c, 1)
			addPaths(t, s, 0, 1)
			for _, r := range tc.runs {
				for i := range r.n {
					x := r.mean * (1 - r.rel)
					if i%2 == 1 {
						x = r.mean * (1 + r.rel)
					}
					observe(t, s, r.p, x)
				}
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d, want %d", got, tc.want)
			}
		})
	}
}

// An idle path that improved is found within the re-probe bound, and the
// default then stays on it; on a stationary pair it re-probes the worse
// path about every bound rounds, no more.
func TestAdaptiveFindsIdleImprovement(t *testing.T) {
	s := mustNew(t, Default(), 1)
	addPaths(t, s, 0, 1)
	level := []float64{20, 30} // path 1 steady 30, path 0 20 ± 5 %
	probes := 0
	for round := range 2000 {
		if round == 1000 {
			level[1] = 8
		}
		p := choose(t, s)
		x := level[p] * (1 + 0.05*math.Sin(float64(round)))
		if p == 1 && round < 1000 {
			probes++
		}
		observe(t, s, p, x)
		if round == 1000+maxFind {
			if p != 1 {
				t.Fatalf("round %d: still on path %d %d rounds after path 1 improved", round, p, maxFind)
			}
		}
	}
	// gap 0.8·10 over r ≈ 16: a re-probe about every 100·(8/16 + 0.1) ≈ 60 rounds.
	if probes < 5 || probes > 40 {
		t.Errorf("%d re-probes of the worse path in 1000 stationary rounds, want about 20", probes)
	}
}

// maxFind bounds the rounds to find path 1's improvement: its re-probe
// interval τ(K−1)·(gap/r + hysteresis) plus a few rounds.
const maxFind = 70

// TestAdaptiveReprobeBackoff pins reprobe_backoff: each re-probe that finds
// the idle path unchanged doubles its re-probe period, up to the cap, and a
// change detected anywhere (here on the active path) resets every period.
// Path 0 is 20 ms ± 5 % and best, path 1 a steady 24 ms; path 0 steps to
// 22 ms at round shiftAt (a 10 % level change its detector catches).
func TestAdaptiveReprobeBackoff(t *testing.T) {
	const rounds = 2400
	for _, tc := range []struct {
		name     string
		backoff  int
		shiftAt  int // −1: no change
		ratios   []float64
		backoffs map[int]int // round → want path 1's backoff after it
	}{
		{"no backoff: the period stays τ", 0, -1,
			[]float64{1, 1, 1, 1, 1}, map[int]int{rounds - 1: 0}},
		{"each unchanged re-probe doubles the period, up to the cap", 2, -1,
			[]float64{2, 2, 1, 1, 1}, map[int]int{rounds - 1: 2}},
		{"a change on the active path resets the periods", 3, 1500,
			nil, map[int]int{1499: 3, 1530: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.ReprobeBackoff = &tc.backoff
			s := mustNew(t, c, 1)
			addPaths(t, s, 0, 1)
			var probes []int // rounds at which a visit to path 1 starts
			prev := PathID(-1)
			for round := range rounds {
				level := []float64{20, 24}
				if tc.shiftAt >= 0 && round >= tc.shiftAt {
					level[0] = 22
				}
				p := choose(t, s)
				if p == 1 && prev != 1 {
					probes = append(probes, round)
				}
				prev = p
				observe(t, s, p, level[p]*(1+0.05*math.Sin(float64(round))))
				if want, ok := tc.backoffs[round]; ok {
					if got := s.(*adaptive).paths[1].backoff; got != want {
						t.Errorf("after round %d: path 1's backoff %d, want %d", round, got, want)
					}
				}
			}
			if len(probes) < len(tc.ratios)+2 {
				t.Fatalf("re-probes at %v: too few", probes)
			}
			for i, want := range tc.ratios {
				prev, next := probes[i+1]-probes[i], probes[i+2]-probes[i+1]
				if got := float64(next) / float64(prev); math.Abs(got-want) > 0.15*want {
					t.Errorf("re-probes at %v: interval %d → %d (× %.2f), want × %v", probes, prev, next, got, want)
				}
			}
		})
	}
}
