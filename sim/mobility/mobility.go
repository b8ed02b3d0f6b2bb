// Package mobility turns a moving host into a scenario (thesis ch. 2
// §2.6.2): base stations / access points along a road, on a hexagonal
// lattice or in orbit, the host's position
// over time, SINR → capacity (Eq. 2.15–2.16), SNR → bit error rate → packet
// loss (Eq. 2.6–2.8), optional Nakagami-m fading with link-failure loss
// (§2.6.4; fading.go) and handover at a received-signal threshold. The
// result is an ordinary scenario.Scenario whose timed events change each
// access path's rate and loss, so the simulator, the MMQUIC BDP forecast
// (the schedule is known in advance, as a mobility predictor would) and the
// emulator can all use it. Pure functions; the urban walk and the fades
// draw from their own seeded streams, so the same file always gives the
// same scenario.
package mobility

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/hetquic/hetquic/scenario"
)

// Drive is a moving host (thesis §2.6.2). Kind "highway" (default): a straight
// road along x, APs/BSs in a line (the thesis: 4 km apart, Wi-Fi 10 and LTE
// 5 Mbit/s). Kind "urban": a Manhattan grid of BlockM blocks, turning left
// or right at an intersection with probability TurnProb each (seeded: the
// walk is part of the scenario), stations usually on a hexagonal lattice
// (layout: hex; the thesis: 200 m apart, LTE 50 and Wi-Fi 200 Mbit/s).
type Drive struct {
	Kind      string  `yaml:"kind"` // highway (default) or urban
	SpeedKmh  float64 `yaml:"speed_kmh"`
	StartM    float64 `yaml:"start_m"`    // x at t = 0 (y = 0)
	BlockM    float64 `yaml:"block_m"`    // urban: distance between intersections (default 100)
	TurnProb  float64 `yaml:"turn_prob"`  // urban: P(left) = P(right) at an intersection (default 0.25)
	Seed      uint64  `yaml:"seed"`       // urban: the walk's seed; with fading, the fades' too
	DurationS float64 `yaml:"duration_s"` // how long to generate (default 120)
	StepMs    float64 `yaml:"step_ms"`    // sampling step (default 100)
	Networks  []Radio `yaml:"networks"`   // one access path each
	// run keys the fading streams (see ForRun): 0 for the file as given.
	run uint64
}

// ForRun is a copy of the drive whose fading is drawn for run seed run (the
// walk stays the file's), so each seed of an experiment meets its own fades
// and the same file and seed always give the same scenario.
func (h *Drive) ForRun(run uint64) *Drive {
	c := *h
	c.Networks = append([]Radio(nil), h.Networks...)
	c.run = run
	return &c
}

// Fades reports whether any network fades, so that runs differ by seed.
func (h *Drive) Fades() bool {
	for _, r := range h.Networks {
		if r.Fading != nil {
			return true
		}
	}
	return false
}

