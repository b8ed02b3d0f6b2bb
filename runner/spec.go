// Package runner runs path-selection experiments: strategies × seeds ×
// rounds over an environment (the offline TCT model of a scenario, a replayed
// trace, and later real QUIC through the emulator and the simulator), and
// writes per-round CSV, a summary and a report with figures.
package runner

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"slices"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/yamlfile"
	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/scenario"
)

// Spec is an experiment file.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Scenario is the scenario file, relative to the experiment file.
	Scenario string `yaml:"scenario"`
	// Mode is how tasks are carried out: "offline" (the TCT model of the
	// scenario, the default), "trace" (replay Trace) or "real" (HTTP/3
	// requests by PCM-QUIC through the emulator on loopback).
	Mode string `yaml:"mode"`
	Real Real   `yaml:"real"`
	// Trace is a CSV of recorded samples for mode trace: a header "round"
	// followed by one column per path name, then one line per round.
	Trace  string `yaml:"trace"`
	Rounds int    `yaml:"rounds"`
	Task   Task   `yaml:"task"`
	// Sample is what strategies learn from: "tct" (ms, PCM Eq. 3) or
	// "tct_per_byte" (ms per byte, Eq. 4, for mixed task sizes).
	Sample string `yaml:"sample"`
	Seeds  int    `yaml:"seeds"` // number of seeds, default 1
	Seed   uint64 `yaml:"seed"`  // the first seed, default 1; seeds are Seed, Seed+1, …
	// Objective says which path is best (for the oracle, regret and hit
	// rate): r = a·E + (1−a)·spread of the sample (PCM Eq. 18).
	Objective  Objective      `yaml:"objective"`
	Strategies []StrategySpec `yaml:"strategies"`
	// PSA sets the choices PCM's Algorithm 1 leaves open for every
	// strategy psa that does not set them itself, so that one sweep
	// field (psa.c) moves the optimistic and pessimistic rows together.
	PSA    PSAChoices   `yaml:"psa"`
	Events []RoundEvent `yaml:"events"`
	// SecondsPerRound translates the scenario's timed events (at_s) into
	// rounds for modes offline and real, which count rounds, not seconds:
	// an event applies from round ⌊at_s / SecondsPerRound⌋ (events past the
	// last round never happen in the run). A scenario with timed events and
	// no SecondsPerRound is an error: its events would be dropped.
	SecondsPerRound float64 `yaml:"seconds_per_round"`
	Model           Model   `yaml:"model"`
	// Probe is the budget of out-of-band probes of idle paths (none
	// unless per_second is set; see Probe).
	Probe   Probe   `yaml:"probe"`
	Figures Figures `yaml:"figures"`
	// Sweep runs the experiment at many points, each a setting of some of
	// this file's or its scenario's fields (LoadPlan expands it; Load
	// reads the file as written, without it).
	Sweep *sweep.Block `yaml:"sweep"`

	scenario *scenario.Scenario
	trace    *traceTable
}

// Real tunes mode real (run by runner/realenv).
type Real struct {
	// Rebind uses PCM's paper-faithful mode (one connection ID, changing
	// source address) instead of quic-go's path API.
	Rebind bool `yaml:"rebind"`
	// TimeoutMs bounds one request (default 10000).
	TimeoutMs float64 `yaml:"timeout_ms"`
}

// Task is the work of one round.
type Task struct {
	SizeBytes int `yaml:"size_bytes"`
	// Sizes, when given, are drawn uniformly per round (the same draws for
	// every strategy of a seed) instead of SizeBytes.
	Sizes []int `yaml:"sizes"`
}

// Objective is the experiment's notion of the best path.
type Objective struct {
	A      *float64       `yaml:"a"`      // default 1: the smallest expected sample
	Spread pathsel.Spread `yaml:"spread"` // var (default) or std
	// PerStrategy judges each strategy by its own a and spread (PCM Fig. 14
	// compares a = 0.8, 0.5, 0.2, whose best paths differ); strategies
	// without them (polling, UCB, …) are judged by A and Spread.
	PerStrategy bool `yaml:"per_strategy"`
}

func (o Objective) objective() pathsel.Objective {
	a := 1.0
	if o.A != nil {
		a = *o.A
	}
	spread := o.Spread
	if spread == "" {
		spread = pathsel.Var
	}
	return pathsel.Objective{A: a, Spread: spread}
}

// objectiveFor is the objective strategy st is judged by.
func (s *Spec) objectiveFor(st StrategySpec) pathsel.Objective {
	o := s.Objective.objective()
	if !s.Objective.PerStrategy || st.A == nil {
		return o
	}
	o.A = *st.A
	o.Spread = st.Spread
	if o.Spread == "" {
		o.Spread = st.Config.Defaults().Spread
	}
	return o
}

