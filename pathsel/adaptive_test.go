package pathsel

import (
	"errors"
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

// TestAdaptiveLoneSamplesKeepTheirOrder: paths tried once are ranked as
// their samples are, however many there are and whatever spread another
// path has shown — a slow path tried once is not tried again before a fast
// one, and a slow path's wide spread is not lent to the others in ms.
func TestAdaptiveLoneSamplesKeepTheirOrder(t *testing.T) {
	for _, k := range []int{2, 4, 8, 16} {
		s := mustNew(t, Default(), 1)
		for i := range k {
			addPaths(t, s, PathID(i))
		}
		// One try each, slowest last (it is then the current path).
		for i := k - 1; i >= 0; i-- {
			observe(t, s, PathID(i), 10*float64(i+1))
		}
		if got := choose(t, s); got != 0 {
			t.Errorf("%d paths tried once: chose path %d (%g ms), want path 0 (10 ms)", k, got, 10*float64(got+1))
		}
		// The slowest path shows a wide spread (in ms); the others, tried
		// once, must not inherit it as a width that brings them back.
		observe(t, s, PathID(k-1), 10*float64(k)*2)
		for range 3 {
			observe(t, s, 0, 10)
		}
		if got := choose(t, s); got != 0 && k > 2 {
			t.Errorf("%d paths, the slowest jittery: chose path %d (%g ms), want path 0", k, got, 10*float64(got+1))
		}
	}
}

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

// TestAdaptiveProbes pins, row by row, what the default does with probe
// RTTs of an idle path (ObserveProbe): path 1 (24 ms) was tried 50 times,
// then path 0 (20 ms, best) carries n rounds while path 1 is probed as
// the row says; the last column is the next choice. Path 1 is re-probed
// by request after about `bound` rounds without probes, ProbeStretch
// times later while its probes find its RTT unchanged at 16 ms, and
// never while they find it at 24 ms: its tasks then take at least that,
// more than path 0's (the probe floor).
func TestAdaptiveProbes(t *testing.T) {
	r0 := 0.8*20 + 0.2*0.2
	r1 := 0.8*24 + 0.2*0.24
	bound := int(DefaultReprobeRounds * (r1 - r0 + defaultHysteresis*r0) / r0)
	stretched := int(float64(bound) * DefaultProbeStretch)
	inf := math.Inf(1)
	// every5 probes path 1 every fifth round at rtt(round).
	every5 := func(rtt func(r int) float64) func(int) (float64, bool) {
		return func(r int) (float64, bool) { return rtt(r), r%5 == 4 }
	}
	steady := func(int) float64 { return 24 }
	below := func(int) float64 { return 16 } // an RTT below path 0's task times
	step := func(at int, before, after float64) func(int) float64 {
		return func(r int) float64 {
			if r >= at {
				return after
			}
			return before
		}
	}
	// at probes only at the given rounds.
	at := func(probes map[int]float64) func(int) (float64, bool) {
		return func(r int) (float64, bool) { v, ok := probes[r]; return v, ok }
	}
	noProbes := func(c *Config) { c.Probes = bptr(false) }
	for _, tc := range []struct {
		name  string
		off   bool
		n     int
		probe func(r int) (float64, bool)
		want  PathID
	}{
		{"no probes: re-tried after its bound", false, bound * 11 / 10, at(nil), 1},
		{"unchanged RTT: not re-tried after the bound", false, bound * 3, every5(steady), 0},
		{"unchanged RTT below path 0's tasks: re-tried after ProbeStretch × the bound", false, stretched * 12 / 10, every5(below), 1},
		{"unchanged RTT above path 0's tasks: never re-tried", false, stretched * 12 / 10, every5(steady), 0},
		{"RTT fell 24 → 8 ms: re-tried at once", false, 105, every5(step(100, 24, 8)), 1},
		{"RTT fell 24 → 23 ms: not re-tried", false, 205, every5(step(100, 24, 23)), 0},
		{"RTT rose 24 → 40 ms: its re-probe waits from the rise", false, stretched * 105 / 100, every5(step(stretched/10, 24, 40)), 0},
		{"two timeouts in a row: not re-tried after the bound", false, bound * 3 / 2, at(map[int]float64{bound*3/2 - 2: inf, bound*3/2 - 1: inf}), 0},
		{"one timeout: nothing, re-tried after the bound", false, bound * 11 / 10, at(map[int]float64{bound - 2: inf}), 1},
		{"a path that lost a probe is re-tried at the full rate", false, bound * 2, func(r int) (float64, bool) {
			if r == 9 {
				return inf, true
			}
			return 16, r%5 == 4
		}, 1},
		{"few probes: a big fall is seen at the second", false, 12, at(map[int]float64{3: 24, 11: 8}), 1},
		{"few probes: a jittery path's ordinary low probe is no fall", false, 12, at(map[int]float64{3: 24, 11: 20}), 0},
		{"probes off: a fall is ignored", true, bound * 9 / 10, every5(step(bound/2, 24, 8)), 0},
		{"probes on: the same fall is not", false, bound * 9 / 10, every5(step(bound/2, 24, 8)), 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			if tc.off {
				noProbes(&c)
			}
			s := mustNew(t, c, 1)
			addPaths(t, s, 0, 1)
			for i := range 50 {
				observe(t, s, 1, 24*jitter(i))
			}
			po := s.(ProbeObserver)
			for r := range tc.n {
				observe(t, s, 0, 20*jitter(r))
				if v, ok := tc.probe(r); ok {
					if err := po.ObserveProbe(1, v); err != nil {
						t.Fatal(err)
					}
				}
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d after %d rounds, want %d (bound %d)", got, tc.n, tc.want, bound)
			}
		})
	}
}

