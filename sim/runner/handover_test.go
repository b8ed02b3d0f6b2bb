package runner

import (
	"reflect"
	"testing"

	"github.com/hetquic/hetquic/scenario"
)

// TestHandoversBefore: only outages (a drive's handovers) that begin
// before the transfer's last delivery count; rate changes do not.
func TestHandoversBefore(t *testing.T) {
	evs := []scenario.Event{
		{AtS: 2, OutageS: 0.5},
		{AtS: 3, Set: &scenario.Patch{}},
		{AtS: 9, OutageS: 0.05},
		{AtS: 30, OutageS: 0.5},
	}
	for _, tc := range []struct {
		last float64
		want int
	}{{1, 0}, {2.5, 1}, {10, 2}, {60, 3}} {
		if got := handoversBefore(evs, tc.last); got != tc.want {
			t.Errorf("last delivery at %g s: %d handovers, want %d", tc.last, got, tc.want)
		}
	}
}

// TestScenarioForFading: a fading drive gives each run seed its own fades,
// the same seed the same scenario, and the handovers of the loaded one; a
// drive without fading shares the loaded scenario.
func TestScenarioForFading(t *testing.T) {
	s, err := Load("../experiments/sim-thesis-mams-144-fading.yaml")
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.scenarioFor(1)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := s.scenarioFor(1)
	c, _ := s.scenarioFor(2)
	if !reflect.DeepEqual(a, b) || reflect.DeepEqual(a, c) || a == s.sc {
		t.Fatalf("seed 1 twice equal %v, seeds 1 and 2 equal %v", reflect.DeepEqual(a, b), reflect.DeepEqual(a, c))
	}
	for _, sc := range []*scenario.Scenario{a, c} {
		if got, want := handoversBefore(sc.Events, 1e9), handoversBefore(s.sc.Events, 1e9); got != want || got == 0 {
			t.Errorf("%d handovers, loaded scenario %d", got, want)
		}
	}
	plain, err := Load("../experiments/sim-thesis-mams-144.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := plain.scenarioFor(3); sc != plain.sc {
		t.Error("a drive without fading got its own scenario per seed")
	}
}
