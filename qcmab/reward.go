package qcmab

import (
	"fmt"
	"math"
)

// Frame is what the receiver knows of one finished frame: how many of its
// base-layer (BL) and enhancement-layer (EL) source packets there were and
// how many of each were delivered (received or FEC-recovered) within the
// deadline ΔT. FEC repair packets are not counted: they carry no video.
type Frame struct {
	BL, EL             int // n_b, n_e
	BLOnTime, ELOnTime int // Σ 1{d ≤ ΔT} over each layer's packets
}

// Validate reports an impossible frame in one line.
func (f Frame) Validate() error {
	if f.BL < 0 || f.EL < 0 || f.BLOnTime < 0 || f.ELOnTime < 0 || f.BLOnTime > f.BL || f.ELOnTime > f.EL || f.BL+f.EL == 0 {
		return fmt.Errorf("qcmab: bad frame %+v (counts ≥ 0, on-time ≤ total, ≥ 1 packet)", f)
	}
	return nil
}

// Reward is Eq. 4.19 for one frame with reliability requirement gamma
// (Γ ∈ (0, 1]):
//
//	γ_f = BLOnTime / n_b
//	r = (BLOnTime + ELOnTime) / N             if γ_f ≥ Γ
//	r = (BLOnTime + η·ELOnTime) / N           otherwise, η = 1 / (n_b − BLOnTime)
//
// with N = n_b + n_e. r ∈ [0, 1], as UCB1 (Eq. 4.21) assumes. Choices where
// the thesis is silent, pinned by tests: a frame without BL packets has
// γ_f = 1; and η = 1 when exactly one BL packet is late, so the thesis's
// discount only bites from the second late BL packet on (the late packet
// itself is already missing from the sum).
func Reward(f Frame, gamma float64) (float64, error) {
	if err := ValidateGamma(gamma); err != nil {
		return 0, err
	}
	if err := f.Validate(); err != nil {
		return 0, err
	}
	n := float64(f.BL + f.EL)
	gf := 1.0
	if f.BL > 0 {
		gf = float64(f.BLOnTime) / float64(f.BL)
	}
	if gf >= gamma {
		return float64(f.BLOnTime+f.ELOnTime) / n, nil
	}
	eta := 1 / float64(f.BL-f.BLOnTime) // γ_f < Γ ≤ 1, so at least one BL packet is late
	return (float64(f.BLOnTime) + eta*float64(f.ELOnTime)) / n, nil
}

// ValidateGamma checks Γ ∈ (0, 1].
func ValidateGamma(gamma float64) error {
	if !(gamma > 0 && gamma <= 1) || math.IsNaN(gamma) {
		return fmt.Errorf("qcmab: reliability Γ must be in (0, 1] (got %v)", gamma)
	}
	return nil
}