// jitter is 1 ± 1 %, the sign alternating with r: a path's samples with
// a little spread around one value.
func jitter(r int) float64 { return 1 + 0.01*float64(r%2*2-1) }

// checkTry checks that s, after what (a probe that asks a try of idle
// path 1), chooses path 1, and that the try's task time y leaves path 1
// with kept task samples.
func checkTry(t *testing.T, s Selector, what string, y float64, kept int) {
	t.Helper()
	if got := choose(t, s); got != 1 {
		t.Fatalf("after %s chose %d, want 1", what, got)
	}
	observe(t, s, 1, y)
	if n := s.(*adaptive).paths[1].n(); n != kept {
		t.Errorf("path 1 keeps %d task samples after its try, want %d", n, kept)
	}
}

// probeUntilTry probes idle path 1 of s at probe ms until the burst rule
// may ask its try: burstProbes-1 probes (jittered), after each of which s
// must still choose path 0 (one probe may be a jittery path's lowest) and
// path 0 carries a 60 ms task, then the last probe, of probe ms. Whether
// that probe asks the try is the caller's check (checkTry).
func probeUntilTry(t *testing.T, s Selector, probe float64) {
	t.Helper()
	po := s.(ProbeObserver)
	for r := range burstProbes - 1 {
		po.ObserveProbe(1, probe*jitter(r))
		if got := choose(t, s); got != 0 {
			t.Fatalf("after %d probes of %v ms chose %d, want 0 (one probe may be a jittery path's lowest)", r+1, probe, got)
		}
		observe(t, s, 0, 60*jitter(r))
	}
	po.ObserveProbe(1, probe)
}

