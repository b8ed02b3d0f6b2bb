package ride

import (
	"math"
	"time"
)

// Stages splits a frame's decoded time d against its playback slot [t₁,
// t₂] and deadline Γ into the four stages of Fig. 5.6.
type Stages struct {
	EA     time.Duration // early arrival, Eq. 5.9
	EP     time.Duration // effective playback, Eq. 5.10
	DH     time.Duration // decoding helper, Eq. 5.11
	Rebuff time.Duration // rebuffering, Eq. 5.12
}

// StagesOf evaluates Eqs. 5.9–5.12 for decoded time d (Never: not
// decoded).
func StagesOf(d, t1, t2, gamma time.Duration) Stages {
	var s Stages
	if d < t1 { // Eq. 5.9
		s.EA = t1 - d
	}
	if d < t2 { // Eq. 5.10
		s.EP = t2 - max(d, t1)
	}
	if d < gamma { // Eq. 5.11
		s.DH = gamma - max(d, t2)
	}
	if d > t1 { // Eq. 5.12
		s.Rebuff = min(gamma, d) - t1
	}
	return s
}

// RewardParams are Eq. 5.13's weights.
type RewardParams struct {
	// Alpha weighs early arrival against effective playback and decoding
	// help (the thesis does not publish its value; default 0.5).
	Alpha float64
	// Unit is the time that counts as 1 reward (default FrameDur): Eq.
	// 5.13 is in seconds; per-step values of a few units suit PPO's
	// default value-function scale.
	Unit time.Duration
}

// DefaultReward is α = 0.5 and one frame slot per reward unit.
var DefaultReward = RewardParams{Alpha: 0.5, Unit: FrameDur}

// Reward is Eq. 5.13: −(Γ − t₁) for a skipped frame, else α·T_EA + (1−α)·
// (T_EP + T_DH) − T_rebuff − T_cost, with T_cost the frame's transmission
// time on the chosen path (L·MSS/Φ_a).
func Reward(p RewardParams, skip bool, s Stages, t1, gamma, cost time.Duration) float64 {
	u := float64(p.Unit)
	if skip {
		return -float64(gamma-t1) / u
	}
	pos := p.Alpha*float64(s.EA) + (1-p.Alpha)*float64(s.EP+s.DH)
	return (pos - float64(s.Rebuff) - float64(cost)) / u
}

// TxCost is T_cost = bytes / Φ for a path delivering rateBps bits per
// second (Eq. 5.13's L·MSS/Φ_a with L in packets); a path with no rate
// estimate yet costs nothing.
func TxCost(bytes int, rateBps float64) time.Duration {
	if rateBps <= 0 {
		return 0
	}
	return time.Duration(math.Round(float64(bytes) * 8 / rateBps * float64(time.Second)))
}
