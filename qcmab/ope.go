package qcmab

import (
	"errors"
	"fmt"
	"math/rand/v2"
)

// LogEntry is one logged slot: the candidates the logging agent saw, the
// arm it played, the probability it had of playing that arm
// (Decision.Propensity) and the reward the frame earned.
type LogEntry struct {
	Cands      []Candidate
	Arm        Arm
	Propensity float64
	Reward     float64
}

// Estimate is an off-line policy value.
type Estimate struct {
	Mean     float64 // mean reward per accepted, matched slot
	Matched  int     // slots the evaluated policy agreed with the log on
	Accepted int     // slots kept by rejection sampling
	N        int     // slots in the log
}

// Replay scores a (learning) policy on a log without a simulator: the
// replay method of Li, Chu, Langford & Wang (WSDM 2011, Algorithm 3),
// with Dudík et al.'s rejection sampling (UAI 2012) for non-uniform logs.
// Each entry is kept with probability p_min/μ(a|x), p_min the smallest
// propensity in the log; on a kept entry the policy chooses, and when it
// picks the logged arm it learns the logged reward and the reward counts.
// With a uniformly random logger (Config.Epsilon = 1) every entry is kept
// and the estimate is unbiased for the policy's mean per-slot reward.
//
// The agent must be fresh (it learns along the log). Its FEC one-round lag
// is already inside the logged rewards.
func Replay(a *Agent, log []LogEntry, rng *rand.Rand) (Estimate, error) {
	if len(log) == 0 {
		return Estimate{}, errors.New("qcmab: empty log")
	}
	pmin := 1.0
	for i, e := range log {
		if !(e.Propensity > 0 && e.Propensity <= 1) {
			return Estimate{}, fmt.Errorf("qcmab: log entry %d has propensity %v, want (0, 1]", i, e.Propensity)
		}
		if !(e.Reward >= 0 && e.Reward <= 1) {
			return Estimate{}, fmt.Errorf("qcmab: log entry %d has reward %v, want [0, 1]", i, e.Reward)
		}
		pmin = min(pmin, e.Propensity)
	}
	est := Estimate{N: len(log)}
	sum := 0.0
	for _, e := range log {
		if rng.Float64() >= pmin/e.Propensity {
			continue
		}
		est.Accepted++
		d, err := a.Choose(e.Cands, rng)
		if err != nil {
			return Estimate{}, err
		}
		if d.Arm != e.Arm {
			a.Skip()
			continue
		}
		if err := a.Learn(e.Reward); err != nil {
			return Estimate{}, err
		}
		est.Matched++
		sum += e.Reward
	}
	if est.Matched > 0 {
		est.Mean = sum / float64(est.Matched)
	}
	return est, nil
}