// TestAdaptiveFallenProbeAsksOneTry: a probe whose RTT fell asks for one
// try of the idle path; the path's task samples are forgotten only if that
// try's time fell too, so a probe that was only jitter costs one request,
// not a path learned again from scratch.
func TestAdaptiveFallenProbeAsksOneTry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		try      float64 // the time of the try the fall asks for, and of path 1's probes after
		kept     int     // path 1's task samples after the try
		min, max int     // path 1's tries in the next 200 rounds
	}{
		{"the try confirms the fall: path 1 carries on", 8, 1, 195, 200},
		{"the try does not: path 1 rests again", 24, 51, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Default(), 1)
			addPaths(t, s, 0, 1)
			for i := range 50 {
				observe(t, s, 1, 24*jitter(i))
			}
			po := s.(ProbeObserver)
			for r := range 100 {
				observe(t, s, 0, 20*jitter(r))
				if r%5 == 4 {
					po.ObserveProbe(1, 24)
				}
			}
			po.ObserveProbe(1, 8)
			checkTry(t, s, "a fallen probe", tc.try, tc.kept)
			tries := 0
			for r := range 200 {
				p := choose(t, s)
				if p == 1 {
					tries++
					observe(t, s, 1, tc.try*jitter(r))
				} else {
					observe(t, s, 0, 20*jitter(r))
					if r%5 == 4 {
						po.ObserveProbe(1, tc.try)
					}
				}
			}
			if tries < tc.min || tries > tc.max {
				t.Errorf("path 1 was tried %d times in 200 rounds after its try, want %d–%d", tries, tc.min, tc.max)
			}
		})
	}
}

