package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/scenario"
)

// Env carries out the tasks of one run and, where it can, knows the truth.
// The offline model and a replayed trace are Envs; real runs through the
// emulator and simulator runs will be too.
type Env interface {
	// Begin prepares a run: the network as at round 0, a fresh connection.
	Begin(ctx context.Context) error
	// Do carries out round t's task on path p (rounds 0, 1, … of a run).
	Do(ctx context.Context, t int, p pathsel.PathID) (Outcome, error)
	// Truth returns every path's true moments of the sample (the unit the
	// strategies learn from) at round t, or nil when unknown.
	Truth(t int) []Moments
	// Shared reports whether the Env may be used by several runs at once
	// (precomputed tables may; real networks may not).
	Shared() bool
}

// Outcome is one task's result.
type Outcome struct {
	// Path is the path that carried the task: the one asked for, unless a
	// real client could not use it (probe failed, failover) and said so.
	Path      pathsel.PathID
	TCTms     float64
	SizeBytes int
	// Sample is what the strategy observes: TCTms, or TCTms/SizeBytes.
	Sample float64
	// WaitMs is what the user waited for the task: from the request to its
	// last byte, a switch's probe and validation and any failover included
	// (mode real). TCT starts at the request stream, after the switch, so
	// it leaves them out. 0 means TCTms (the offline model has no switches).
	WaitMs float64
}

// table is an Env whose every outcome was drawn (or recorded) up front: one
// sample per path per round, so every strategy of a seed meets the same
// network — common random numbers, which makes strategies comparable with
// few seeds.
type table struct {
	tct   [][]float64 // [round][path] ms
	size  []int       // [round]
	truth [][]Moments // [round][path] in sample units; nil when unknown
	gone  [][]bool    // [round][path]: removed by an event; nil when none is
	perB  bool
	// probe is what a probe of each path at each round measures (ms, +Inf
	// lost); nil when the spec has no probe budget. A trace has no RTTs:
	// its probe is the recorded sample (Probe).
	probe [][]float64
}

// Probe is the RTT a probe of path p measures at round t: the model's
// draw, or for a trace the recorded sample of that path and round (one
// 5 KB task is a single flight, so it bounds the RTT from above).
func (e *table) Probe(t int, p pathsel.PathID) (float64, bool) {
	if e.probe == nil {
		return e.tct[t][p], true
	}
	return e.probe[t][p], true
}

func (e *table) Begin(context.Context) error { return nil }

func (e *table) Do(_ context.Context, t int, p pathsel.PathID) (Outcome, error) {
	if t < 0 || t >= len(e.tct) || int(p) < 0 || int(p) >= len(e.tct[t]) {
		return Outcome{}, fmt.Errorf("round %d path %d is outside the table", t, p)
	}
	o := Outcome{Path: p, TCTms: e.tct[t][p], SizeBytes: e.size[t], Sample: e.tct[t][p]}
	if e.perB {
		o.Sample /= float64(o.SizeBytes)
	}
	return o, nil
}

func (e *table) Truth(t int) []Moments { return e.truth[t] }

// Gone says which paths are removed at round t (nil: none).
func (e *table) Gone(t int) []bool {
	if e.gone == nil {
		return nil
	}
	return e.gone[t]
}

func (e *table) Shared() bool { return true }

// remover is an Env whose paths can be taken away (RoundEvent.Remove).
type remover interface{ Gone(t int) []bool }

// envSeedStream separates the environment's random stream from the
// strategies' (which use their label's hash) for the same seed.
const envSeedStream = 0x5ce2a210

// OfflineEnv draws seed's table from the scenario's TCT model, with the
// round events applied: mode offline's Env, and the task sizes and model
// truth of a real run (runner/realenv) of the same seed.
func OfflineEnv(s *Spec, seed uint64) (Env, error) { return offlineEnv(s, seed) }