// Radio is one access technology: its stations, radio link budget and the
// wired part of the path behind it.
type Radio struct {
	Name string `yaml:"name"`
	// Layout "line" (default): stations at x = offset_m + k·spacing_m,
	// y = road_dist_m. Layout "hex": a hexagonal lattice of pitch
	// spacing_m shifted by (offset_m, road_dist_m).
	Layout    string  `yaml:"layout"`
	SpacingM  float64 `yaml:"spacing_m"`   // distance between neighbouring stations
	OffsetM   float64 `yaml:"offset_m"`    // x of station 0
	RoadDistM float64 `yaml:"road_dist_m"` // y of station 0 (default 10)
	// SpeedKmh, when set, is the host's speed relative to this network's
	// stations instead of the drive's: 0 for a network that stays put
	// relative to the host, a satellite's ground speed for a LEO
	// constellation (thesis §2.6.2 ITSN, Table 2.3: 7–7.5 km/s).
	SpeedKmh *float64 `yaml:"speed_kmh"`
	// Link budget (Eq. 2.16): SINR = Y·R^−β / (σ² + I).
	TxPowerDBm      float64 `yaml:"tx_power_dbm"`     // Y
	PathLossExp     float64 `yaml:"path_loss_exp"`    // β
	NoiseDBm        float64 `yaml:"noise_dbm"`        // σ² over the channel
	InterferenceDBm float64 `yaml:"interference_dbm"` // I (default −inf: none)
	// Capacity (Eq. 2.15): C = η·W·log2(1 + SINR), capped at MaxRateMbps.
	BandwidthMHz float64 `yaml:"bandwidth_mhz"` // W
	Eta          float64 `yaml:"eta"`           // η ∈ (0, 1]
	MaxRateMbps  float64 `yaml:"max_rate_mbps"`
	// Loss (Eq. 2.6–2.8): M-QAM bit error rate from the SINR, then the
	// probability that more than FECBits of a 1500-byte packet are wrong.
	QAM     int `yaml:"qam"`      // M (4, 16, 64, …; default 4)
	FECBits int `yaml:"fec_bits"` // Ψ (default 0)
	// Handover: when the serving station's RSS falls below HandoverDBm and
	// another is HysteresisDB stronger, the host moves to it and the path
	// delivers nothing for HandoverMs.
	HandoverDBm  float64 `yaml:"handover_dbm"`
	HysteresisDB float64 `yaml:"hysteresis_db"`
	HandoverMs   float64 `yaml:"handover_ms"`
	// Fading, when set, fades the received power per step and loses the
	// packets of a step whose SNR falls below the decoding threshold.
	Fading *Fading `yaml:"fading"`
	// The wired rest of the path.
	DelayMs      float64 `yaml:"delay_ms"`
	JitterMs     float64 `yaml:"jitter_ms"`
	QueuePackets int     `yaml:"queue_packets"`
}

// Sample is one network's state at one time.
type Sample struct {
	TimeS, PosM, PosYM float64
	Station            int
	RSSdBm, SINRdB     float64 // mean RSS; SINR after fading
	Gain               float64 // the step's fading power gain (1 without fading)
	RateMbps, Loss     float64
	HandoverStartsNow  bool
	Outage             bool // the faded SNR is below the decoding threshold
}

// packetBits is Z of Eq. 2.8.
const packetBits = 1500 * 8

func (h *Drive) defaults() {
	if h.DurationS == 0 {
		h.DurationS = 120
	}
	if h.StepMs == 0 {
		h.StepMs = 100
	}
	if h.Kind == "" {
		h.Kind = "highway"
	}
	if h.BlockM == 0 {
		h.BlockM = 100
	}
	if h.TurnProb == 0 {
		h.TurnProb = 0.25
	}
	for i := range h.Networks {
		r := &h.Networks[i]
		if r.RoadDistM == 0 {
			r.RoadDistM = 10
		}
		if r.Layout == "" {
			r.Layout = "line"
		}
		if r.QAM == 0 {
			r.QAM = 4
		}
		if r.Eta == 0 {
			r.Eta = 1
		}
		if r.InterferenceDBm == 0 {
			r.InterferenceDBm = math.Inf(-1)
		}
	}
}

// Validate checks every field; errors name it (prefix: "mobility.").
func (h *Drive) Validate() error {
	h.defaults()
	switch {
	case h.Kind != "highway" && h.Kind != "urban":
		return fmt.Errorf("kind: unknown drive %q (want highway or urban)", h.Kind)
	case !(h.BlockM >= 1):
		return fmt.Errorf("block_m: %v must be ≥ 1", h.BlockM)
	case !(h.TurnProb >= 0 && h.TurnProb <= 0.5):
		return fmt.Errorf("turn_prob: %v is outside [0, 0.5]", h.TurnProb)
	case !(h.SpeedKmh >= 0 && h.SpeedKmh <= 100000):
		return fmt.Errorf("speed_kmh: %v is outside [0, 100000]", h.SpeedKmh)
	case !(h.DurationS > 0 && h.DurationS <= 3600):
		return fmt.Errorf("duration_s: %v is outside (0, 3600]", h.DurationS)
	case !(h.StepMs >= 10 && h.StepMs <= 10000):
		return fmt.Errorf("step_ms: %v is outside [10, 10000]", h.StepMs)
	case len(h.Networks) == 0:
		return fmt.Errorf("networks: at least one is needed")
	case math.IsNaN(h.StartM) || math.IsInf(h.StartM, 0):
		return fmt.Errorf("start_m: %v is not a number", h.StartM)
	}
	for i, r := range h.Networks {
		if err := r.validate(); err != nil {
			return fmt.Errorf("networks[%d].%w", i, err)
		}
	}
	return nil
}

