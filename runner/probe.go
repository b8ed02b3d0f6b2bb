package runner

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/hetquic/hetquic/pathsel"
)

// Probe is the budget of out-of-band probes of idle paths: on QUIC a
// PATH_CHALLENGE on an already validated path that carries no request
// (quic-go's Path.Probe), answered by a PATH_RESPONSE one round trip later.
// A probe costs no task time; its RTT goes to the strategy as a side
// observation (pathsel.ProbeObserver: only strategy hetquic learns from
// it, the others are the papers' and never probe).
//
// The run follows the library's schedule (pathsel.ProbeSchedule) on its
// own clock, the user's wait of every round added up (back-to-back
// requests, as a real client makes them): after the first round, when the
// run knows its current path, a probe of every idle path (the start-up
// sweep); then a probe falls due every 1/PerSecond seconds and goes to the
// next idle path in turn. A probe answered later (mode real) is told to the
// strategy as under way (ProbeUnderWay) until its answer comes back. A
// quic-go server tracks at most WorkingSet client paths beside the active
// one; with more idle paths the probes rotate through them, and each steady
// probe of a path that has left the tracked set opens it again (a fresh
// connection ID and a validation): in the model it takes two probe slots.
// The sweep's probes take none: they are the start's burst, beside the
// budget, as the library's.
type Probe struct {
	// PerSecond is the probes per second over all idle paths (0: none).
	PerSecond float64 `yaml:"per_second"`
	// WorkingSet is how many idle paths are tracked at once (default 3,
	// quic-go's limit of client paths beside the active one).
	WorkingSet int `yaml:"working_set"`
}

// maxProbesPerSecond bounds per_second: a probe is a packet each way, and
// thousands a second would be a flood, not a probe.
const maxProbesPerSecond = 1000

func (p *Probe) setDefaults() {
	if p.WorkingSet == 0 {
		p.WorkingSet = 3
	}
}

func (p *Probe) validate() error {
	switch {
	case !(p.PerSecond >= 0 && p.PerSecond <= maxProbesPerSecond):
		return fmt.Errorf("probe.per_second: %v is outside [0, %d]", p.PerSecond, maxProbesPerSecond)
	case p.WorkingSet < 1:
		return fmt.Errorf("probe.working_set: %d must be ≥ 1", p.WorkingSet)
	}
	return nil
}

// ProbeEnv is an Env that can probe an idle path: the path's RTT sample
// at round t in ms, +Inf when the probe was lost (an outage loses them
// all). ok false: the probe is under way and says nothing yet (a real
// probe's answer comes back while requests go on; it never delays one).
type ProbeEnv interface {
	Probe(t int, p pathsel.PathID) (rttMs float64, ok bool)
}

// ProbeAnswerer is a ProbeEnv whose probes are answered later (mode real:
// Probe asks and returns ok false); the run collects the answers that came
// back after every round, whichever paths they are of.
type ProbeAnswerer interface {
	Answers() []ProbeAnswer
}

// ProbeAnswer is one probe's answer: path P measured RTTms (+Inf: lost).
type ProbeAnswer struct {
	P     pathsel.PathID
	RTTms float64
}

// ProbeCoster is a ProbeEnv that counts what its probes cost on the wire:
// bytes sent and received since Begin.
type ProbeCoster interface {
	ProbeBytes() uint64
}

// prober runs one run's probe schedule.
type prober struct {
	env     ProbeEnv
	sel     pathsel.ProbeObserver
	sched   *pathsel.ProbeSchedule
	clock   float64 // ms: the user's wait so far
	swept   bool    // the start-up sweep was sent
	ws      int
	tracked []int // the idle paths tracked, oldest first
	sent    int   // probes sent
}

// newProber returns nil when the run does not probe: no budget, an Env
// that cannot, or a strategy that does not learn from probes (one that
// cannot, or the default with probes: false, the request-only ablation).
func newProber(s *Spec, st StrategySpec, env Env, sel pathsel.Selector) *prober {
	pe, ok := env.(ProbeEnv)
	po, ok2 := sel.(pathsel.ProbeObserver)
	if !ok || !ok2 || s.Probe.PerSecond == 0 || !*st.Config.Defaults().Probes {
		return nil
	}
	return &prober{env: pe, sel: po, sched: pathsel.NewProbeSchedule(s.Probe.PerSecond), ws: s.Probe.WorkingSet}
}

// after advances the clock by round t's wait, hands the strategy the
// answers that came back for paths still present, and sends the start-up
// sweep (after the first round) and the probes that fell due, each to the
// next idle path present (not current).
func (p *prober) after(t int, waitMs float64, current int, present []bool) error {
	p.clock += waitMs
	if err := p.collect(present); err != nil {
		return err
	}
	idle := func(q int) bool { return q != current && present[q] }
	if !p.swept {
		p.swept = true
		for _, q := range p.sched.Sweep(len(present), idle) {
			p.track(q)
			if err := p.send(t, q); err != nil {
				return err
			}
		}
	}
	for {
		if _, ok := p.sched.Due(p.clock); !ok {
			return nil
		}
		q := p.sched.Next(len(present), idle)
		if q < 0 {
			continue
		}
		if !p.track(q) {
			p.sched.Skip() // opening the path again takes a slot
		}
		if err := p.send(t, q); err != nil {
			return err
		}
	}
}

// collect hands the strategy the answers that came back (mode real) for
// paths still present.
func (p *prober) collect(present []bool) error {
	pa, ok := p.env.(ProbeAnswerer)
	if !ok {
		return nil
	}
	for _, a := range pa.Answers() {
		if int(a.P) >= len(present) || !present[a.P] {
			// Asked while the path was there; the run has taken it
			// out of the strategy since (resting, removed): the
			// strategy no longer knows it, and the answer is stale.
			continue
		}
		if err := p.sel.ObserveProbe(a.P, a.RTTms); err != nil {
			return err
		}
	}
	return nil
}

// send probes path q: an answer at once goes to the strategy, one that
// comes later is told as under way.
func (p *prober) send(t, q int) error {
	p.sent++
	rtt, ok := p.env.Probe(t, pathsel.PathID(q))
	if !ok {
		return p.sel.ProbeUnderWay(pathsel.PathID(q), true)
	}
	return p.sel.ObserveProbe(pathsel.PathID(q), rtt)
}

// track puts path q into the tracked set and says false when that evicted
// another path (a rotation).
func (p *prober) track(q int) bool {
	if slices.Contains(p.tracked, q) {
		return true
	}
	p.tracked = append(p.tracked, q)
	if len(p.tracked) > p.ws {
		p.tracked = p.tracked[1:]
		return false
	}
	return true
}

// probeRTT draws one probe of a path: one round trip, lost with the
// probability that the challenge or its response is.
func (t task) probeRTT(rng *rand.Rand) float64 {
	lost := 1 - (1-t.lossUp)*(1-t.lossDn)
	if t.outage || rng.Float64() < lost {
		return math.Inf(1)
	}
	return max(t.rtt(rng), 1e-6)
}