func offlineEnv(s *Spec, seed uint64) (*table, error) {
	rng := rand.New(rand.NewPCG(seed, envSeedStream))
	sched := NewSchedule(s.scenario, s.Events)
	k := len(s.scenario.Paths)
	e := &table{
		tct:   make([][]float64, s.Rounds),
		size:  make([]int, s.Rounds),
		truth: make([][]Moments, s.Rounds),
		perB:  s.Sample == SampleTCTPerByte,
	}
	// Probes draw from their own stream, so the tasks' draws are the same
	// with and without a probe budget.
	probeRng := rand.New(rand.NewPCG(seed, envSeedStream+1))
	if s.Probe.PerSecond > 0 {
		e.probe = make([][]float64, s.Rounds)
	}
	tasks := make([]task, k)
	cached := -1 // size the tasks were built for, in the current regime
	for t := range s.Rounds {
		size := s.Task.SizeBytes
		if len(s.Task.Sizes) > 0 {
			size = s.Task.Sizes[rng.IntN(len(s.Task.Sizes))]
		}
		paths, changed, err := sched.At(t)
		if err != nil {
			return nil, err
		}
		if changed || size != cached {
			for i, p := range paths {
				tasks[i] = s.Model.task(p, size)
			}
			cached = size
		}
		e.size[t] = size
		if slices.Contains(sched.gone, true) {
			if e.gone == nil {
				e.gone = make([][]bool, s.Rounds)
			}
			e.gone[t] = slices.Clone(sched.gone)
		}
		e.tct[t] = make([]float64, k)
		e.truth[t] = make([]Moments, k)
		for i := range tasks {
			e.tct[t][i] = tasks[i].sample(rng)
			m := tasks[i].moments()
			if e.perB {
				b := float64(size)
				m = Moments{m.Mean / b, m.Var / (b * b)}
			}
			e.truth[t][i] = m
		}
		if e.probe != nil {
			e.probe[t] = make([]float64, k)
			for i := range tasks {
				e.probe[t][i] = tasks[i].probeRTT(probeRng)
			}
		}
	}
	return e, nil
}

// traceEnv replays a recorded trace. The truth of a trace is unknown; its
// stand-in is each path's mean and variance over the whole trace, so the
// oracle is the best fixed path in hindsight (the usual yardstick of regret
// on a recorded sequence).
func traceEnv(s *Spec) *table {
	tr := s.trace
	rows := tr.rows[:s.Rounds]
	e := &table{tct: rows, size: make([]int, len(rows)), truth: make([][]Moments, len(rows))}
	k := len(tr.paths)
	mom := make([]Moments, k)
	for i := range k {
		var sum, sumSq float64
		for _, r := range rows {
			sum += r[i]
			sumSq += r[i] * r[i]
		}
		n := float64(len(rows))
		mean := sum / n
		mom[i] = Moments{mean, max(0, sumSq/n-mean*mean)}
	}
	for t := range rows {
		e.size[t] = s.Task.SizeBytes
		e.truth[t] = mom
	}
	return e
}

// Schedule yields the paths' parameters round by round: the scenario's,
// changed by the round events. A spike (for_rounds > 0) restores the path
// as it was just before the spike.
type Schedule struct {
	paths   []scenario.Path
	gone    []bool               // removed by a Remove event
	events  map[int][]RoundEvent // by round, in the spec's order
	reverts map[int][]revert
	index   map[string]int
}

type revert struct {
	path   int
	was    scenario.Path
	remove bool // the revert of a Remove: the path comes back
}

// NewSchedule starts the schedule of events over sc's paths at round 0.
func NewSchedule(sc *scenario.Scenario, events []RoundEvent) *Schedule {
	s := &Schedule{
		paths:   append([]scenario.Path(nil), sc.Paths...),
		gone:    make([]bool, len(sc.Paths)),
		events:  map[int][]RoundEvent{},
		reverts: map[int][]revert{},
		index:   map[string]int{},
	}
	for i, p := range sc.Paths {
		s.index[p.Name] = i
	}
	for _, e := range events {
		s.events[e.Round] = append(s.events[e.Round], e)
	}
	return s
}

// At advances to round t (called with t = 0, 1, 2, …) and reports whether
// anything changed since round t−1 (always true at t = 0). Spec.resolve
// walks every schedule once, so a patch that fails here failed at load.
func (s *Schedule) At(t int) ([]scenario.Path, bool, error) {
	changed := t == 0
	for _, r := range s.reverts[t] {
		if r.remove {
			s.gone[r.path] = false
		} else {
			s.paths[r.path] = r.was
		}
		changed = true
	}
	for _, e := range s.events[t] {
		i := s.index[e.Path]
		if e.ForRounds > 0 {
			s.reverts[t+e.ForRounds] = append(s.reverts[t+e.ForRounds], revert{i, s.paths[i], e.Remove})
		}
		if e.Remove {
			s.gone[i] = true
			changed = true
			continue
		}
		p, err := e.Set.Apply(s.paths[i])
		if err != nil {
			return nil, false, fmt.Errorf("round %d, path %s: %w", t, e.Path, err)
		}
		s.paths[i] = p
		changed = true
	}
	return s.paths, changed, nil
}
