// Package qcmab is QC-MAB, the QoS-driven contextual bandit of thesis
// chapter 4 (`../shared/papers/thesis-qos-multipath.txt`, §4.4): every
// frame display (every ΔT) it picks an arm — an access network and whether
// the server protects the next frame with FEC — from a refined context
// (bottleneck bandwidth, one-way delay, loss) and learns from a per-frame
// reward that puts on-time base-layer delivery first (Eq. 4.19).
//
// The package is pure, like pathsel: no I/O, no clock, randomness only from
// the caller's *rand.Rand. A simulator and a real client call it the same
// way: measure, Refiner.Observe, Agent.Choose, deliver the frame, Reward,
// Agent.Learn.
package qcmab

import (
	"fmt"
	"math"

	"github.com/hetquic/hetquic/internal/akf"
)

// Context is one network's (path's) refined context x̂ = (b̂, τ̂, ε̂), §4.4.1.
type Context struct {
	BandwidthMbps float64 // bottleneck bandwidth b̂ (Eqs. 4.8, 4.10–4.16)
	OWDms         float64 // one-way delay τ̂ (Eq. 4.17)
	Loss          float64 // packet loss rate ε̂ as a fraction (Eq. 4.18)
}

// Thresholds cut each context dimension into three intervals (§4.4.5,
// Fig. 4.3, h_T = 3): v < lo, lo ≤ v < hi, v ≥ hi. 3×3×3 = 27 cells.
type Thresholds struct {
	BandwidthMbps [2]float64
	OWDms         [2]float64
	Loss          [2]float64 // fractions: 0.0001 is 0.01 %
}

// DefaultThresholds are §4.5.2's: 5/10 Mbit/s, 90/150 ms, 0.01 %/0.1 %.
var DefaultThresholds = Thresholds{
	BandwidthMbps: [2]float64{5, 10},
	OWDms:         [2]float64{90, 150},
	Loss:          [2]float64{0.0001, 0.001},
}

// Cells is the number of context cells, (h_T)^D = 3³.
const Cells = 27

// Validate reports, in one line, the first pair that is not finite,
// non-negative and strictly increasing.
func (t Thresholds) Validate() error {
	for _, d := range []struct {
		name string
		v    [2]float64
	}{{"bandwidth", t.BandwidthMbps}, {"owd", t.OWDms}, {"loss", t.Loss}} {
		lo, hi := d.v[0], d.v[1]
		if !(lo >= 0) || math.IsInf(hi, 0) || math.IsNaN(hi) || !(lo < hi) {
			return fmt.Errorf("qcmab: %s thresholds must be finite, ≥ 0 and increasing (got %v, %v)", d.name, lo, hi)
		}
	}
	return nil
}

func bin(v float64, th [2]float64) int {
	switch {
	case v < th[0]:
		return 0
	case v < th[1]:
		return 1
	}
	return 2
}

// Cell maps a context to its cell q ∈ [0, 27): 9·bandwidth bin + 3·OWD bin
// + loss bin, each bin 0 (below the low threshold), 1 or 2 (at or above the
// high one).
func (t Thresholds) Cell(c Context) int {
	return 9*bin(c.BandwidthMbps, t.BandwidthMbps) + 3*bin(c.OWDms, t.OWDms) + bin(c.Loss, t.Loss)
}

// EWMA weights of §4.5.2: α = 1/8 for the OWD (RFC 6298's SRTT gain, the
// thesis's [69]) and β = 0.6 for the loss rate (the thesis's [135]).
const (
	OWDAlpha = 1.0 / 8
	LossBeta = 0.6
)

// Refiner is context noise removal (§4.4.1) for one network: an adaptive
// Kalman filter on the bandwidth samples of Eq. 4.10 (Eqs. 4.11–4.16; the
// same filter MACO uses, internal/akf) and EWMAs on OWD and loss
// (Eqs. 4.17–4.18). With Raw set it passes the samples through unfiltered —
// QC-MAB without context refinement, for Fig. 4.7.
//
// Q and R come from the innovation sequence (thesis footnote 2 to Eq. 4.16):
// internal/akf estimates R by Sage–Husa innovation matching and Q by
// covariance matching over the last akf.Window innovations, rather than the
// footnote's batch least-squares fit of the innovation autocorrelation
// ([115]), because the recursive pair reacts within a window to a handover
// and needs no matrix solve per frame; see internal/akf.
type Refiner struct {
	Raw       bool
	kf        akf.Filter
	owd, loss float64
	started   bool
}

// Observe feeds one slot's measurements: bytes received in the last
// interval seconds (Eq. 4.10), and the measured OWD (ms) and loss rate
// (fraction). It returns the refined context.
func (r *Refiner) Observe(bytes, interval, owdMs, loss float64) (Context, error) {
	if !(bytes >= 0) || !(interval > 0) || !(owdMs >= 0) || !(loss >= 0 && loss <= 1) ||
		math.IsInf(bytes, 0) || math.IsInf(interval, 0) || math.IsInf(owdMs, 0) {
		return Context{}, fmt.Errorf("qcmab: bad sample (bytes %v, interval %v s, owd %v ms, loss %v)", bytes, interval, owdMs, loss)
	}
	b := bytes * 8 / interval / 1e6 // Eq. 4.10 in Mbit/s
	if r.Raw {
		return Context{b, owdMs, loss}, nil
	}
	if !r.started {
		r.started, r.owd, r.loss = true, owdMs, loss
	} else {
		r.owd = OWDAlpha*owdMs + (1-OWDAlpha)*r.owd  // Eq. 4.17
		r.loss = LossBeta*loss + (1-LossBeta)*r.loss // Eq. 4.18
	}
	return Context{max(r.kf.Update(b), 0), r.owd, r.loss}, nil
}
