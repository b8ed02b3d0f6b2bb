// Package scenario describes the networks hetquic runs over: a set of paths,
// each with per-direction delay, jitter, loss and rate, and timed events that
// change them. One scenario file feeds the offline evaluator, the emulator and
// the simulator, so the same experiment can run all three ways.
package scenario

import (
	"fmt"
	"io/fs"
	"math"
	"path"
	"strings"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// Scenario is a set of network paths and the events that change them.
type Scenario struct {
	Name        string  `yaml:"name"`
	Description string  `yaml:"description"`
	Paths       []Path  `yaml:"paths"`
	Events      []Event `yaml:"events"`

	// fsys and dir locate the file the scenario came from, so trace files
	// named in it resolve relative to it (also inside an embedded FS).
	fsys fs.FS
	dir  string
}

// Path is one access network (an interface of a multi-homed host).
type Path struct {
	Name string `yaml:"name"`
	Up   Link   `yaml:"up"`   // client → server
	Down Link   `yaml:"down"` // server → client
}

// Link is one direction of a path. Zero values mean "no impairment".
type Link struct {
	// DelayMs is the one-way base delay.
	DelayMs float64 `yaml:"delay_ms"`
	// JitterMs is the standard deviation of the extra delay J ≥ 0 added to
	// the base delay, drawn from JitterDist: the delay never goes below
	// DelayMs, and its mean is MeanDelayMs.
	JitterMs   float64 `yaml:"jitter_ms"`
	JitterDist string  `yaml:"jitter_dist"` // normal (default), uniform, pareto
	// Reorder lets a packet with less jitter overtake an earlier one, as netem
	// does. Off by default: real links keep order, and jitter that reorders
	// makes QUIC see spurious loss.
	Reorder bool `yaml:"reorder"`

	// Loss is the Bernoulli probability that a packet is dropped.
	Loss float64 `yaml:"loss"`
	// GilbertElliott, when set, replaces Loss with bursty two-state loss.
	GilbertElliott *GilbertElliott `yaml:"gilbert_elliott"`
	// LossTrace, when set, names a file of 0/1 per packet (1 = drop), cycled.
	LossTrace string `yaml:"loss_trace"`

	// RateMbps is a constant bottleneck rate; 0 means unlimited.
	RateMbps float64 `yaml:"rate_mbps"`
	// RateTrace, when set, names a mahimahi trace: each line is a ms timestamp
	// at which one 1500-byte delivery opportunity occurs; the trace repeats.
	RateTrace string `yaml:"rate_trace"`
	// QueuePackets and QueueBytes bound the drop-tail queue in front of the
	// rate limiter; both 0: linkmodel.DefaultQueuePackets (1000 packets,
	// Linux's txqueuelen), in every backend that queues.
	QueuePackets int `yaml:"queue_packets"`
	QueueBytes   int `yaml:"queue_bytes"`
}

// GilbertElliott is the classic two-state bursty loss model.
type GilbertElliott struct {
	PGoodBad float64 `yaml:"p_good_bad"` // P(good → bad) per packet
	PBadGood float64 `yaml:"p_bad_good"` // P(bad → good) per packet
	LossGood float64 `yaml:"loss_good"`  // loss probability in the good state
	LossBad  float64 `yaml:"loss_bad"`   // loss probability in the bad state
}

// MeanLoss is the stationary loss probability of the model.
func (g GilbertElliott) MeanLoss() float64 {
	if g.PGoodBad+g.PBadGood == 0 {
		return g.LossGood
	}
	bad := g.PGoodBad / (g.PGoodBad + g.PBadGood)
	return (1-bad)*g.LossGood + bad*g.LossBad
}

// MeanDelayMs is the link's mean one-way delay: the base delay plus the
// mean of the extra delay J ≥ 0 (see Jitter).
func (l Link) MeanDelayMs() float64 { return l.DelayMs + l.Jitter().Mean() }

// MeanLoss is the long-run loss probability of the link (Bernoulli or
// Gilbert-Elliott; a loss trace counts as unknown here and gives Loss).
func (l Link) MeanLoss() float64 {
	if l.GilbertElliott != nil {
		return l.GilbertElliott.MeanLoss()
	}
	return l.Loss
}

// Event changes a path at a time: either Set (a patch of its parameters) or an
// outage of OutageS seconds (the path delivers nothing, then resumes).
type Event struct {
	AtS     float64 `yaml:"at_s"`
	Path    string  `yaml:"path"`
	Set     *Patch  `yaml:"set"`
	OutageS float64 `yaml:"outage_s"`
}

// Load reads and validates a scenario file from fsys.
func Load(fsys fs.FS, name string) (*Scenario, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load scenario: %w", err)
	}
	return Parse(fsys, name, data)
}

