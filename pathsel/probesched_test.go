package pathsel

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestProbeSchedule: the sweep asks every idle path, the ticks fall every
// 1000/PerSecond ms (several at once when the caller is behind), and Next
// goes round the idle paths in turn.
func TestProbeSchedule(t *testing.T) {
	s := NewProbeSchedule(DefaultProbesPerSecond)
	idle := func(i int) bool { return i != 1 }
	if got := s.Sweep(4, idle); !slices.Equal(got, []int{0, 2, 3}) {
		t.Errorf("sweep %v, want [0 2 3]", got)
	}
	if _, ok := s.Due(499); ok {
		t.Error("a tick before 500 ms")
	}
	var ticks []float64
	for {
		at, ok := s.Due(1600)
		if !ok {
			break
		}
		ticks = append(ticks, at)
	}
	if !slices.Equal(ticks, []float64{500, 1000, 1500}) {
		t.Errorf("ticks by 1600 ms %v, want [500 1000 1500]", ticks)
	}
	s.Skip()
	if _, ok := s.Due(2000); ok {
		t.Error("a skipped tick fell due")
	}
	var turns []int
	for range 4 {
		turns = append(turns, s.Next(4, idle))
	}
	if !slices.Equal(turns, []int{0, 2, 3, 0}) {
		t.Errorf("turns %v, want [0 2 3 0]", turns)
	}
	if q := s.Next(4, func(int) bool { return false }); q != -1 {
		t.Errorf("no idle path: %d, want -1", q)
	}
}

// TestAdaptiveWaitsForProbeUnderWay: the default does not spend a request
// on a path it knows nothing of while that path's probe is under way and
// another path has a task sample; before any sample, after a lost probe,
// a probe called off, or with Probes off, the path is tried as before.
func TestAdaptiveWaitsForProbeUnderWay(t *testing.T) {
	inf := math.Inf(1)
	for _, tc := range []struct {
		name      string
		probesOff bool
		sampled   bool      // path 0 has a task sample
		underWay  []PathID  // probes sent
		answers   []float64 // answers of path 1's probe, in order
		calledOff bool      // path 1's probe called off
		want      PathID
	}{
		{name: "nothing sampled: tried in order", underWay: []PathID{0, 1, 2}, want: 0},
		{name: "an untried path without a probe first", sampled: true, underWay: []PathID{1}, want: 2},
		{name: "every untried path waits: the sampled one", sampled: true, underWay: []PathID{1, 2}, want: 0},
		{name: "a lost probe: tried once", sampled: true, underWay: []PathID{1, 2}, answers: []float64{inf}, want: 1},
		{name: "called off: tried once", sampled: true, underWay: []PathID{1, 2}, calledOff: true, want: 1},
		{name: "probes off: no wait", probesOff: true, sampled: true, underWay: []PathID{1}, want: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Probes = bptr(!tc.probesOff)
			s := mustNew(t, c, 1).(ProbeObserver)
			addPaths(t, s, 0, 1, 2)
			if tc.sampled {
				observe(t, s, 0, 20)
			}
			for _, p := range tc.underWay {
				if err := s.ProbeUnderWay(p, true); err != nil {
					t.Fatal(err)
				}
			}
			for _, v := range tc.answers {
				if err := s.ObserveProbe(1, v); err != nil {
					t.Fatal(err)
				}
			}
			if tc.calledOff {
				if err := s.ProbeUnderWay(1, false); err != nil {
					t.Fatal(err)
				}
			}
			if got := choose(t, s); got != tc.want {
				t.Errorf("chose %d, want %d", got, tc.want)
			}
		})
	}
}

// TestAdaptiveProbeAnswerEndsTheWait: an answered probe puts the path
// among those tried in probe-floor order: one near the sampled path's time
// is tried, one far above it is not.
func TestAdaptiveProbeAnswerEndsTheWait(t *testing.T) {
	s := mustNew(t, Default(), 1).(ProbeObserver)
	addPaths(t, s, 0, 1, 2)
	for _, p := range []PathID{1, 2} {
		if err := s.ProbeUnderWay(p, true); err != nil {
			t.Fatal(err)
		}
	}
	for range 20 {
		observe(t, s, 0, 40)
	}
	if err := s.ObserveProbe(2, 400); err != nil {
		t.Fatal(err)
	}
	if got := choose(t, s); got != 0 {
		t.Errorf("path 2 probed at 10 × path 0's time, path 1 under way: chose %d, want 0", got)
	}
	if err := s.ObserveProbe(1, 15); err != nil {
		t.Fatal(err)
	}
	if got := choose(t, s); got != 1 {
		t.Errorf("path 1 probed at 15 ms beside 40 ms tasks: chose %d, want 1", got)
	}
}

// TestProbeUnderWayUnknownPath: an unknown path is refused.
func TestProbeUnderWayUnknownPath(t *testing.T) {
	s := mustNew(t, Default(), 1).(ProbeObserver)
	addPaths(t, s, 0)
	if err := s.ProbeUnderWay(3, true); !errors.Is(err, ErrUnknownPath) {
		t.Errorf("unknown path: %v", err)
	}
}
