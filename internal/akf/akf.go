// Package akf is the scalar adaptive Kalman filter the thesis uses twice:
// MACO cleans its ACK-rate capacity samples with it (thesis §3.4.1,
// Eqs. 3.5–3.10) and QC-MAB its received-bytes bandwidth samples (§4.4.1,
// Eqs. 4.11–4.16, the same filter with b for C). One implementation, so
// both chapters' estimates behave the same. Pure: no I/O, no clock.
package akf

// Filter is a scalar adaptive Kalman filter. The state is a random
// walk, C⁻ = C⁺ + δ (Eq. 3.5), Z⁻ = Z⁺ + Q (Eq. 3.6); a measurement is
// y = C + v (Eq. 3.7); K = Z⁻/(Z⁻ + R) (Eq. 3.8), C⁺ = C⁻ + K(y − C⁻)
// (Eq. 3.9), Z⁺ = Z⁻ − K·Z⁻ (Eq. 3.10).
//
// Q and R are unknown (thesis footnotes to Eq. 3.10 and Eq. 4.16, which
// cite an innovation-autocorrelation least-squares method, Odelson et al.,
// the thesis's [115]). We estimate both from the innovation sequence
// e = y − C⁻, but with two simpler, recursive, standard rules instead of the
// batch least-squares solve (which needs many lagged autocorrelations before
// it says anything, too slow for a handover):
//
//   - R by Sage–Husa's exponentially weighted innovation matching,
//     R ← (1−d)·R + d·max(e² − Z⁻, floor), d = akfForget;
//   - Q by covariance matching over the last Window innovations
//     (Mohamed & Schwarz, J. Geodesy 1999): when their mean square Ĉ_e
//     exceeds akfJump times the predicted innovation variance Z⁺ + Q + R,
//     the state has moved (a handover, a new competing flow) and
//     Q ← Ĉ_e − R − Z⁺ for this step (the gain rises, the filter follows);
//     otherwise Q decays by half toward its floor (a still state).
//
// R is not updated during a jump, so a step is not mistaken for noise.
// The floors (relative variance akfFloor) keep the filter from locking.
type Filter struct {
	X, Z  float64 // posterior estimate and its error variance
	Q, R  float64 // current process and measurement noise variances
	ok    bool
	innov [Window]float64
	n     int // innovations seen
}

// Tuning. MACO samples every quarter RTT, so Window = 8 is two round
// trips; QC-MAB samples once per frame (ΔT = 150 ms), so 8 is 1.2 s. A step
// is seen within Window samples.
const (
	Window    = 8
	akfFloor  = 1e-4 // relative variance floor of Q and R
	akfForget = 0.05 // Sage–Husa forgetting factor for R
	akfJump   = 3.0  // Ĉ_e above 3× the predicted variance: the state moved
	// minVar is an absolute floor under Z, Q and R: a filter started on, or
	// settled at, a zero signal (QC-MAB's bandwidth sample of a slot with
	// nothing received) would otherwise compute the gain as 0/0. It is far
	// below any variance of a non-zero signal in bytes/s or Mbit/s, so it
	// changes nothing else.
	minVar = 1e-12
)

// Update feeds one measurement y and returns the posterior estimate.
func (k *Filter) Update(y float64) float64 {
	if !k.ok {
		k.ok = true
		k.X, k.Z = y, max(y*y, minVar)
		k.R, k.Q = max((0.1*y)*(0.1*y), minVar), max((0.01*y)*(0.01*y), minVar)
		return k.X
	}
	floor := max(akfFloor*k.X*k.X, minVar)
	e := y - k.X // innovation against the prediction C⁻ = C⁺ (Eq. 3.5)
	k.innov[k.n%Window] = e * e
	k.n++
	m := min(k.n, Window)
	ce := 0.0
	for i := 0; i < m; i++ {
		ce += k.innov[i]
	}
	ce /= float64(m)
	jump := m == Window && ce > akfJump*(k.Z+k.Q+k.R)
	if jump {
		k.Q = max(ce-k.R-k.Z, floor)
	}
	zp := k.Z + k.Q // Eq. 3.6
	if !jump {
		k.R = max((1-akfForget)*k.R+akfForget*(e*e-zp), floor)
		k.Q = max(k.Q/2, floor)
	}
	// Correction (Eqs. 3.8–3.10).
	K := zp / (zp + k.R)
	k.X += K * e
	k.Z = zp - K*zp
	if jump { // the jump is absorbed: start the window afresh
		k.n = 0
		k.innov = [Window]float64{}
	}
	return k.X
}

// Gain is the Kalman gain the next update would use.
func (k *Filter) Gain() float64 { return (k.Z + k.Q) / (k.Z + k.Q + k.R) }
