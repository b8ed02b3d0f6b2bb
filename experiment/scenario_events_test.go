package experiment

import (
	"context"
	"io/fs"
	"os"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hetquic/hetquic/internal/runner"
)

// A scenario with timed events (leo.yaml: 12 handovers, each an outage and
// a delay step) is refused offline without seconds_per_round, and with it
// every event within the run becomes a round event.
func TestScenarioEventsTranslatedOrRefused(t *testing.T) {
	fsys := os.DirFS("..")
	spec := func(extra string) string {
		return "name: leo\nscenario: ../scenarios/leo.yaml\nrounds: 1000\nstrategies: [{strategy: polling}]\n" + extra
	}
	mk := func(text string) fstest.MapFS {
		m := fstest.MapFS{"experiments/x.yaml": {Data: []byte(text)}}
		data, err := fs.ReadFile(fsys, "scenarios/leo.yaml")
		if err != nil {
			t.Fatal(err)
		}
		m["scenarios/leo.yaml"] = &fstest.MapFile{Data: data}
		return m
	}
	_, err := Load(mk(spec("")), "experiments/x.yaml")
	if err == nil || !strings.Contains(err.Error(), "events[0].at_s: mode offline counts rounds, not seconds") {
		t.Fatalf("without seconds_per_round: %v", err)
	}
	s, err := Load(mk(spec("seconds_per_round: 0.1\n")), "experiments/x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 rounds × 0.1 s = 100 s: the handovers at 15, 30, …, 90 s (6
	// outages of 0.2 s, each ended by restoring the loss, 6 delay steps).
	if len(s.Events) != 18 || s.Events[0].Round != 150 || s.Events[1].Round != 152 || s.Events[2].Round != 152 {
		t.Fatalf("events %+v", s.Events)
	}
	res, err := Execute(context.Background(), s, runner.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The outage shows in the truth: the leo path times out at round 150.
	if got := res.Truth[150][0].Mean; got < 1000 {
		t.Errorf("leo path at the outage: mean TCT %v ms, want a timeout", got)
	}
	if a, b := res.Truth[149][0].Mean, res.Truth[153][0].Mean; !(b > a && b < 1000) {
		t.Errorf("delay step 22 → 29 ms not applied: %v → %v", a, b)
	}
}

// A field the offline model cannot model is an error naming it.
func TestScenarioFieldRefusedOffline(t *testing.T) {
	m := fstest.MapFS{
		"x.yaml": {Data: []byte("name: x\nscenario: s.yaml\nrounds: 10\nstrategies: [{strategy: polling}]\n")},
		"s.yaml": {Data: []byte("name: s\npaths:\n  - name: a\n    up: {delay_ms: 5}\n    down: {delay_ms: 5, jitter_ms: 1, reorder: true}\n")},
	}
	_, err := Load(m, "x.yaml")
	if err == nil || !strings.Contains(err.Error(), "paths[0].down.reorder: the offline backend cannot model reorder") {
		t.Fatalf("err = %v", err)
	}
}