// TestAdaptiveProbeFloorGatesNewPaths: a path added with no task sample is
// tried first — unless its probes already show a round trip above what
// the current path's tasks take (it cannot be better); a probed path
// whose RTT is low is tried.
func TestAdaptiveProbeFloorGatesNewPaths(t *testing.T) {
	for _, tc := range []struct {
		name string
		rtt  float64
		want PathID
	}{
		{"probes at 40 ms beside tasks of 20 ms: not tried", 40, 0},
		{"probes at 5 ms: tried", 5, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Default(), 1)
			addPaths(t, s, 0, 1)
			for r := range 100 {
				observe(t, s, 1, 30*jitter(r))
				observe(t, s, 0, 20*jitter(r))
			}
			addPaths(t, s, 2)
			po := s.(ProbeObserver)
			for range 3 {
				po.ObserveProbe(2, tc.rtt)
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAdaptiveProbeBudget pins, row by row, that the re-probe budget is
// shared only among the idle paths that probes do not vouch for: paths 1
// and 2 (24 ms) were tried 50 times each, then path 0 (20 ms) carries n
// rounds while the paths the row names are probed at an unchanged RTT.
// One unvouched idle path is re-probed by request after `bound` rounds
// (τ·1·(gap + hysteresis)); two share the budget and wait twice as long.
func TestAdaptiveProbeBudget(t *testing.T) {
	r0 := 0.8*20 + 0.2*0.2
	r1 := 0.8*24 + 0.2*0.24
	bound := int(DefaultReprobeRounds * (r1 - r0 + defaultHysteresis*r0) / r0)
	for _, tc := range []struct {
		name   string
		n      int
		probed []PathID
		want   PathID
	}{
		{"no probes: two idle paths share the budget, neither re-tried after one bound", bound * 11 / 10, nil, 0},
		{"no probes: both due after two bounds", bound * 22 / 10, nil, 1},
		{"path 2 vouched for: path 1 has the whole budget", bound * 11 / 10, []PathID{2}, 1},
		{"path 1 vouched for: path 2 has the whole budget", bound * 11 / 10, []PathID{1}, 2},
		{"both vouched for: neither re-tried after two bounds", bound * 22 / 10, []PathID{1, 2}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Default(), 1)
			addPaths(t, s, 0, 1, 2)
			for i := range 100 {
				observe(t, s, PathID(1+i%2), 24*(1+0.01*float64(i/2%2*2-1)))
			}
			po := s.(ProbeObserver)
			for r := range tc.n {
				observe(t, s, 0, 20*jitter(r))
				for _, p := range tc.probed {
					if r%5 == 4 {
						if err := po.ObserveProbe(p, 24); err != nil {
							t.Fatal(err)
						}
					}
				}
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d after %d rounds, want %d (bound %d)", got, tc.n, tc.want, bound)
			}
		})
	}
}

// TestAdaptiveProbeKappa pins the switch of κ: path 1 (9.9 ms ± 5 %) is
// better than the current path 0 (10 ms ± 5 %) by about one width each
// after 300 samples apiece — confident at ProbeConfidentSwitch (0.75), not
// at ConfidentSwitch (1.25), and within the hysteresis. The first probe,
// of any path, makes the default take it; with probes off it does not.
func TestAdaptiveProbeKappa(t *testing.T) {
	for _, tc := range []struct {
		name      string
		probesOff bool
		probe     bool
		want      PathID
	}{
		{"no probe: κ = 1.25, the hysteresis holds", false, false, 0},
		{"one probe: κ = 0.75, the better path is taken", false, true, 1},
		{"probes off: a probe changes nothing", true, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.ReprobeRounds = ptr(0)
			c.Probes = bptr(!tc.probesOff)
			s := mustNew(t, c, 1)
			addPaths(t, s, 0, 1)
			for _, p := range []PathID{1, 0} {
				mean := 10 - 0.1*float64(p)
				for i := range 300 {
					observe(t, s, p, mean*(1+0.05*float64(i%2*2-1)))
				}
			}
			if tc.probe {
				if err := s.(ProbeObserver).ObserveProbe(1, 10); err != nil {
					t.Fatal(err)
				}
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAdaptiveProbeErrors: a probe of an unknown path or with an RTT that
// is not > 0 is refused; a probe of the current path changes nothing.
func TestAdaptiveProbeErrors(t *testing.T) {
	s := mustNew(t, Default(), 1).(ProbeObserver)
	addPaths(t, s, 0, 1)
	if err := s.ObserveProbe(7, 10); !errors.Is(err, ErrUnknownPath) {
		t.Errorf("unknown path: %v", err)
	}
	for _, v := range []float64{0, -1, math.NaN()} {
		if err := s.ObserveProbe(0, v); !errors.Is(err, ErrBadSample) {
			t.Errorf("rtt %v: %v", v, err)
		}
	}
	for range 50 {
		observe(t, s, 1, 30)
	}
	for range 50 {
		observe(t, s, 0, 20)
	}
	for range 20 {
		if err := s.ObserveProbe(0, 5); err != nil {
			t.Fatal(err)
		}
	}
	if n := s.(*adaptive).paths[0].n(); n != 50 {
		t.Errorf("the current path kept %d samples after probes of it, want 50", n)
	}
}

// TestStaleWindowRule: a task window is stale when its log-mean lies more
// than staleRatio above its probes' (or the try's time), and only then.
func TestStaleWindowRule(t *testing.T) {
	for _, tc := range []struct {
		name        string
		window, rtt float64 // ms: the window's geometric mean, the probes'
		want        bool
	}{
		{"the restored path: 193 ms against 30", 193, 30, true},
		{"just above the ratio", 121, 30, true},
		{"just below the ratio", 118, 30, false},
		{"a loss's recovery: 2 round trips", 60, 30, false},
		{"a window like its probes", 31, 30, false},
		{"a window below its probes", 20, 30, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := staleWindow(math.Log(tc.window), math.Log(tc.rtt)); got != tc.want {
				t.Errorf("staleWindow(%v ms window, %v ms) = %v, want %v", tc.window, tc.rtt, got, tc.want)
			}
		})
	}
}

// TestAdaptiveStaleWindowAsksOneTry: path 1 (30 ms) was left on 50
// samples of 80 and 320 ms (a blackout's: geometric mean 160 ms, too
// wide for the fallen-probe test to see 30 ms as a fall) while path 0
// carries 60 ms; its probes find 30 ms, unchanged among themselves. A
// probe below its window by more than staleRatio asks one try; a try that
// takes 30 ms forgets the window and path 1 carries on; one that takes
// 160 ms (a path whose tasks do take that long) keeps it, and the next
// tries are rationed (staleWait, doubling): a few in 2000 rounds, not one
// per probe. Without the rule path 1 is not tried again (its probes vouch
// for it).
func TestAdaptiveStaleWindowAsksOneTry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		try      float64 // the time of path 1's tasks from the blackout on
		kept     int     // path 1's task samples after the first try
		min, max int     // path 1's tries in the next 2000 rounds
	}{
		{"the path is back: it carries on", 30, 1, 1900, 2000},
		{"its tasks are that slow: rationed tries", 160, 51, 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustNew(t, Default(), 1)
			addPaths(t, s, 0, 1)
			for r := range 50 {
				observe(t, s, 1, []float64{80, 320}[r%2])
			}
			po := s.(ProbeObserver)
			for r := range 100 {
				observe(t, s, 0, 60*jitter(r))
			}
			po.ObserveProbe(1, 30)
			checkTry(t, s, "a probe 5.3 times below path 1's window", tc.try, tc.kept)
			tries := triesAfter(t, s, tc.try, 30)
			if tries < tc.min || tries > tc.max {
				t.Errorf("path 1 was tried %d times in 2000 rounds after its try, want %d–%d", tries, tc.min, tc.max)
			}
		})
	}
}

// TestAdaptiveStaleWindowNeedsItsProbes: a jittery path's lowest probe
// lies staleRatio below its task window (80 and 320 ms, geometric mean
// 160) while its probes' mean does not (three of 150 ms, then one of
// 30): no try, where the latest probe alone asked one.
func TestAdaptiveStaleWindowNeedsItsProbes(t *testing.T) {
	s := mustNew(t, Default(), 1)
	addPaths(t, s, 0, 1)
	for r := range 50 {
		observe(t, s, 1, []float64{80, 320}[r%2])
	}
	po := s.(ProbeObserver)
	for r := range 100 {
		observe(t, s, 0, 60*jitter(r))
	}
	for _, rtt := range []float64{150, 150, 150, 30} {
		po.ObserveProbe(1, rtt)
	}
	if got := choose(t, s); got != 0 {
		t.Errorf("after probes of 150, 150, 150 and 30 ms below a 160 ms window chose %d, want 0 (no try)", got)
	}
}

// TestBurstWindowRule: a window an upward change left is a loss burst's
// when it holds a few samples, lies burstRatio above enough probes, and
// the window it replaced did not.
func TestBurstWindowRule(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		n, m                   int     // the window's samples, the probes since
		before, window, probes float64 // ms: geometric means, the window's its fitted mean (meanLevel)
		want                   bool
	}{
		{"issue 29's lossy path: 75 ms burst, 23 before, probes 20", 6, 2, 23, 75, 20, true},
		{"a burst of 64 samples", 64, 3, 23, 75, 20, true},
		{"a window that grew past a burst: a lasting change", 65, 3, 23, 75, 20, false},
		{"too few probes to say the round trip is as before", 6, 1, 23, 75, 20, false},
		{"just above burstRatio", 6, 3, 23, 41, 20, true},
		{"just below burstRatio", 6, 3, 23, 39, 20, false},
		{"the window before lay burstRatio above too (tasks slower than a round trip)", 6, 3, 45, 150, 20, false},
		{"the window before just within burstRatio", 6, 3, 39, 150, 20, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := burstWindow(tc.n, tc.m, math.Log(tc.before), math.Log(tc.window), math.Log(tc.probes))
			if got != tc.want {
				t.Errorf("burstWindow(%d samples, %d probes, before %v ms, window %v ms, probes %v ms) = %v, want %v",
					tc.n, tc.m, tc.before, tc.window, tc.probes, got, tc.want)
			}
		})
	}
}

