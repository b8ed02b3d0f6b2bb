package peekaboo

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// Path is what the scheduler sees of one path when it is asked to decide.
// Units: bytes and seconds; the scheduler turns them into MB/s features.
type Path struct {
	ID       int
	Cwnd     float64 // congestion window, bytes
	Inflight float64 // bytes in flight
	// SendWindow is the connection's flow-control send window in bytes
	// (Peekaboo's "swnd"; the public code reads one stream's window). The
	// same number for every path; divided by each path's RTT it says how
	// fast that path could drain it.
	SendWindow float64
	RTT        float64 // seconds; ≤ 0: not measured yet
	CanSend    bool    // the congestion window has room for a packet
}

// Stochastic adjustment (Peekaboo §IV-C). The paper derives the
// probabilities; the public Go code hard-codes them, and so do we by
// default: when LinUCB prefers waiting, wait with probability 0.7 (else
// send); when it prefers sending, send with probability 0.9 (else wait).
const (
	DefaultPWait = 0.7
	DefaultPSend = 0.9
	// DefaultAlpha is LinUCB's exploration weight, Li et al.'s
	// α = 1 + √(ln(2/δ)/2) with δ = 0.05. Peekaboo's paper does not give its
	// α; the public code deploys α = 0 (θᵀx only, from a table trained
	// off-line). An untried arm scores α·|x|, so it is tried only while that
	// exceeds the best tried arm's reward: with kB/s rewards (see Reward) and
	// MB/s features, α ≈ 2.4 keeps that true for typical windows and RTTs.
	DefaultAlpha = 2.36
)

// Config configures a Scheduler.
type Config struct {
	// Paths lists the path IDs in feature order: the context is
	// (cwnd/RTT, inflight/RTT, swnd/RTT) for each, 3·len(Paths) features.
	// Peekaboo's paper has two paths; any number ≥ 2 works here.
	Paths []int
	Alpha float64 // LinUCB exploration weight (0: greedy, as the public code)
	PWait float64 // probability of obeying a "wait" recommendation
	PSend float64 // probability of obeying a "send" recommendation
}

// DefaultConfig is Peekaboo's code settings for the given paths.
func DefaultConfig(paths ...int) Config {
	return Config{Paths: paths, Alpha: DefaultAlpha, PWait: DefaultPWait, PSend: DefaultPSend}
}

// Ticket names one consulted decision; the caller hands it back with the
// delayed reward. The zero Ticket is "no decision" (nothing to reward).
type Ticket uint64

// Decision is the scheduler's answer for the next packet.
type Decision struct {
	// Send: put the packet on Path now. !Send: hold it until a path opens
	// (the fast one, in Peekaboo's design).
	Send bool
	Path int
	// Ticket is non-zero when the bandit was consulted: reward it with the
	// packet this decision was about — the one sent on Path, or for a wait
	// the one the fast path sends next — once that packet is acknowledged.
	Ticket Ticket
}

// Scheduler is Peekaboo generalised to N paths. Peekaboo consults its
// bandit only when the fastest path (lowest RTT) cannot send and a slower
// one can; its two disjoint arms are "wait for the fast path" and "send on
// the slow path". With N paths the arms are "wait" and "send on p" for
// every path p, and the candidates at a decision are "wait" plus every
// slower path that can send: with two paths that is exactly Peekaboo.
//
// Like the public code, a wait is sticky: after deciding to wait the
// scheduler waits (without consulting again) until the fast path can send.
// A Scheduler is not safe for concurrent use.
type Scheduler struct {
	cfg     Config
	lin     *LinUCB
	arm     map[int]int // path ID → its "send on p" arm
	pathOf  []int       // arm → path ID (waitArm: −1)
	waiting bool
	next    Ticket
	pending map[Ticket]pending
}

type pending struct {
	arm int
	x   []float64
}

const waitArm = 0

// New returns a Peekaboo scheduler. It fails with a one-line error on
// fewer than two paths, duplicate IDs, or probabilities outside [0, 1].
func New(cfg Config) (*Scheduler, error) {
	if len(cfg.Paths) < 2 {
		return nil, fmt.Errorf("peekaboo: needs ≥ 2 paths (got %d)", len(cfg.Paths))
	}
	for _, p := range []struct {
		name string
		v    float64
	}{{"PWait", cfg.PWait}, {"PSend", cfg.PSend}} {
		if !(p.v >= 0 && p.v <= 1) {
			return nil, fmt.Errorf("peekaboo: %s must be in [0, 1] (got %v)", p.name, p.v)
		}
	}
	lin, err := NewLinUCB(1, 3*len(cfg.Paths), cfg.Alpha)
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: cfg, lin: lin, arm: map[int]int{}, pathOf: []int{-1}, pending: map[Ticket]pending{}}
	s.cfg.Paths = slices.Clone(cfg.Paths)
	for _, id := range cfg.Paths {
		if _, dup := s.arm[id]; dup {
			return nil, fmt.Errorf("peekaboo: path %d listed twice", id)
		}
		s.arm[id] = lin.AddArm()
		s.pathOf = append(s.pathOf, id)
	}
	return s, nil
}

