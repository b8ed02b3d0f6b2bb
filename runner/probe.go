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
// The run keeps its own clock, the user's wait of every round added up
// (back-to-back requests, as a real client makes them); a probe falls due
// every 1/PerSecond seconds on it and goes to the next idle path in turn.
// A quic-go server tracks at most WorkingSet client paths beside the active
// one; with more idle paths the probes rotate through them, and each probe
// of a path that has left the tracked set opens it again (a fresh
// connection ID and a validation): in the model it takes two probe slots.
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
	every   float64 // ms between probe slots
	clock   float64 // ms: the user's wait so far
	next    float64 // the clock of the next slot
	ws      int
	tracked []int // the idle paths tracked, oldest first
	turn    int   // the next path in turn
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
	every := 1000 / s.Probe.PerSecond
	return &prober{env: pe, sel: po, every: every, next: every, ws: s.Probe.WorkingSet}
}

// after advances the clock by round t's wait, hands the strategy the
// answers that came back for paths still present, and sends the probes
// that fell due, each to the next idle path present (not current).
func (p *prober) after(t int, waitMs float64, current int, present []bool) error {
	p.clock += waitMs
	if pa, ok := p.env.(ProbeAnswerer); ok {
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
	}
	for p.next <= p.clock {
		q := p.nextPath(current, present)
		if q < 0 {
			p.next = p.clock + p.every
			return nil
		}
		p.next += p.every
		if !p.track(q) {
			p.next += p.every // opening the path again takes a slot
		}
		p.sent++
		rtt, ok := p.env.Probe(t, pathsel.PathID(q))
		if !ok {
			continue
		}
		if err := p.sel.ObserveProbe(pathsel.PathID(q), rtt); err != nil {
			return err
		}
	}
	return nil
}

// nextPath is the next idle path in turn, or −1 when there is none.
func (p *prober) nextPath(current int, present []bool) int {
	k := len(present)
	for range k {
		q := p.turn % k
		p.turn = q + 1
		if q != current && present[q] {
			return q
		}
	}
	return -1
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
