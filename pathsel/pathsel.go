// Package pathsel decides which path carries the next task and learns from the
// task completion times it observes. It implements PCM-QUIC's path selection
// algorithm (PSA, PCM journal §4, Algorithm 1) and the baselines it is
// compared with, behind one small interface.
//
// The package is pure: no I/O, no clocks, no global randomness. Callers
// measure samples with their own clock and pass a seeded *rand.Rand, so the
// offline evaluator is reproducible bit for bit, and the real client and the
// simulator make the same decisions from the same samples.
//
// Units: samples are whatever the caller measures — task completion time in
// ms (PCM Eq. 3) or per byte (Eq. 4). Everything is in that unit except PSA's
// paper-faithful "var" spread, which is in its square; see Spread.
package pathsel

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// PathID names a path to a selector. The caller chooses the values (an index
// into its own path table, say); a selector never invents one.
type PathID int

// Selector chooses a path per task and learns from observed samples.
// A Selector is not safe for concurrent use.
type Selector interface {
	// Choose returns the path for the next task. It fails only with
	// ErrNoPaths. A path that has no sample in the selector's memory is
	// returned first (every path is tried once, and again when its samples
	// have aged out of the window).
	Choose() (PathID, error)
	// Observe records one completed task on path p. sample must be a finite
	// number > 0. The path need not be the one Choose returned (a real
	// client may have failed over).
	Observe(p PathID, sample float64) error
	// AddPath makes p available from the next Choose, with no history.
	AddPath(p PathID) error
	// RemovePath forgets p; the other paths keep their statistics.
	RemovePath(p PathID) error
}

// ProbeObserver is a Selector that also learns from out-of-band probes of
// idle paths (on QUIC a PATH_CHALLENGE on a validated path that carries no
// request): side observations of a path's round-trip time, which is not a
// task sample (a task's time also depends on rate and loss). Only the
// default (strategy hetquic) is one; a caller probes for the others in vain.
type ProbeObserver interface {
	Selector
	// ObserveProbe records a probe of path p that took rttMs (> 0), or
	// +Inf when it timed out: a timeout is information (the path may be
	// down), not an error.
	ObserveProbe(p PathID, rttMs float64) error
	// ProbeUnderWay says that a probe of path p was sent (on true) and
	// its answer will come through ObserveProbe, or that it will not
	// come (on false: the probes stopped). A selector may wait for the
	// answer before it spends a request on a path it knows nothing of.
	ProbeUnderWay(p PathID, on bool) error
}

// ProbeAsker is a ProbeObserver that may ask for a path's next probe
// before its turn in the caller's schedule: when a probe leaves the
// selector one probe short of a decision it would act on. The selector
// names the delay; the caller, which owns the clock and the probes, sends
// the probe (or not: it is a wish, and the path's turn still comes).
type ProbeAsker interface {
	ProbeObserver
	// ProbeSoon says whether the probe of path p that ObserveProbe last
	// recorded asks for the next probe of p early, and if so how long
	// after that probe's answer, in ms.
	ProbeSoon(p PathID) (afterMs float64, ok bool)
}

var (
	// ErrNoPaths is returned by Choose when no path is available.
	ErrNoPaths = errors.New("pathsel: no paths")
	// ErrUnknownPath is returned for a path that was never added or was removed.
	ErrUnknownPath = errors.New("pathsel: unknown path")
	// ErrDuplicatePath is returned by AddPath for a path already present.
	ErrDuplicatePath = errors.New("pathsel: path already added")
	// ErrBadSample is returned by Observe for a sample that is not finite and > 0.
	ErrBadSample = errors.New("pathsel: sample must be finite and > 0")
)

func checkSample(x float64) error {
	if !(x > 0) || math.IsInf(x, 1) {
		return fmt.Errorf("%w (got %v)", ErrBadSample, x)
	}
	return nil
}

// New builds the selector cfg describes. rng drives every random choice
// (ε-greedy, random, Thompson); it may be nil for deterministic strategies.
// The oracle needs knowledge of the truth and is built with NewOracle.
func New(cfg Config, rng *rand.Rand) (Selector, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	needRand := cfg.Strategy == Random || cfg.Strategy == EpsGreedy || cfg.Strategy == Thompson || cfg.Strategy == DThompson
	if needRand && rng == nil {
		return nil, fmt.Errorf("pathsel: strategy %s needs a random source", cfg.Strategy)
	}
	switch cfg.Strategy {
	case PSA:
		return newPSA(cfg), nil
	case Hetquic:
		return newAdaptive(cfg), nil
	case Polling:
		return &polling{}, nil
	case Random:
		return &random{rng: rng}, nil
	case Fixed:
		return &fixed{}, nil
	case EpsGreedy:
		return newEpsGreedy(cfg, rng), nil
	case UCB1, SWUCB:
		return newUCB(cfg), nil
	case DUCB:
		return newDUCB(cfg), nil
	case Thompson:
		return newThompson(cfg, rng), nil
	case DThompson:
		return newDThompson(cfg, rng), nil
	case UCB2:
		return newUCB2(cfg), nil
	case Oracle:
		return nil, fmt.Errorf("pathsel: the oracle needs the true best path; build it with NewOracle")
	}
	return nil, fmt.Errorf("pathsel: unknown strategy %q", cfg.Strategy)
}

// pathList is the ordered set of paths of the stateless strategies.
type pathList []PathID

func (l *pathList) add(p PathID) error {
	if l.index(p) >= 0 {
		return fmt.Errorf("%w: %d", ErrDuplicatePath, p)
	}
	*l = append(*l, p)
	return nil
}

func (l *pathList) remove(p PathID) error {
	i := l.index(p)
	if i < 0 {
		return fmt.Errorf("%w: %d", ErrUnknownPath, p)
	}
	*l = append((*l)[:i], (*l)[i+1:]...)
	return nil
}

func (l pathList) index(p PathID) int {
	for i, q := range l {
		if q == p {
			return i
		}
	}
	return -1
}

func (l pathList) observe(p PathID, x float64) error {
	if l.index(p) < 0 {
		return fmt.Errorf("%w: %d", ErrUnknownPath, p)
	}
	return checkSample(x)
}

// pathState is what a per-path state of a selector embeds: its PathID, so
// that the helpers below find it.
type pathState struct{ id PathID }

func (p *pathState) pathID() PathID { return p.id }

type identified interface{ pathID() PathID }

// indexOf returns the index of path id in ps, or −1.
func indexOf[T identified](ps []T, id PathID) int {
	return slices.IndexFunc(ps, func(p T) bool { return p.pathID() == id })
}

// addState appends the state of a new path, or fails for a known one.
func addState[T identified](ps []T, p T) ([]T, error) {
	if indexOf(ps, p.pathID()) >= 0 {
		return ps, fmt.Errorf("%w: %d", ErrDuplicatePath, p.pathID())
	}
	return append(ps, p), nil
}

// removeState deletes path id's state and returns it.
func removeState[T identified](ps []T, id PathID) ([]T, T, error) {
	i := indexOf(ps, id)
	if i < 0 {
		var zero T
		return ps, zero, fmt.Errorf("%w: %d", ErrUnknownPath, id)
	}
	p := ps[i]
	return slices.Delete(ps, i, i+1), p, nil
}

// observed returns path id's state for a sample x, checking both.
func observed[T identified](ps []T, id PathID, x float64) (T, error) {
	var zero T
	i := indexOf(ps, id)
	if i < 0 {
		return zero, fmt.Errorf("%w: %d", ErrUnknownPath, id)
	}
	if err := checkSample(x); err != nil {
		return zero, err
	}
	return ps[i], nil
}
