// Package leo is the LEO-satellite access model of thesis ch. 3 (MACO): a
// Walker-like orbital plane above a still ground host, the access-link
// capacity from the satellite geometry (Eqs. 3.2–3.3, Table 3.2), the
// round-trip propagation delay (Eq. 3.11), the handovers of a two-interface
// host and the topology states of Fig. 3.3 (subflows on disjoint satellites
// or sharing one). This file is pure geometry; net.go builds the
// simulator's links from it.
//
// Model (our reading; the thesis's §3.3.1 distances are not consistent
// with its §3.6.2 parameters — with R1 = 150 km and a 460 km footprint,
// 2·R2 − 2·d1 < 0 — so we keep its parameters and define the handovers):
//
//   - satellites k ∈ ℤ fly in one plane at AltitudeKm, SpacingKm (R1)
//     apart, at SpeedKmS; the host is at along-track 0, satellite k at
//     x_k(t) = k·R1 − v·t; slant distance d = √(h² + x²) (flat earth: the
//     error is under 1 % within the 230 km footprint radius);
//   - interface 0 is served by the nearest satellite (handover at the
//     midpoint, every R1/v); interface 1 hands over only when the incoming
//     satellite is HysteresisKm nearer along-track (default R1), i.e.
//     (R1 + m)/(2v) later. So the host alternates between the shared state
//     s3 (both on one satellite) and the disjoint state s2 (handover area:
//     each on its own satellite), each for half of R1/v with m = R1; a
//     handover (outage of HandoverMs) on one interface or the other every
//     R1/(2v) (10.7 s at 150 km; the thesis measured ~15 s on Starlink,
//     which R1 = 100–120 km gives per interface: 14.3–17.1 s);
//   - a serving satellite is always inside the footprint: |x| ≤
//     (R1 + m)/2 ≤ FootprintKm/2 is checked by Validate.
package leo

import (
	"fmt"
	"math"
	"time"
)

// Constellation is the orbital plane, the access radio (Table 3.2) and the
// ground part of the path.
type Constellation struct {
	AltitudeKm   float64 `yaml:"altitude_km"`   // 550
	SpeedKmS     float64 `yaml:"speed_km_s"`    // 7
	SpacingKm    float64 `yaml:"spacing_km"`    // R1: 150
	FootprintKm  float64 `yaml:"footprint_km"`  // diameter 2·R2: 460
	HysteresisKm float64 `yaml:"hysteresis_km"` // interface 1's handover margin (default R1)
	HandoverMs   float64 `yaml:"handover_ms"`   // outage per handover (default 50)
	// TerrestrialMs is D_terr of Eq. 3.11, one way (default 45: with the
	// two space legs, an RTT of about 100 ms as Fig. 3.4(b)).
	TerrestrialMs float64 `yaml:"terrestrial_ms"`
	// Radio, Table 3.2; PtDBm 35.12 gives 200 Mbit/s at 550 km (§3.6.2).
	PtDBm        float64 `yaml:"pt_dbm"`
	G1DBi        float64 `yaml:"g1_dbi"`         // 37.7
	G2DBi        float64 `yaml:"g2_dbi"`         // 37.1
	LambdaM      float64 `yaml:"lambda_m"`       // 0.086
	N0WHz        float64 `yaml:"n0_w_hz"`        // 1.6e-20
	Eta          float64 `yaml:"eta"`            // 0.98
	BandwidthMHz float64 `yaml:"bandwidth_mhz"`  // W: 12.5
	Loss         float64 `yaml:"loss"`           // random (channel) loss on the access link (default 0)
	QueuePackets int     `yaml:"queue_packets"`  // access-link drop-tail queue (default 500)
	Background   int     `yaml:"background_tcp"` // NewReno flows per satellite link (default 1; 0: none, give -1)
	StepMs       float64 `yaml:"step_ms"`        // capacity/delay update step (default 500)
	// RandomPhase starts each run at a random point of the handover cycle
	// (uniform in [0, R1/v), from the run's seed), so that the seeds of a
	// short transfer see handovers at different moments. Off: t = 0 is
	// interface 0's satellite overhead.
	RandomPhase bool `yaml:"random_phase"`
	// StartS delays the MPQUIC transfer (the background flows start at 0,
	// so they are past slow start when it begins); default 0.
	StartS float64 `yaml:"start_s"`
}

// Defaults fills the thesis's values (§3.6.2, Table 3.2).
func (c *Constellation) Defaults() {
	def := func(v *float64, d float64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.AltitudeKm, 550)
	def(&c.SpeedKmS, 7)
	def(&c.SpacingKm, 150)
	def(&c.FootprintKm, 460)
	def(&c.HysteresisKm, c.SpacingKm)
	def(&c.HandoverMs, 50)
	def(&c.TerrestrialMs, 45)
	def(&c.PtDBm, 35.12)
	def(&c.G1DBi, 37.7)
	def(&c.G2DBi, 37.1)
	def(&c.LambdaM, 0.086)
	def(&c.N0WHz, 1.6e-20)
	def(&c.Eta, 0.98)
	def(&c.BandwidthMHz, 12.5)
	def(&c.StepMs, 500)
	if c.QueuePackets == 0 {
		c.QueuePackets = 500
	}
	switch {
	case c.Background == 0:
		c.Background = 1
	case c.Background < 0:
		c.Background = 0
	}
}