// validate checks one network's fields; errors name the field.
func (r Radio) validate() error {
	if err := r.validatePlace(); err != nil {
		return err
	}
	if err := r.validateBudget(); err != nil {
		return err
	}
	if r.Fading != nil {
		if err := r.Fading.validate(); err != nil {
			return fmt.Errorf("fading.%w", err)
		}
	}
	return nil
}

// validatePlace checks where the network's stations are and how the host
// moves past them.
func (r Radio) validatePlace() error {
	switch {
	case r.Name == "":
		return fmt.Errorf("name: missing")
	case r.SpeedKmh != nil && !(*r.SpeedKmh >= 0 && *r.SpeedKmh <= 100000):
		return fmt.Errorf("speed_kmh: %v is outside [0, 100000]", *r.SpeedKmh)
	case r.Layout != "line" && r.Layout != "hex":
		return fmt.Errorf("layout: unknown layout %q (want line or hex)", r.Layout)
	case !(r.SpacingM > 0):
		return fmt.Errorf("spacing_m: %v must be > 0", r.SpacingM)
	case !(r.RoadDistM > 0) && r.Layout == "line":
		return fmt.Errorf("road_dist_m: %v must be > 0", r.RoadDistM)
	}
	return nil
}

// validateBudget checks the link budget, loss, handover and wired fields.
func (r Radio) validateBudget() error {
	switch {
	case !(r.PathLossExp >= 1 && r.PathLossExp <= 8):
		return fmt.Errorf("path_loss_exp: %v is outside [1, 8]", r.PathLossExp)
	case !(r.BandwidthMHz > 0):
		return fmt.Errorf("bandwidth_mhz: %v must be > 0", r.BandwidthMHz)
	case !(r.Eta > 0 && r.Eta <= 1):
		return fmt.Errorf("eta: %v is outside (0, 1]", r.Eta)
	case !(r.MaxRateMbps > 0):
		return fmt.Errorf("max_rate_mbps: %v must be > 0", r.MaxRateMbps)
	case r.QAM < 4 || r.QAM&(r.QAM-1) != 0 || !isSquare(r.QAM):
		return fmt.Errorf("qam: %d must be a square power of two ≥ 4 (4, 16, 64, 256)", r.QAM)
	case r.FECBits < 0 || r.FECBits > 1000:
		return fmt.Errorf("fec_bits: %d is outside [0, 1000]", r.FECBits)
	case !(r.HandoverMs >= 0) || !(r.HysteresisDB >= 0):
		return fmt.Errorf("handover_ms, hysteresis_db: must be ≥ 0")
	case !(r.DelayMs >= 0) || !(r.JitterMs >= 0) || r.QueuePackets < 0:
		return fmt.Errorf("delay_ms, jitter_ms, queue_packets: must be ≥ 0")
	}
	return nil
}

func isSquare(m int) bool {
	l := int(math.Round(math.Sqrt(float64(m))))
	return l*l == m
}

// dBmToMW converts dBm to mW (−inf → 0).
func dBmToMW(d float64) float64 { return math.Pow(10, d/10) }

// RSS is the received power in dBm at distance r m: Y·R^−β of Eq. 2.16.
func (r Radio) RSS(distM float64) float64 {
	return r.TxPowerDBm - 10*r.PathLossExp*math.Log10(math.Max(distM, 1))
}

// SINR is Eq. 2.16 (linear) for a received power in dBm.
func (r Radio) SINR(rssDBm float64) float64 {
	return dBmToMW(rssDBm) / (dBmToMW(r.NoiseDBm) + dBmToMW(r.InterferenceDBm))
}

// Capacity is Eq. 2.15 in Mbit/s, capped at MaxRateMbps.
func (r Radio) Capacity(sinr float64) float64 {
	return math.Min(r.MaxRateMbps, r.Eta*r.BandwidthMHz*math.Log2(1+sinr))
}

// BER is Eq. 2.6 for square M-QAM (L = √M levels per dimension) with Q of
// Eq. 2.7.
func BER(snr float64, m int) float64 {
	l := math.Sqrt(float64(m))
	lg := math.Log2(l)
	arg := math.Sqrt(3 * lg / (l*l - 1) * 2 * snr / math.Log2(float64(m)))
	return 2 * (1 - 1/l) / lg * q(arg)
}