// TestAdaptiveBurstWindowAsksOneTry: path 1 (23 ms a task) carried the
// load until a loss burst of six tasks of 75 ms; the change test forgot
// its older samples and path 0 (60 ms) took over. Path 1's probes find
// 20 ms, as before the burst, and its window (3.75 times that) lies
// under staleRatio: without the burst rule they vouch for it and path 1
// is not tried again for hundreds of rounds. With it, the second probe
// asks one try; a try of 23 ms forgets the burst and path 1 carries on,
// one of 75 ms (the path did get that slow) keeps the window and the
// next tries are rationed as stale ones.
func TestAdaptiveBurstWindowAsksOneTry(t *testing.T) {
	for _, tc := range []struct {
		name     string
		try      float64 // path 1's task time from the burst on
		kept     int     // path 1's task samples after the try
		min, max int     // path 1's tasks in the next 2000 rounds
	}{
		{"the burst is over: it carries on", 23, 1, 1900, 2000},
		{"the path did get that slow: rationed tries", 75, 12, 2, 6},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := leftOnBurst(t, 75)
			if got := choose(t, s); got != 0 {
				t.Fatalf("after path 1's burst chose %d, want 0", got)
			}
			observe(t, s, 0, 60)
			probeUntilTry(t, s, 20)
			checkTry(t, s, "the second probe of 20 ms", tc.try, tc.kept)
			tasks := triesAfter(t, s, tc.try, 20)
			if tasks < tc.min || tasks > tc.max {
				t.Errorf("path 1 carried %d tasks in 2000 rounds after its try, want %d–%d", tasks, tc.min, tc.max)
			}
		})
	}
}