// PSAChoices are the interpretation choices of PCM journal Algorithm 1
// (pathsel's psa doc says what each value reads the paper as): C of Eq. 21
// once or every round, the window's scope, and forced re-sampling of a path
// with no sample left in the window. Unset fields keep pathsel's defaults,
// the paper's reading.
type PSAChoices struct {
	C        pathsel.CParam `yaml:"c"`
	Scope    pathsel.Scope  `yaml:"window_scope"`
	Resample *bool          `yaml:"resample"`
}

// applyTo fills st's unset choices when st is a PSA.
func (p PSAChoices) applyTo(st *StrategySpec) {
	if st.Strategy != pathsel.PSA {
		return
	}
	if st.C.Mode == "" {
		st.C = p.C
	}
	if st.Scope == "" {
		st.Scope = p.Scope
	}
	if st.Resample == nil {
		st.Resample = p.Resample
	}
}

// StrategySpec is one strategy under test; Label names it in outputs
// (default: the strategy name).
type StrategySpec struct {
	Label          string `yaml:"label"`
	pathsel.Config `yaml:",inline"`
}

// RoundEvent changes a path from a round on: Set patches its parameters
// (scenario.Patch), for ForRounds rounds (a spike, then the path returns to
// what it was) or for good (ForRounds 0). Remove instead takes the path
// away, as when its interface goes down: strategies are told (RemovePath)
// and no longer see it, and after ForRounds rounds it comes back with no
// history (AddPath). Remove is for mode offline; on a real network an
// outage is a patch such as {both: {loss: 1}}.
type RoundEvent struct {
	Round     int             `yaml:"round"`
	Path      string          `yaml:"path"`
	Set       *scenario.Patch `yaml:"set"`
	Remove    bool            `yaml:"remove"`
	ForRounds int             `yaml:"for_rounds"`
}

// Figures tunes the figures.
type Figures struct {
	// ChosenRounds limits the chosen-path figure to the first N rounds
	// (PCM Fig. 14 shows 50, Fig. 16 200); 0 shows all.
	ChosenRounds int `yaml:"chosen_rounds"`
}

