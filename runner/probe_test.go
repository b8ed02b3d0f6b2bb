package runner

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/pathsel"
)

// TestProbeBudget: with a probe budget the default is sent probes at the
// stated rate over the run's own clock (its users' waits added up), the
// request-only ablation and the other strategies none, and the probes
// leave the tasks' draws alone (common random numbers): a strategy that
// does not probe runs the same with and without a budget.
func TestProbeBudget(t *testing.T) {
	strategies := `strategies:
  - {strategy: thompson}
  - {strategy: hetquic}
  - {label: hetquic-no-probe, strategy: hetquic, probes: false}
`
	with, err := Execute(context.Background(), load(t, base+"probe: {per_second: 20}\n"+strategies), workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	without, err := Execute(context.Background(), load(t, base+strategies), workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	for seed := range with.Runs[0] {
		if got, want := with.Runs[0][seed].TCTms, without.Runs[0][seed].TCTms; !slices.Equal(got, want) {
			t.Fatalf("seed %d: thompson's tasks differ with a probe budget", seed)
		}
		if got, want := with.Runs[2][seed].Path, without.Runs[1][seed].Path; !slices.Equal(got, want) {
			t.Errorf("seed %d: hetquic-no-probe chose differently with a budget than hetquic without one", seed)
		}
		if with.Runs[0][seed].Probes != 0 || with.Runs[2][seed].Probes != 0 || without.Runs[1][seed].Probes != 0 {
			t.Errorf("seed %d: a run that does not probe sent probes", seed)
		}
		h := with.Runs[1][seed]
		var clock float64
		for _, w := range h.WaitMs {
			clock += w
		}
		// One idle path of two, within the working set: the start-up
		// sweep's one probe, then one every 50 ms.
		if want := 1 + int(clock/50); h.Probes < want-1 || h.Probes > want {
			t.Errorf("seed %d: %d probes in %.0f ms at 20/s, want %d", seed, h.Probes, clock, want)
		}
	}
}

// TestProberRotates: with more idle paths than the working set the steady
// probes go round all of them after the start-up sweep, and each probe of
// a path that had left the tracked set takes two slots.
func TestProberRotates(t *testing.T) {
	env, sel := &lateEnv{}, &probeLog{}
	p := &prober{env: env, sel: sel, sched: pathsel.NewProbeSchedule(100), ws: 2}
	present := []bool{true, true, true, true, true}
	if err := p.after(0, 1, 0, present); err != nil {
		t.Fatal(err)
	}
	if want := []pathsel.PathID{1, 2, 3, 4}; !slices.Equal(env.asked, want) {
		t.Fatalf("sweep asked %v, want %v", env.asked, want)
	}
	if !slices.Equal(sel.underWay, env.asked) {
		t.Errorf("selector told under way %v, want %v", sel.underWay, env.asked)
	}
	// Slots every 10 ms; the tracked set holds 3 and 4 after the sweep: 1
	// and 2 take two slots each, 3 and 4 (evicted by then) two each too.
	env.asked = nil
	if err := p.after(1, 80, 0, present); err != nil {
		t.Fatal(err)
	}
	if want := []pathsel.PathID{1, 2, 3, 4}; !slices.Equal(env.asked, want) {
		t.Errorf("steady probes in 80 ms %v, want %v (two slots each)", env.asked, want)
	}
	present[2] = false
	env.asked = nil
	p.tracked = []int{1, 3, 4}
	p.ws = 3
	if err := p.after(2, 40, 0, present); err != nil {
		t.Fatal(err)
	}
	if want := []pathsel.PathID{1, 3, 4, 1}; !slices.Equal(env.asked, want) {
		t.Errorf("probes with path 2 gone, 0 current: %v, want %v", env.asked, want)
	}
}

// lateEnv is a ProbeAnswerer: its probes are only asked, answered later.
type lateEnv struct {
	asked   []pathsel.PathID
	answers []ProbeAnswer
}

func (e *lateEnv) Probe(_ int, p pathsel.PathID) (float64, bool) {
	e.asked = append(e.asked, p)
	return 0, false
}

func (e *lateEnv) Answers() []ProbeAnswer {
	a := e.answers
	e.answers = nil
	return a
}

// probeLog records what the selector is told of probes.
type probeLog struct {
	pathsel.Selector
	got      []ProbeAnswer
	underWay []pathsel.PathID
}

func (l *probeLog) ProbeUnderWay(p pathsel.PathID, on bool) error {
	if on {
		l.underWay = append(l.underWay, p)
	}
	return nil
}

func (l *probeLog) ObserveProbe(p pathsel.PathID, rtt float64) error {
	l.got = append(l.got, ProbeAnswer{p, rtt})
	return nil
}

// TestProberLateAnswers: with an Env whose probes are answered later
// (mode real), a probe slot only asks, and the answers that came back reach
// the selector after the next round, slot or no slot, whichever path they
// are of.
func TestProberLateAnswers(t *testing.T) {
	env, sel := &lateEnv{}, &probeLog{}
	p := &prober{env: env, sel: sel, sched: pathsel.NewProbeSchedule(10), swept: true, ws: 3}
	present := []bool{true, true, true}
	if err := p.after(0, 100, 0, present); err != nil {
		t.Fatal(err)
	}
	if len(env.asked) != 1 || len(sel.got) != 0 {
		t.Fatalf("after a slot: asked %v, selector told %v; want one asked, nothing told", env.asked, sel.got)
	}
	env.answers = []ProbeAnswer{{2, 31}, {1, math.Inf(1)}}
	if err := p.after(1, 10, 0, present); err != nil { // no slot due
		t.Fatal(err)
	}
	if want := []ProbeAnswer{{2, 31}, {1, math.Inf(1)}}; !slices.Equal(sel.got, want) || len(env.asked) != 1 {
		t.Errorf("selector told %v (asked %v), want %v and no new ask", sel.got, env.asked, want)
	}
}

// strictLog is a probeLog whose selector knows only the paths present, as
// pathsel's strategies do: a probe answer of another path is an error.
type strictLog struct {
	probeLog
	present []bool
}

func (l *strictLog) ObserveProbe(p pathsel.PathID, rtt float64) error {
	if int(p) >= len(l.present) || !l.present[p] {
		return pathsel.ErrUnknownPath
	}
	return l.probeLog.ObserveProbe(p, rtt)
}

// TestProberDropsAnswersOfRemovedPaths: a probe asked while a path was
// present whose answer comes back after the run took the path out of the
// strategy (a resting path) is dropped, not handed to the strategy, which
// would abort the run with "unknown path".
func TestProberDropsAnswersOfRemovedPaths(t *testing.T) {
	env := &lateEnv{}
	present := []bool{true, true, true}
	sel := &strictLog{present: present}
	p := &prober{env: env, sel: sel, sched: pathsel.NewProbeSchedule(10), swept: true, ws: 3}
	if err := p.after(0, 100, 0, present); err != nil {
		t.Fatal(err)
	}
	present[1] = false // the run removed path 1 before its answer came
	env.answers = []ProbeAnswer{{1, 20}, {2, 31}}
	if err := p.after(1, 10, 0, present); err != nil {
		t.Fatalf("an answer of a removed path aborted the run: %v", err)
	}
	if want := []ProbeAnswer{{2, 31}}; !slices.Equal(sel.got, want) {
		t.Errorf("selector told %v, want %v", sel.got, want)
	}
}