// Validate checks ranges after Defaults; errors name the field.
func (c *Constellation) Validate() error {
	pos := []struct {
		name string
		v    float64
	}{{"altitude_km", c.AltitudeKm}, {"speed_km_s", c.SpeedKmS}, {"spacing_km", c.SpacingKm},
		{"footprint_km", c.FootprintKm}, {"lambda_m", c.LambdaM}, {"n0_w_hz", c.N0WHz},
		{"bandwidth_mhz", c.BandwidthMHz}, {"step_ms", c.StepMs}}
	for _, p := range pos {
		if !(p.v > 0) || math.IsInf(p.v, 0) {
			return fmt.Errorf("%s: %v must be positive", p.name, p.v)
		}
	}
	switch {
	case c.HysteresisKm < 0 || c.HysteresisKm > c.SpacingKm:
		return fmt.Errorf("hysteresis_km: %v is outside [0, spacing_km]", c.HysteresisKm)
	case (c.SpacingKm+c.HysteresisKm)/2 > c.FootprintKm/2:
		return fmt.Errorf("footprint_km: %v is too small: interface 1's satellite leaves it before the handover (need ≥ spacing_km + hysteresis_km)", c.FootprintKm)
	case c.HandoverMs < 0 || c.HandoverMs > 10000:
		return fmt.Errorf("handover_ms: %v is outside [0, 10000]", c.HandoverMs)
	case c.TerrestrialMs < 0 || c.TerrestrialMs > 10000:
		return fmt.Errorf("terrestrial_ms: %v is outside [0, 10000]", c.TerrestrialMs)
	case !(c.Eta > 0 && c.Eta <= 1):
		return fmt.Errorf("eta: %v is outside (0, 1]", c.Eta)
	case c.Loss < 0 || c.Loss >= 1:
		return fmt.Errorf("loss: %v is outside [0, 1)", c.Loss)
	case c.QueuePackets < 1 || c.QueuePackets > 1e6:
		return fmt.Errorf("queue_packets: %d is outside [1, 1e6]", c.QueuePackets)
	case c.StartS < 0 || c.StartS > 1e5:
		return fmt.Errorf("start_s: %v is outside [0, 1e5]", c.StartS)
	case c.Background > 16:
		return fmt.Errorf("background_tcp: %d is above 16", c.Background)
	}
	return nil
}

// SpeedOfLight in m/s.
const SpeedOfLight = 299792458.0

func dB(x float64) float64 { return math.Pow(10, x/10) }

// SNR is Eq. 3.2: P_t·g1·g2 / ((4π·d/λ)²·N_r·W), d in metres.
func (c *Constellation) SNR(dM float64) float64 {
	pt := dB(c.PtDBm) / 1000 // W
	fspl := math.Pow(4*math.Pi*dM/c.LambdaM, 2)
	return pt * dB(c.G1DBi) * dB(c.G2DBi) / (fspl * c.N0WHz * c.BandwidthMHz * 1e6)
}

// CapacityBps is Eq. 3.3: η·W·log2(1 + SNR), d in metres.
func (c *Constellation) CapacityBps(dM float64) float64 {
	return c.Eta * c.BandwidthMHz * 1e6 * math.Log2(1+c.SNR(dM))
}

// phase is interface i's handover offset, in units of R1 (0 for the
// nearest-satellite interface 0, m/(2·R1) for interface 1).
func (c *Constellation) phase(iface int) float64 {
	if iface == 0 {
		return 0
	}
	return c.HysteresisKm / (2 * c.SpacingKm)
}

// Satellite is the index k of the satellite serving interface iface (0 or
// 1) at t.
func (c *Constellation) Satellite(iface int, t time.Duration) int {
	u := c.SpeedKmS * t.Seconds() / c.SpacingKm
	return int(math.Floor(u + 0.5 - c.phase(iface)))
}

// AlongKm is satellite k's along-track offset from the host at t, km.
func (c *Constellation) AlongKm(k int, t time.Duration) float64 {
	return float64(k)*c.SpacingKm - c.SpeedKmS*t.Seconds()
}

// DistanceM is satellite k's slant distance to the host at t, metres.
func (c *Constellation) DistanceM(k int, t time.Duration) float64 {
	x := c.AlongKm(k, t)
	return 1000 * math.Hypot(c.AltitudeKm, x)
}

// PropRTT is D of Eq. 3.11 for satellite k at t: 2·(D_ul + D_dl + D_terr),
// the bent pipe's two space legs taken equal (the ground station near the
// host, "the nearest ground station", §3.3.1).
func (c *Constellation) PropRTT(k int, t time.Duration) time.Duration {
	leg := c.DistanceM(k, t) / SpeedOfLight
	return time.Duration(2 * (2*leg + c.TerrestrialMs/1e3) * float64(time.Second))
}

// Shared reports whether both interfaces use the same satellite at t (Fig.
// 3.3 state s3; otherwise s2, the handover area).
func (c *Constellation) Shared(t time.Duration) bool {
	return c.Satellite(0, t) == c.Satellite(1, t)
}

// Handovers lists interface iface's handover times in (0, until].
func (c *Constellation) Handovers(iface int, until time.Duration) []time.Duration {
	var out []time.Duration
	period := c.SpacingKm / c.SpeedKmS // seconds per satellite
	for k := 0; ; k++ {
		t := time.Duration((float64(k) + 0.5 + c.phase(iface)) * period * float64(time.Second))
		if t > until {
			return out
		}
		if t > 0 {
			out = append(out, t)
		}
	}
}