// Bandit exposes the underlying LinUCB (for tests and reports).
func (s *Scheduler) Bandit() *LinUCB { return s.lin }

// Pending is how many consulted decisions still await their reward.
func (s *Scheduler) Pending() int { return len(s.pending) }

// Features is Peekaboo's context for the given path states, in MB/s:
// cwnd/RTT, inflight/RTT, swnd/RTT per configured path, in cfg.Paths order.
// A path with no RTT sample contributes zeros (the code zeroes them all).
func (s *Scheduler) Features(ps []Path) ([]float64, error) {
	x := make([]float64, 3*len(s.cfg.Paths))
	for i, id := range s.cfg.Paths {
		j := slices.IndexFunc(ps, func(p Path) bool { return p.ID == id })
		if j < 0 {
			return nil, fmt.Errorf("peekaboo: no state for path %d", id)
		}
		p := ps[j]
		if !(p.RTT > 0) || math.IsInf(p.RTT, 1) {
			continue
		}
		const mb = 1e6
		x[3*i] = p.Cwnd / p.RTT / mb
		x[3*i+1] = p.Inflight / p.RTT / mb
		x[3*i+2] = p.SendWindow / p.RTT / mb
	}
	return x, nil
}

// Decide picks what to do with the next packet. ps holds the state of
// every configured path (extra entries are ignored); rng drives the
// stochastic adjustment.
func (s *Scheduler) Decide(ps []Path, rng *rand.Rand) (Decision, error) {
	fast := -1
	for i, p := range ps {
		if _, ok := s.arm[p.ID]; !ok {
			continue
		}
		if fast < 0 || less(p, ps[fast]) {
			fast = i
		}
	}
	if fast < 0 {
		return Decision{}, errors.New("peekaboo: no configured path in the state")
	}
	if ps[fast].CanSend {
		s.waiting = false
		return Decision{Send: true, Path: ps[fast].ID}, nil
	}
	cand := []int{waitArm}
	for i, p := range ps {
		if a, ok := s.arm[p.ID]; ok && i != fast && p.CanSend {
			cand = append(cand, a)
		}
	}
	if len(cand) == 1 || s.waiting {
		return Decision{}, nil // nothing can send, or a sticky wait
	}
	x, err := s.Features(ps)
	if err != nil {
		return Decision{}, err
	}
	best, _, err := s.lin.Choose(x, cand)
	if err != nil {
		return Decision{}, err
	}
	act := best
	if best == waitArm {
		if rng.Float64() >= s.cfg.PWait {
			act, _, _ = s.lin.Choose(x, cand[1:]) // the best send arm
		}
	} else if rng.Float64() >= s.cfg.PSend {
		act = waitArm
	}
	s.next++
	s.pending[s.next] = pending{arm: act, x: x}
	if act == waitArm {
		s.waiting = true
		return Decision{Ticket: s.next}, nil
	}
	return Decision{Send: true, Path: s.pathOf[act], Ticket: s.next}, nil
}

// less orders paths fastest first: a measured RTT beats none, then lower
// RTT, then lower ID (deterministic ties).
func less(a, b Path) bool {
	am, bm := a.RTT > 0, b.RTT > 0
	if am != bm {
		return am
	}
	if a.RTT != b.RTT {
		return a.RTT < b.RTT
	}
	return a.ID < b.ID
}

// Reward is Peekaboo's delayed reward for a decision: MSS divided by the
// time from the decision to the acknowledgement of the packet decided, in
// kB/s (bytes per ms): a 1500-byte packet acknowledged 60 ms after the
// decision scores 25. The paper gives no unit; kB/s puts rewards at order
// 1–100, well above LinUCB's confidence widths once an arm has a few dozen
// samples, so DefaultAlpha explores without drowning the signal. elapsed is
// in seconds, measured by the caller's clock.
func Reward(mssBytes, elapsed float64) (float64, error) {
	if !(mssBytes > 0) || !(elapsed > 0) || math.IsInf(mssBytes, 1) || math.IsInf(elapsed, 1) {
		return 0, fmt.Errorf("peekaboo: reward needs mss > 0 and elapsed > 0 (got %v, %v)", mssBytes, elapsed)
	}
	return mssBytes / elapsed / 1e3, nil
}

// ErrUnknownTicket is returned for a ticket that was never issued or was
// already rewarded or forgotten.
var ErrUnknownTicket = errors.New("peekaboo: unknown ticket")

// Learn hands the reward r (see Reward) for ticket t to the bandit.
func (s *Scheduler) Learn(t Ticket, r float64) error {
	p, ok := s.pending[t]
	if !ok {
		return fmt.Errorf("%w %d", ErrUnknownTicket, t)
	}
	delete(s.pending, t)
	return s.lin.Update(p.arm, p.x, r)
}

// Forget drops a decision that will never be rewarded (its packet was
// abandoned). Unknown tickets are ignored.
func (s *Scheduler) Forget(t Ticket) { delete(s.pending, t) }