// leftOnBurst is the default selector on two paths whose path 1 (23 ms a
// task, 40 samples; path 0 60 ms) has just taken eight tasks of x ms: a
// loss burst, for x well above 23.
func leftOnBurst(t *testing.T, x float64) Selector {
	t.Helper()
	s := measuredPair(t, 23, 40)
	for r := range 8 {
		observe(t, s, 1, x*jitter(r))
	}
	return s
}

// TestAdaptiveBurstAsksSecondProbeSoon: the probe that leaves a path one
// short of the burst rule (burstProbes) asks the next one burstRecheck of
// its round trips later (ProbeSoon), not at the caller's next turn; no
// other probe asks one: not the probe that asks the try, nor one of a
// window that staleRatio already judges stale (one probe decides), nor
// one that found the round trip risen, nor a timeout, nor one of a path
// whose window no burst raised. TestAdaptiveBurstWindowAsksOneTry's
// setup: path 1 (23 ms a task) left on a burst of 75 ms tasks.
func TestAdaptiveBurstAsksSecondProbeSoon(t *testing.T) {
	burst := func(t *testing.T, x float64) ProbeAsker {
		s := leftOnBurst(t, x)
		observe(t, s, 0, 60)
		return s.(ProbeAsker)
	}
	soon := func(t *testing.T, s ProbeAsker, rtt float64) (float64, bool) {
		t.Helper()
		if err := s.ObserveProbe(1, rtt); err != nil {
			t.Fatal(err)
		}
		return s.ProbeSoon(1)
	}
	t.Run("the first probe of a burst's window asks the second soon", func(t *testing.T) {
		s := burst(t, 75)
		if ms, ok := soon(t, s, 20); !ok || math.Abs(ms-burstRecheck*20) > 1e-9 {
			t.Errorf("ProbeSoon after the first probe of 20 ms = %v, %v; want %v ms, true", ms, ok, burstRecheck*20)
		}
		if ms, ok := soon(t, s, 20); ok {
			t.Errorf("the second probe, which asks the try, asks another after %v ms", ms)
		}
		if got := choose(t, s); got != 1 {
			t.Errorf("after the second probe chose %d, want the try of 1", got)
		}
	})
	t.Run("a timeout asks none, and the next answer still does", func(t *testing.T) {
		s := burst(t, 75)
		if _, ok := soon(t, s, math.Inf(1)); ok {
			t.Error("a timed-out probe asks the next soon")
		}
		if _, ok := soon(t, s, 20); !ok {
			t.Error("the first answered probe after a timeout does not ask the next soon")
		}
	})
	t.Run("a window staleRatio above the probes: one probe decides", func(t *testing.T) {
		s := burst(t, 200)
		if ms, ok := soon(t, s, 20); ok {
			t.Errorf("a probe 10 times below the window asks another after %v ms", ms)
		}
		if got := choose(t, s); got != 1 {
			t.Errorf("after one probe 10 times below the window chose %d, want the try of 1", got)
		}
	})
	t.Run("the round trip rose with the tasks", func(t *testing.T) {
		s := burst(t, 75)
		if ms, ok := soon(t, s, 70); ok {
			t.Errorf("a probe of 70 ms under a 75 ms window asks another after %v ms", ms)
		}
	})
	t.Run("no burst: a path left on its own tasks", func(t *testing.T) {
		s := mustNew(t, Default(), 1)
		addPaths(t, s, 0, 1)
		for r := range 40 {
			observe(t, s, 0, 30*jitter(r))
			observe(t, s, 1, 45*jitter(r))
		}
		if ms, ok := s.(ProbeAsker).ProbeSoon(1); ok {
			t.Errorf("before any probe: asks after %v ms", ms)
		}
		if ms, ok := soon(t, s.(ProbeAsker), 20); ok {
			t.Errorf("a probe of 20 ms under a window of 45 ms no burst raised asks another after %v ms", ms)
		}
	})
}