// Parse decodes and validates scenario text; name is the file it came from
// (used in errors and to resolve trace files).
func Parse(fsys fs.FS, name string, data []byte) (*Scenario, error) {
	var s Scenario
	if err := yamlfile.Decode(name, data, &s); err != nil {
		return nil, err
	}
	s.fsys, s.dir = fsys, path.Dir(name)
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := s.checkTraces(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// ReadFile reads a file named in the scenario (a trace), relative to the
// scenario file.
func (s *Scenario) ReadFile(rel string) ([]byte, error) {
	if s.fsys == nil {
		return nil, fmt.Errorf("scenario %q was not loaded from a file; cannot read %q", s.Name, rel)
	}
	return fs.ReadFile(s.fsys, path.Join(s.dir, rel))
}

// PathIndex returns the index of the named path, or -1.
func (s *Scenario) PathIndex(name string) int {
	for i, p := range s.Paths {
		if p.Name == name {
			return i
		}
	}
	return -1
}

// Validate checks every field; the error names the field and the problem.
func (s *Scenario) Validate() error {
	if s.Name == "" {
		return fmt.Errorf("name: missing")
	}
	if len(s.Paths) == 0 {
		return fmt.Errorf("paths: at least one path is needed")
	}
	seen := map[string]bool{}
	for i, p := range s.Paths {
		field := fmt.Sprintf("paths[%d]", i)
		if err := validName(p.Name); err != nil {
			return fmt.Errorf("%s.name: %w", field, err)
		}
		if seen[p.Name] {
			return fmt.Errorf("%s.name: duplicate path name %q", field, p.Name)
		}
		seen[p.Name] = true
		if err := p.Up.validate(field + ".up"); err != nil {
			return err
		}
		if err := p.Down.validate(field + ".down"); err != nil {
			return err
		}
	}
	for i, e := range s.Events {
		field := fmt.Sprintf("events[%d]", i)
		if err := nonNegative(field+".at_s", e.AtS); err != nil {
			return err
		}
		pi := s.PathIndex(e.Path)
		if pi < 0 {
			return fmt.Errorf("%s.path: no path named %q", field, e.Path)
		}
		switch {
		case e.Set != nil && e.OutageS != 0:
			return fmt.Errorf("%s: give either set or outage_s, not both", field)
		case e.Set != nil:
			if _, err := e.Set.Apply(s.Paths[pi]); err != nil {
				return fmt.Errorf("%s.set.%w", field, err)
			}
		case e.OutageS > 0 && !math.IsInf(e.OutageS, 0):
		case e.OutageS != 0:
			return fmt.Errorf("%s.outage_s: %v must be a positive number of seconds", field, e.OutageS)
		default:
			return fmt.Errorf("%s: needs set or outage_s", field)
		}
	}
	return nil
}

func (l Link) validate(field string) error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"delay_ms", l.DelayMs}, {"jitter_ms", l.JitterMs}, {"rate_mbps", l.RateMbps}} {
		if err := nonNegative(field+"."+f.name, f.v); err != nil {
			return err
		}
	}
	switch l.JitterDist {
	case "", "normal", "uniform", "pareto":
	default:
		return fmt.Errorf("%s.jitter_dist: unknown distribution %q (want normal, uniform or pareto)", field, l.JitterDist)
	}
	if err := probability(field+".loss", l.Loss); err != nil {
		return err
	}
	if g := l.GilbertElliott; g != nil {
		for _, f := range []struct {
			name string
			v    float64
		}{{"p_good_bad", g.PGoodBad}, {"p_bad_good", g.PBadGood}, {"loss_good", g.LossGood}, {"loss_bad", g.LossBad}} {
			if err := probability(field+".gilbert_elliott."+f.name, f.v); err != nil {
				return err
			}
		}
	}
	if n := btoi(l.Loss > 0) + btoi(l.GilbertElliott != nil) + btoi(l.LossTrace != ""); n > 1 {
		return fmt.Errorf("%s: give at most one of loss, gilbert_elliott and loss_trace", field)
	}
	if l.RateMbps > 0 && l.RateTrace != "" {
		return fmt.Errorf("%s: give rate_mbps or rate_trace, not both", field)
	}
	if l.QueuePackets < 0 {
		return fmt.Errorf("%s.queue_packets: %d is negative", field, l.QueuePackets)
	}
	if l.QueueBytes < 0 {
		return fmt.Errorf("%s.queue_bytes: %d is negative", field, l.QueueBytes)
	}
	return nil
}

func validName(name string) error {
	if name == "" {
		return fmt.Errorf("missing")
	}
	// Path names become interface names in the lab (at most 15 bytes on
	// Linux) and column values in CSV files.
	if len(name) > 15 || strings.ContainsAny(name, " \t,/\"'") {
		return fmt.Errorf("%q must be 1-15 characters without spaces, commas, quotes or slashes", name)
	}
	return nil
}

func nonNegative(field string, v float64) error {
	if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return fmt.Errorf("%s: %v must be a finite number ≥ 0", field, v)
	}
	return nil
}

func probability(field string, v float64) error {
	if math.IsNaN(v) || v < 0 || v > 1 {
		return fmt.Errorf("%s: %v is outside [0, 1]", field, v)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