// Load reads, resolves and validates an experiment file from fsys; the
// scenario and trace it names are read relative to it.
func Load(fsys fs.FS, name string) (*Spec, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	var s Spec
	if err := yamlfile.Decode(name, data, &s); err != nil {
		return nil, err
	}
	s.setDefaults()
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dir := path.Dir(name)
	if s.Scenario != "" {
		scName := path.Join(dir, s.Scenario)
		if s.scenario, err = scenario.Load(fsys, scName); err != nil {
			return nil, err
		}
		if s.Mode != ModeTrace {
			if err := s.scenarioEvents(); err != nil {
				return nil, fmt.Errorf("%s: scenario %s: %w", name, scName, err)
			}
		}
	}
	if s.Mode == ModeTrace {
		traceName := path.Join(dir, s.Trace)
		data, err := fs.ReadFile(fsys, traceName)
		if err != nil {
			return nil, fmt.Errorf("%s: trace: %w", name, err)
		}
		if s.trace, err = parseTrace(traceName, data); err != nil {
			return nil, err
		}
		if s.Rounds == 0 {
			s.Rounds = len(s.trace.rows)
		}
	}
	if err := s.resolve(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// scenarioEvents checks that the scenario sets no field this mode's
// backend cannot model (scenario.FieldTable) and translates its timed
// events into round events, in front of the experiment's own.
func (s *Spec) scenarioEvents() error {
	backend := scenario.BackendOffline
	if s.Mode == ModeReal {
		backend = scenario.BackendReal
	}
	if err := s.scenario.Check(backend); err != nil {
		return err
	}
	evs := s.scenario.Events
	if len(evs) == 0 {
		return nil
	}
	spr := s.SecondsPerRound
	if spr == 0 {
		return fmt.Errorf("events[0].at_s: mode %s counts rounds, not seconds: set the experiment's seconds_per_round to translate the scenario's %d timed events (docs/scenario-fields.md)", s.Mode, len(evs))
	}
	// Walk the events in order over a copy of the paths, so an outage's
	// end restores the loss the path had when it began (and only the loss:
	// a delay step during the outage stays).
	paths := map[string]scenario.Path{}
	for _, p := range s.scenario.Paths {
		paths[p.Name] = p
	}
	var out []RoundEvent
	for i, e := range evs {
		round := int(math.Floor(e.AtS/spr + 1e-9)) // 15.2/0.1 is 151.99…
		if e.OutageS <= 0 {
			p, err := e.Set.Apply(paths[e.Path])
			if err != nil {
				return fmt.Errorf("events[%d]: %w", i, err)
			}
			paths[e.Path] = p
			if round < s.Rounds {
				out = append(out, RoundEvent{Round: round, Path: e.Path, Set: e.Set})
			}
			continue
		}
		p := paths[e.Path]
		if p.Up.GilbertElliott != nil || p.Down.GilbertElliott != nil {
			return fmt.Errorf("events[%d].outage_s: path %s has gilbert_elliott loss, which an outage (loss 1) cannot override offline", i, e.Path)
		}
		end := round + max(1, int(math.Ceil(e.OutageS/spr-1e-9)))
		restore, err := scenario.ParsePatch(fmt.Sprintf("{up: {loss: %v}, down: {loss: %v}}", p.Up.Loss, p.Down.Loss))
		if err != nil {
			return err
		}
		if round < s.Rounds {
			out = append(out, RoundEvent{Round: round, Path: e.Path, Set: outagePatch})
		}
		if end < s.Rounds {
			out = append(out, RoundEvent{Round: end, Path: e.Path, Set: restore})
		}
	}
	s.Events = append(out, s.Events...)
	return nil
}

// outagePatch is an outage as the TCT model and the emulator's control API
// see one: everything lost both ways.
var outagePatch = func() *scenario.Patch {
	p, err := scenario.ParsePatch("{both: {loss: 1}}")
	if err != nil {
		panic(err) // a constant
	}
	return p
}()

// maxRounds bounds rounds: a run's tables hold rounds × paths samples
// per seed (10^7 rounds of 8 paths are 640 MB), far past any experiment.
const maxRounds = 10_000_000

// The modes.
const (
	ModeOffline = "offline"
	ModeTrace   = "trace"
	ModeReal    = "real"
)

// The samples.
const (
	SampleTCT        = "tct"
	SampleTCTPerByte = "tct_per_byte"
)

func (s *Spec) setDefaults() {
	if s.Mode == "" {
		s.Mode = ModeOffline
	}
	if s.Sample == "" {
		s.Sample = SampleTCT
	}
	if s.Seeds == 0 {
		s.Seeds = 1
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Task.SizeBytes == 0 && len(s.Task.Sizes) == 0 {
		s.Task.SizeBytes = 5 * 1024
	}
	s.Model.setDefaults()
	s.Probe.setDefaults()
	if s.Real.TimeoutMs == 0 {
		s.Real.TimeoutMs = 10000
	}
	for i := range s.Strategies {
		if s.Strategies[i].Label == "" {
			s.Strategies[i].Label = string(s.Strategies[i].Strategy)
		}
		s.PSA.applyTo(&s.Strategies[i])
	}
}

// validate checks the fields that do not need the scenario.
func (s *Spec) validate() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("name: missing")
	case s.Mode != ModeOffline && s.Mode != ModeTrace && s.Mode != ModeReal:
		return fmt.Errorf("mode: %q is not offline, trace or real", s.Mode)
	case s.Mode != ModeTrace && s.Scenario == "":
		return fmt.Errorf("scenario: missing (mode %s needs one)", s.Mode)
	case !finitePositive(s.Real.TimeoutMs):
		return fmt.Errorf("real.timeout_ms: %v must be a finite number > 0", s.Real.TimeoutMs)
	case s.Mode == ModeTrace && s.Trace == "":
		return fmt.Errorf("trace: missing (mode trace needs one)")
	case s.Mode != ModeTrace && s.Rounds == 0:
		return fmt.Errorf("rounds: missing (or 0): give the number of requests each run makes, 1 to %d", maxRounds)
	case s.Mode != ModeTrace && s.Rounds < 1, s.Rounds < 0, s.Rounds > maxRounds:
		return fmt.Errorf("rounds: %d is outside [1, %d]", s.Rounds, maxRounds)
	case s.Sample != SampleTCT && s.Sample != SampleTCTPerByte:
		return fmt.Errorf("sample: %q is not tct or tct_per_byte", s.Sample)
	case s.Seeds < 1 || s.Seeds > 10000:
		return fmt.Errorf("seeds: %d must be in [1, 10000]", s.Seeds)
	case s.Task.SizeBytes < 0:
		return fmt.Errorf("task.size_bytes: %d is negative", s.Task.SizeBytes)
	case s.Objective.A != nil && !(*s.Objective.A >= 0 && *s.Objective.A <= 1):
		return fmt.Errorf("objective.a: %v is outside [0, 1]", *s.Objective.A)
	case s.Objective.Spread != "" && s.Objective.Spread != pathsel.Var && s.Objective.Spread != pathsel.Std:
		return fmt.Errorf("objective.spread: %q is not var or std", s.Objective.Spread)
	case len(s.Strategies) == 0:
		return fmt.Errorf("strategies: at least one is needed")
	case !(s.SecondsPerRound >= 0) || math.IsInf(s.SecondsPerRound, 1):
		return fmt.Errorf("seconds_per_round: %v must be a finite number ≥ 0", s.SecondsPerRound)
	case s.Figures.ChosenRounds < 0:
		return fmt.Errorf("figures.chosen_rounds: %d is negative", s.Figures.ChosenRounds)
	}
	for i, size := range s.Task.Sizes {
		if size < 1 {
			return fmt.Errorf("task.sizes[%d]: %d must be ≥ 1 byte", i, size)
		}
	}
	return s.validateParts()
}

// validateParts checks the model, the probe budget and the strategies.
func (s *Spec) validateParts() error {
	if err := s.Model.validate(); err != nil {
		return fmt.Errorf("model.%w", err)
	}
	if err := s.Probe.validate(); err != nil {
		return err
	}
	psa := pathsel.Config{Strategy: pathsel.PSA, C: s.PSA.C, Scope: s.PSA.Scope, Resample: s.PSA.Resample}
	if err := psa.Validate(); err != nil {
		return fmt.Errorf("psa.%w", err)
	}
	if s.Mode == ModeReal && !slices.ContainsFunc(s.Strategies, func(st StrategySpec) bool { return st.Strategy == pathsel.Polling }) {
		return fmt.Errorf("strategies: mode real needs a polling strategy: its rounds measure every path, and the best of them in hindsight is the real-side oracle")
	}
	labels := map[string]bool{}
	for i, st := range s.Strategies {
		if labels[st.Label] {
			return fmt.Errorf("strategies[%d].label: duplicate %q", i, st.Label)
		}
		labels[st.Label] = true
		if err := st.Config.Validate(); err != nil {
			return fmt.Errorf("strategies[%d].%w", i, err)
		}
	}
	return nil
}

// resolve checks what needs the scenario or trace: path names in events.
func (s *Spec) resolve() error {
	names := s.PathNames()
	for i, e := range s.Events {
		field := fmt.Sprintf("events[%d]", i)
		switch {
		case s.Mode == ModeTrace:
			return fmt.Errorf("%s: round events apply to mode offline; a trace already holds what happened", field)
		case e.Round < 0 || e.Round >= s.Rounds:
			return fmt.Errorf("%s.round: %d is outside [0, %d)", field, e.Round, s.Rounds)
		case e.ForRounds < 0:
			return fmt.Errorf("%s.for_rounds: %d is negative", field, e.ForRounds)
		case e.Set == nil && !e.Remove:
			return fmt.Errorf("%s.set: missing", field)
		case e.Set != nil && e.Remove:
			return fmt.Errorf("%s: set and remove exclude each other", field)
		case e.Remove && s.Mode != ModeOffline:
			return fmt.Errorf("%s.remove: only mode offline removes paths; on a real network use set: {both: {loss: 1}}", field)
		}
		if indexOf(names, e.Path) < 0 {
			return fmt.Errorf("%s.path: no path named %q", field, e.Path)
		}
	}
	if len(s.Events) > 0 { // apply every event once, in order, to check it
		sched := NewSchedule(s.scenario, s.Events)
		last := 0 // the last round at which anything changes
		for _, e := range s.Events {
			last = max(last, e.Round+e.ForRounds)
		}
		for t := range min(s.Rounds, last+1) {
			if _, _, err := sched.At(t); err != nil {
				return fmt.Errorf("events: %w", err)
			}
			if !slices.Contains(sched.gone, false) {
				return fmt.Errorf("events: round %d removes every path", t)
			}
		}
	}
	if s.Mode == ModeTrace && s.Rounds > len(s.trace.rows) {
		return fmt.Errorf("rounds: %d exceeds the trace's %d rounds", s.Rounds, len(s.trace.rows))
	}
	if s.Mode == ModeTrace && s.Sample == SampleTCTPerByte && len(s.Task.Sizes) > 0 {
		return fmt.Errorf("task.sizes: a trace holds samples of fixed tasks; mixed sizes need mode offline")
	}
	return nil
}

// PathNames are the paths in order; PathID i is PathNames()[i].
func (s *Spec) PathNames() []string {
	if s.trace != nil {
		return s.trace.paths
	}
	names := make([]string, len(s.scenario.Paths))
	for i, p := range s.scenario.Paths {
		names[i] = p.Name
	}
	return names
}

// ScenarioFile returns the loaded scenario (nil in trace mode without one).
func (s *Spec) ScenarioFile() *scenario.Scenario { return s.scenario }

func indexOf(names []string, name string) int {
	for i, n := range names {
		if n == name {
			return i
		}
	}
	return -1
}

func finitePositive(v float64) bool { return v > 0 && !math.IsInf(v, 1) }
