package runner

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/hetquic/hetquic/scenario"
)

// Model is the offline task-completion-time model of a path. One task is a
// request on an established QUIC connection and its response of size bytes:
//
//		TCT = Σ_{i=1..r} RTT_i + 8·size/rate + L·(RTT̄ + max_ack_delay), capped at timeout
//
//	  - RTT_i: one draw per flight, lognormal (the heavy-tailed TCT of PCM
//	    §4.1, Fig. 8) with mean up.delay+down.delay and standard deviation
//	    sqrt(up.jitter² + down.jitter²); "normal" draws a Gaussian clipped at 0;
//	  - r: the flights slow start needs for n = ⌈size/packet⌉ packets with an
//	    initial window of w packets, the smallest r with w·(2^r − 1) ≥ n
//	    (one flight for PCM's 5 KB);
//	  - rate: the downstream rate (0: unlimited);
//	  - L: lost packets, Binomial(n, down loss) + Binomial(1, up loss) with the
//	    links' mean loss; each costs one more round trip plus QUIC's
//	    max_ack_delay, which is what recovery by packet threshold or a PTO
//	    with a settled RTT estimate costs;
//	  - a path that loses everything (loss 1: an outage) takes timeout.
//
// Its mean and variance are exact (ignoring the cap), so the oracle, regret
// and hit rate need no sampling.
type Model struct {
	Dist                 string  `yaml:"dist"`                   // lognormal (default) or normal
	InitialWindowPackets int     `yaml:"initial_window_packets"` // default 10 (RFC 9002)
	PacketBytes          int     `yaml:"packet_bytes"`           // default 1200
	MaxAckDelayMs        float64 `yaml:"max_ack_delay_ms"`       // default 25 (RFC 9000)
	TimeoutMs            float64 `yaml:"timeout_ms"`             // default 10000
}

func (m *Model) setDefaults() {
	if m.Dist == "" {
		m.Dist = "lognormal"
	}
	if m.InitialWindowPackets == 0 {
		m.InitialWindowPackets = 10
	}
	if m.PacketBytes == 0 {
		m.PacketBytes = 1200
	}
	if m.MaxAckDelayMs == 0 {
		m.MaxAckDelayMs = 25
	}
	if m.TimeoutMs == 0 {
		m.TimeoutMs = 10000
	}
}

func (m *Model) validate() error {
	switch {
	case m.Dist != "lognormal" && m.Dist != "normal":
		return fmt.Errorf("dist: %q is not lognormal or normal", m.Dist)
	case m.InitialWindowPackets < 1:
		return fmt.Errorf("initial_window_packets: %d must be ≥ 1", m.InitialWindowPackets)
	case m.PacketBytes < 1:
		return fmt.Errorf("packet_bytes: %d must be ≥ 1", m.PacketBytes)
	case !(m.MaxAckDelayMs >= 0) || math.IsInf(m.MaxAckDelayMs, 1):
		return fmt.Errorf("max_ack_delay_ms: %v must be a finite number ≥ 0", m.MaxAckDelayMs)
	case !finitePositive(m.TimeoutMs):
		return fmt.Errorf("timeout_ms: %v must be a finite number > 0", m.TimeoutMs)
	}
	return nil
}

// Moments are a path's true mean and variance of TCT (ms) for one task.
type Moments struct{ Mean, Var float64 }

// task is the model of one task of a given size on one path.
type task struct {
	rttMean, rttStd float64 // one round trip
	flights         int
	txMs            float64 // serialisation at the bottleneck
	packets         int
	lossUp, lossDn  float64
	penaltyMs       float64 // per lost packet
	outage          bool
	timeoutMs       float64
	normal          bool
	// lognormal parameters of one RTT draw
	mu, sigma float64
}

func (m *Model) task(p scenario.Path, size int) task {
	t := task{
		rttMean:   p.Up.MeanDelayMs() + p.Down.MeanDelayMs(),
		rttStd:    math.Hypot(p.Up.JitterMs, p.Down.JitterMs),
		packets:   max(1, (size+m.PacketBytes-1)/m.PacketBytes),
		lossUp:    p.Up.MeanLoss(),
		lossDn:    p.Down.MeanLoss(),
		timeoutMs: m.TimeoutMs,
		normal:    m.Dist == "normal",
	}
	for w := m.InitialWindowPackets; w*((1<<t.flights)-1) < t.packets; {
		t.flights++
	}
	t.flights = max(t.flights, 1)
	if p.Down.RateMbps > 0 {
		t.txMs = float64(size) * 8 / (p.Down.RateMbps * 1000)
	}
	t.penaltyMs = t.rttMean + m.MaxAckDelayMs
	t.outage = t.lossUp >= 1 || t.lossDn >= 1
	if t.rttMean > 0 {
		// Lognormal with the given mean and standard deviation.
		t.sigma = math.Sqrt(math.Log1p((t.rttStd * t.rttStd) / (t.rttMean * t.rttMean)))
		t.mu = math.Log(t.rttMean) - t.sigma*t.sigma/2
	}
	return t
}

// moments returns the exact mean and variance of the model (without the
// timeout cap, which only outages reach).
func (t task) moments() Moments {
	if t.outage {
		return Moments{Mean: t.timeoutMs}
	}
	n := float64(t.packets)
	meanL := n*t.lossDn + t.lossUp
	varL := n*t.lossDn*(1-t.lossDn) + t.lossUp*(1-t.lossUp)
	f := float64(t.flights)
	return Moments{
		Mean: f*t.rttMean + t.txMs + meanL*t.penaltyMs,
		Var:  f*t.rttStd*t.rttStd + varL*t.penaltyMs*t.penaltyMs,
	}
}

// sample draws one TCT in ms.
func (t task) sample(rng *rand.Rand) float64 {
	if t.outage {
		return t.timeoutMs
	}
	v := t.txMs
	for range t.flights {
		v += t.rtt(rng)
	}
	lost := binomial(rng, t.packets, t.lossDn) + binomial(rng, 1, t.lossUp)
	v += float64(lost) * t.penaltyMs
	// A task never completes in no time (pathsel needs samples > 0).
	return min(max(v, 1e-6), t.timeoutMs)
}

func (t task) rtt(rng *rand.Rand) float64 {
	switch {
	case t.rttStd == 0:
		return t.rttMean
	case t.normal:
		return max(0, t.rttMean+t.rttStd*rng.NormFloat64())
	default:
		return math.Exp(t.mu + t.sigma*rng.NormFloat64())
	}
}

// binomial draws Binomial(n, p) by skipping geometric gaps between
// successes: O(successes) instead of O(n) for the rare losses of big tasks.
func binomial(rng *rand.Rand, n int, p float64) int {
	switch {
	case p <= 0:
		return 0
	case p >= 1:
		return n
	}
	logq := math.Log1p(-p)
	k, i := 0, 0
	for {
		// Gap before the next success: ⌊ln U / ln(1−p)⌋ failures.
		i += int(math.Log(1-rng.Float64())/logq) + 1
		if i > n {
			return k
		}
		k++
	}
}