// TestAdaptiveBurstAmongRoundTripsAsksOneTry: issue 29's held-out
// restore/200-30-60 (seed 5150), replayed. Path 1 (30 ms a task) is cut
// for 0.4 s, shorter than the stall timeout: three requests that spanned
// the blackout take 260–470 ms, the change test forgets the older window
// on them and path 0 (60 ms) takes over; a re-probe adds seven tasks of
// 30 ms. The window's log-mean is then 1.75 times the probes' 30 ms,
// under burstRatio, but its fitted mean (93 ms) and evaluation (104 ms)
// are twice path 0's: judged by its log-mean the probes vouched for it,
// and the path was never tried again. Judged by its fitted mean
// (meanLevel), the second probe asks one try; a try of 30 ms forgets the
// burst, one as slow as the window's mean keeps it.
func TestAdaptiveBurstAmongRoundTripsAsksOneTry(t *testing.T) {
	for _, tc := range []struct {
		name string
		try  float64 // the try's task time
		kept int     // path 1's task samples after it
	}{
		{"the blackout is over: the window is forgotten", 30, 1},
		{"the path is that slow: the window stays", 95, 15},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settledPair(t)
			for _, x := range []float64{471, 464, 30, 262} {
				observe(t, s, 1, x)
			}
			if got := choose(t, s); got != 0 {
				t.Fatalf("after path 1's blackout samples chose %d, want 0", got)
			}
			for r := range 7 {
				observe(t, s, 1, 30*jitter(r)) // a re-probe's tasks
			}
			for r := range 10 {
				observe(t, s, 0, 60*jitter(r))
			}
			if got := choose(t, s); got != 0 {
				t.Fatalf("after path 1's re-probe chose %d, want 0", got)
			}
			probeUntilTry(t, s, 30)
			checkTry(t, s, "the second probe of 30 ms", tc.try, tc.kept)
		})
	}
}