// q is the Gaussian tail Q(x) of Eq. 2.7.
func q(x float64) float64 { return 0.5 * math.Erfc(x/math.Sqrt2) }

// PacketLoss is Eq. 2.8: 1 − P[at most Ψ of Z bits wrong].
func PacketLoss(ber float64, z, psi int) float64 {
	if ber <= 0 {
		return 0
	}
	if ber >= 1 {
		return 1
	}
	ok := 0.0
	for i := 0; i <= psi && i <= z; i++ {
		lg := lgamma(z) - lgamma(i) - lgamma(z-i) + float64(i)*math.Log(ber) + float64(z-i)*math.Log1p(-ber)
		ok += math.Exp(lg)
	}
	return math.Min(1, math.Max(0, 1-ok))
}

func lgamma(n int) float64 { v, _ := math.Lgamma(float64(n + 1)); return v }

// point is a position in metres.
type point struct{ x, y float64 }

// station identifies a station: k on a line, (i, j) on a lattice.
type station struct{ i, j int }

// pos is where station st stands.
func (r Radio) pos(st station) point {
	if r.Layout == "hex" {
		return point{r.OffsetM + r.SpacingM*(float64(st.i)+0.5*float64(st.j&1)), r.RoadDistM + r.SpacingM*math.Sqrt(3)/2*float64(st.j)}
	}
	return point{r.OffsetM + float64(st.i)*r.SpacingM, r.RoadDistM}
}

// nearest returns the station nearest to p.
func (r Radio) nearest(p point) station {
	if r.Layout != "hex" {
		return station{i: int(math.Round((p.x - r.OffsetM) / r.SpacingM))}
	}
	row := r.SpacingM * math.Sqrt(3) / 2
	j0 := int(math.Round((p.y - r.RoadDistM) / row))
	best, bestD := station{}, math.Inf(1)
	for j := j0 - 1; j <= j0+1; j++ {
		i0 := int(math.Round((p.x-r.OffsetM)/r.SpacingM - 0.5*float64(j&1)))
		for i := i0 - 1; i <= i0+1; i++ {
			if d := r.dist(p, station{i, j}); d < bestD {
				best, bestD = station{i, j}, d
			}
		}
	}
	return best
}

func (r Radio) dist(p point, st station) float64 {
	s := r.pos(st)
	return math.Hypot(p.x-s.x, p.y-s.y)
}

// walk returns the host's position at t for network n: along x on the
// highway, a seeded turn-at-intersections walk on the urban grid.
func (h *Drive) walk() func(n int, t float64) point {
	if h.Kind != "urban" {
		return func(n int, t float64) point {
			speed := h.SpeedKmh
			if r := h.Networks[n]; r.SpeedKmh != nil {
				speed = *r.SpeedKmh
			}
			return point{h.StartM + speed/3.6*t, 0}
		}
	}
	// Precompute the corners of the urban walk.
	rng := rand.New(rand.NewPCG(h.Seed, 0x75726261)) // "urba"
	v := h.SpeedKmh / 3.6
	total := v * h.DurationS
	corners := []point{{h.StartM, 0}}
	dx, dy := 1.0, 0.0
	for done := 0.0; done < total+h.BlockM; done += h.BlockM {
		c := corners[len(corners)-1]
		corners = append(corners, point{c.x + dx*h.BlockM, c.y + dy*h.BlockM})
		switch u := rng.Float64(); {
		case u < h.TurnProb: // left
			dx, dy = -dy, dx
		case u < 2*h.TurnProb: // right
			dx, dy = dy, -dx
		}
	}
	return func(n int, t float64) point {
		if r := h.Networks[n]; r.SpeedKmh != nil && *r.SpeedKmh == 0 {
			return corners[0]
		}
		d := v * t
		k := min(int(d/h.BlockM), len(corners)-2)
		f := (d - float64(k)*h.BlockM) / h.BlockM
		a, b := corners[k], corners[k+1]
		return point{a.x + f*(b.x-a.x), a.y + f*(b.y-a.y)}
	}
}

// Trace samples every network along the drive.
func (h *Drive) Trace() ([][]Sample, error) {
	if err := h.Validate(); err != nil {
		return nil, err
	}
	out := make([][]Sample, len(h.Networks))
	at := h.walk()
	for n := range h.Networks {
		out[n] = h.traceNetwork(n, func(t float64) point { return at(n, t) })
	}
	return out, nil
}

