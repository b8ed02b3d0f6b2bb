package mobility

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// Fading is small-scale fading of a network's received power. The thesis
// evaluates MAMS with Nakagami-m fading, "the Nakagami fading parameter
// m_s … set to 1" (§2.6.4, after its ref. [7], Aalo et al.), and MAMS's
// Λ_p (Eq. 2.8) exists to estimate the link-failure loss it causes.
//
// Per sampling step the received power is multiplied by a power gain g
// drawn from Gamma(m, 1/m) (the power of a Nakagami-m amplitude; mean 1,
// m = 1 is Rayleigh), so the step's SNR is γ = γ̄·g; it falls below γ_th
// with probability P(m, m·γ_th/γ̄) (regularised lower incomplete gamma;
// Aalo et al.), 1 − exp(−γ_th/γ̄) for m = 1. A step is a fading
// block: the thesis gives no coherence time, and at 144 km/h the physical
// one is milliseconds, so step_ms sets how long one fade lasts. The step
// then loses every packet when γ falls below the decoding threshold γ_th
// (an outage: the link fails) and Eq. 2.8's share of them at γ otherwise;
// the capacity (Eq. 2.15) follows γ too. Handover keeps deciding on the
// mean RSS, as a terminal's filtered measurement does.
type Fading struct {
	Model string  `yaml:"model"` // nakagami (the only one)
	M     float64 `yaml:"m"`     // shape m ∈ [0.5, 100]: 1 is Rayleigh, larger fades less
	// ThresholdDB is γ_th in dB. Default: the SNR at which Eq. 2.8 loses
	// half the packets for the network's qam and fec_bits, the decoding
	// threshold its own loss model implies.
	ThresholdDB *float64 `yaml:"threshold_db"`
}

// Bounds of the Nakagami shape: m ≥ 1/2 by the distribution's definition;
// above 100 the gain's spread (1/√m) is under 10 % and fading is moot.
const (
	minNakagamiM = 0.5
	maxNakagamiM = 100
)

// validate checks the fading fields; errors name the field.
func (f *Fading) validate() error {
	switch {
	case f.Model != "nakagami":
		return fmt.Errorf("model: unknown fading %q (want nakagami)", f.Model)
	case !(f.M >= minNakagamiM && f.M <= maxNakagamiM):
		return fmt.Errorf("m: %v is outside [%v, %v]", f.M, minNakagamiM, maxNakagamiM)
	case f.ThresholdDB != nil && !(*f.ThresholdDB >= -20 && *f.ThresholdDB <= 60):
		return fmt.Errorf("threshold_db: %v is outside [-20, 60]", *f.ThresholdDB)
	}
	return nil
}

// NakagamiGain draws the power gain of Nakagami-m fading, Gamma(m, 1/m)
// (mean 1, variance 1/m), by Marsaglia and Tsang's method; for m < 1 it
// boosts the shape by one and scales by U^(1/m).
func NakagamiGain(rng *rand.Rand, m float64) float64 {
	shape, boost := m, 1.0
	if m < 1 {
		shape, boost = m+1, math.Pow(rng.Float64(), 1/m)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		if u := rng.Float64(); math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v * boost / m
		}
	}
}

// DecodingThreshold is the linear SNR at which Eq. 2.8 (with Eq. 2.6's
// BER for M-QAM and Ψ correctable bits) loses half the packets: the
// default γ_th. Eq. 2.8 falls monotonically with the SNR, so bisection on
// the SNR in dB finds it.
func DecodingThreshold(qam, fecBits int) float64 {
	lo, hi := -20.0, 60.0 // dB; Fading's threshold_db range
	for i := 0; i < 60; i++ {
		mid := (lo + hi) / 2
		if PacketLoss(BER(dBToLin(mid), qam), packetBits, fecBits) > 0.5 {
			lo = mid
		} else {
			hi = mid
		}
	}
	return dBToLin((lo + hi) / 2)
}

func dBToLin(d float64) float64 { return math.Pow(10, d/10) }

// threshold is the fading's γ_th (linear) for radio r.
func (f *Fading) threshold(r Radio) float64 {
	if f.ThresholdDB != nil {
		return dBToLin(*f.ThresholdDB)
	}
	return DecodingThreshold(r.QAM, r.FECBits)
}

// LinkFailureLoss is the share of a step's packets lost at faded SNR snr:
// all of them below the decoding threshold (an outage, the link failure of
// ref. [7]), else Λ_p of Eq. 2.8 at that SNR.
func (r Radio) LinkFailureLoss(snr, threshold float64) (loss float64, outage bool) {
	if snr < threshold {
		return 1, true
	}
	return PacketLoss(BER(snr, r.QAM), packetBits, r.FECBits), false
}

// fadingStream is the PCG stream of network n's fading in run run: apart
// from the urban walk's ("urba"), and apart per network and per run.
func fadingStream(run uint64, n int) uint64 {
	const fade = 0x66616465 // "fade"
	return fade ^ run<<16 ^ uint64(n)
}