// TestAdaptiveDrainLeftAsksOneTry: issue 29's held-out restore/200-30-60
// (seed 3721, about 1 row in 60 stuck at share 0.00), replayed in short.
// Path 1 (30 ms a task) is cut for 0.4 s, shorter than the stall
// timeout, and path 0 (60 ms) takes over; the window path 1 is left on
// lies 3–4 times its 30 ms probes, under staleRatio, and was made by a
// queue draining: after a stale try (the try forgot the blackout's
// window, and its own requests waited behind the move it made, 92–112
// ms), or over several changes, each forgetting the older samples (a rise
// to 65 ms, another to 500, falls to 250 and 100). The downward changes
// and the try's forgetting cleared the burst rule's mark, so no rule
// asked another try. Now the mark outlives them (markBurst), and the
// burst rule's probes ask one: a try of 30 ms forgets the window, one as
// slow as it keeps it. A selector that stays on the path it is on fails
// the first row; one that tries whenever probes lie below a window fails
// the second (the window kept).
func TestAdaptiveDrainLeftAsksOneTry(t *testing.T) {
	// moved: the blackout's samples, a stale try's move onto path 1
	// (its own task and those behind it, 92–112 ms), then path 0.
	moved := func(t *testing.T, s Selector) int {
		for r := range 40 {
			observe(t, s, 1, (400+float64(r%8)*60)*jitter(r))
		}
		for r := range 10 {
			observe(t, s, 0, 60*jitter(r))
		}
		s.(ProbeObserver).ObserveProbe(1, 30) // staleRatio below: a try
		if got := choose(t, s); got != 1 {
			t.Fatalf("after a probe 10 times below the blackout's window chose %d, want the try of 1", got)
		}
		drain := []float64{112, 112, 102, 112, 112, 102, 92, 102, 112, 112, 102, 92}
		for _, x := range drain {
			observe(t, s, 1, x)
		}
		return len(drain)
	}
	// drained: the window falls over several changes.
	drained := func(t *testing.T, s Selector) int {
		for _, level := range []float64{65, 500, 250, 100} {
			for r := range 16 {
				observe(t, s, 1, level*jitter(r))
			}
		}
		return s.(*adaptive).paths[1].n()
	}
	for _, tc := range []struct {
		name string
		left func(*testing.T, Selector) int // path 1's samples after it
		try  float64
		more bool // the window is kept: path 1's samples grow by the try's
	}{
		{"a stale try's move: the queue is gone", moved, 30, false},
		{"a stale try's move: the path is that slow", moved, 105, true},
		{"a drain over several changes: the queue is gone", drained, 30, false},
		{"a drain over several changes: the path is that slow", drained, 100, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := settledPair(t)
			n := tc.left(t, s)
			for r := range 10 {
				observe(t, s, 0, 60*jitter(r))
			}
			if got := choose(t, s); got != 0 {
				t.Fatalf("after path 1's drain chose %d, want 0", got)
			}
			probeUntilTry(t, s, 30)
			kept := 1
			if tc.more {
				kept = n + 1
			}
			checkTry(t, s, "the second probe of 30 ms", tc.try, kept)
		})
	}
}

// triesAfter runs 2000 rounds of a two-path selector s: path 0 takes 60 ms
// tasks, path 1 tasks of try ms, and path 1 is probed at probe ms every
// fifth round (all jittered). It returns how many tasks path 1 carried.
func triesAfter(t *testing.T, s Selector, try, probe float64) int {
	po := s.(ProbeObserver)
	tries := 0
	for r := range 2000 {
		if p := choose(t, s); p == 1 {
			tries++
			observe(t, s, 1, try*jitter(r))
		} else {
			observe(t, s, 0, 60*jitter(r))
		}
		if r%5 == 4 {
			po.ObserveProbe(1, probe*jitter(r))
		}
	}
	return tries
}

// settledPair is the start of the restore/200-30-60 replays, before path
// 1's blackout: path 1 of 30 ms, 80 tasks measured.
func settledPair(t *testing.T) Selector { return measuredPair(t, 30, 80) }

// measuredPair is the default selector on two paths: path 0 of 60 ms (20
// tasks measured) and path 1 of ms, n tasks measured (all jittered).
func measuredPair(t *testing.T, ms float64, n int) Selector {
	t.Helper()
	s := mustNew(t, Default(), 1)
	addPaths(t, s, 0, 1)
	for r := range 20 {
		observe(t, s, 0, 60*jitter(r))
	}
	for r := range n {
		observe(t, s, 1, ms*jitter(r))
	}
	return s
}