// traceNetwork samples network n every step along the path at.
func (h *Drive) traceNetwork(n int, at func(t float64) point) []Sample {
	r := h.Networks[n]
	steps := int(h.DurationS*1000/h.StepMs) + 1
	fade := func() float64 { return 1 }
	threshold := 0.0 // no outage without fading
	if f := r.Fading; f != nil {
		rng := rand.New(rand.NewPCG(h.Seed, fadingStream(h.run, n)))
		fade = func() float64 { return NakagamiGain(rng, f.M) }
		threshold = f.threshold(r)
	}
	out := make([]Sample, 0, steps)
	serving := r.nearest(at(0))
	for s := 0; s < steps; s++ {
		t := float64(s) * h.StepMs / 1000
		p := at(t)
		rss := r.RSS(r.dist(p, serving))
		ho := false
		// Handover (thesis §2.6.2: at an RSS threshold): the best neighbour.
		if best := r.nearest(p); best != serving && rss < r.HandoverDBm {
			if nb := r.RSS(r.dist(p, best)); nb >= rss+r.HysteresisDB {
				serving, rss, ho = best, nb, true
			}
		}
		g := fade()
		sinr := r.SINR(rss) * g
		loss, outage := r.LinkFailureLoss(sinr, threshold)
		out = append(out, Sample{TimeS: t, PosM: p.x, PosYM: p.y, Station: serving.i, RSSdBm: rss,
			SINRdB: 10 * math.Log10(sinr), Gain: g, RateMbps: r.Capacity(sinr),
			Loss: loss, HandoverStartsNow: ho, Outage: outage})
	}
	return out
}

// Scenario generates the scenario: one path per network (both directions
// follow the radio; the wired part adds delay_ms each way), with a set event
// whenever rate or loss moved by more than 2 % (relative) or 0.001
// (absolute loss) since the last one, and an outage at each handover.
func (h *Drive) Scenario(name string) (*scenario.Scenario, error) {
	tr, err := h.Trace()
	if err != nil {
		return nil, err
	}
	sc := &scenario.Scenario{Name: name, Description: fmt.Sprintf("%s drive at %g km/h from %g m (generated)", h.Kind, h.SpeedKmh, h.StartM)}
	for n, r := range h.Networks {
		first := tr[n][0]
		l := scenario.Link{DelayMs: r.DelayMs, JitterMs: r.JitterMs, Loss: round(first.Loss), RateMbps: round(first.RateMbps), QueuePackets: r.QueuePackets}
		sc.Paths = append(sc.Paths, scenario.Path{Name: r.Name, Up: l, Down: l})
		lastRate, lastLoss := first.RateMbps, first.Loss
		for _, s := range tr[n][1:] {
			if s.HandoverStartsNow && r.HandoverMs > 0 {
				sc.Events = append(sc.Events, scenario.Event{AtS: s.TimeS, Path: r.Name, OutageS: r.HandoverMs / 1000})
			}
			if math.Abs(s.RateMbps-lastRate) > 0.02*lastRate || math.Abs(s.Loss-lastLoss) > math.Max(0.001, 0.02*lastLoss) {
				p, err := scenario.ParsePatch(fmt.Sprintf("{both: {rate_mbps: %s, loss: %s}}", num(s.RateMbps), num(s.Loss)))
				if err != nil {
					return nil, err
				}
				sc.Events = append(sc.Events, scenario.Event{AtS: s.TimeS, Path: r.Name, Set: p})
				lastRate, lastLoss = s.RateMbps, s.Loss
			}
		}
	}
	if err := sc.Validate(); err != nil {
		return nil, fmt.Errorf("generated scenario: %w", err)
	}
	return sc, nil
}

// round keeps 6 significant digits so generated files stay readable.
func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow(10, 5-math.Floor(math.Log10(math.Abs(v))))
	return math.Round(v*p) / p
}

func num(v float64) string {
	s := fmt.Sprintf("%.6g", round(v))
	if strings.ContainsAny(s, "e") { // YAML floats need a dot or exponent digits
		return fmt.Sprintf("%.8f", v)
	}
	return s
}
