package env

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/sim"
)

// PathModel is one access network of §5.5.1's LTE + Wi-Fi setting, as
// links of hetquic's simulator whose rate, delay and loss vary over time.
type PathModel struct {
	Name string
	// MedianMbps is the median downlink rate (§5.5.1: Wi-Fi ≈ 40, LTE ≈
	// 20 Mbit/s, from the FCC and HSDPA traces).
	MedianMbps float64
	// RateSigma is the log-normal spread of the rate and RateRho its
	// correlation from one RateEpoch to the next (AR(1) in log space),
	// which gives the slow fades and fast dips of the mobile traces.
	RateSigma, RateRho float64
	// OneWay is the base propagation delay each way; Jitter the standard
	// deviation of per-packet extra delay (half-normal each way, as the
	// simulator's links draw it: mean ≈ 1.33·Jitter); DelayMax the top of
	// a slowly varying extra round-trip delay (uniform per DelayEpoch). The
	// mean unloaded RTT, 2·OneWay + 2·1.33·Jitter + DelayMax/2, is §5.5.1's
	// 30 ms for LTE and 20 ms for Wi-Fi (its RTT traces come from ping,
	// without the video's own load; queueing behind the video adds to it;
	// TestNetworkMatchesThesis pings the paths).
	OneWay, Jitter, DelayMax time.Duration
	// MaxLoss bounds the loss rate, drawn uniformly in [0, MaxLoss] every
	// LossEpoch (§5.5.1: "controlled by a uniform random variable"; the
	// thesis gives no range). Default 0.2 %: wireless link layers retransmit
	// most radio losses, and at 1 % a loss-based controller (Mathis:
	// 1.22·MSS/(RTT·√p) ≈ 5 Mbit/s at 30 ms) could not use the 20–40
	// Mbit/s the paths offer.
	MaxLoss float64
}

// Epochs of the time-varying link parameters.
const (
	RateEpoch  = 100 * time.Millisecond // the HSDPA/FCC traces' granularity is ~1 s; 100 ms adds fast fading
	DelayEpoch = 500 * time.Millisecond
	LossEpoch  = time.Second
	// queueBytes bounds each link's drop-tail queue: 100 ms at the median
	// LTE rate, a cellular base station's buffer.
	queueBytes = 250_000
)

// LTE and WiFi are §5.5.1's two paths.
var (
	LTE  = PathModel{Name: "lte", MedianMbps: 20, RateSigma: 0.4, RateRho: 0.9, OneWay: 11350 * time.Microsecond, Jitter: 2 * time.Millisecond, DelayMax: 4 * time.Millisecond, MaxLoss: 0.002}
	WiFi = PathModel{Name: "wifi", MedianMbps: 40, RateSigma: 0.35, RateRho: 0.9, OneWay: 7 * time.Millisecond, Jitter: 1500 * time.Microsecond, DelayMax: 4 * time.Millisecond, MaxLoss: 0.002}
)

// Validate checks a path model; errors name the field.
func (p PathModel) Validate() error {
	switch {
	case !(p.MedianMbps > 0):
		return fmt.Errorf("path %q: median_mbps %v must be > 0", p.Name, p.MedianMbps)
	case p.RateSigma < 0 || p.RateRho < 0 || p.RateRho >= 1:
		return fmt.Errorf("path %q: rate_sigma %v ≥ 0 and rate_rho %v in [0, 1) required", p.Name, p.RateSigma, p.RateRho)
	case p.OneWay < 0 || p.Jitter < 0 || p.DelayMax < 0:
		return fmt.Errorf("path %q: delays must be ≥ 0", p.Name)
	case p.MaxLoss < 0 || p.MaxLoss >= 0.5:
		return fmt.Errorf("path %q: max_loss %v must be in [0, 0.5)", p.Name, p.MaxLoss)
	}
	return nil
}

// netPath is one path's links and the process that varies them.
type netPath struct {
	model     PathModel
	down, up  *sim.Link
	rng       *rand.Rand
	logRate   float64 // AR(1) state, in units of RateSigma
	extra     time.Duration
	loss      float64
	rateTrace []float64 // Mbit/s per RateEpoch, for reports
}

func newNetPath(s *sim.Sim, m PathModel, idx int) *netPath {
	p := &netPath{model: m, rng: s.Rand(fmt.Sprintf("ride/net/%d/%s", idx, m.Name))}
	p.logRate = p.rng.NormFloat64()
	p.extra = time.Duration(p.rng.Float64() * float64(m.DelayMax))
	p.loss = p.rng.Float64() * m.MaxLoss
	p.down = sim.NewLink(s, m.Name+"/down", p.params(true))
	p.up = sim.NewLink(s, m.Name+"/up", p.params(false))
	var tick func()
	next := time.Duration(0)
	tick = func() {
		now := s.Now()
		p.logRate = m.RateRho*p.logRate + math.Sqrt(1-m.RateRho*m.RateRho)*p.rng.NormFloat64()
		if now%DelayEpoch == 0 {
			p.extra = time.Duration(p.rng.Float64() * float64(m.DelayMax))
		}
		if now%LossEpoch == 0 {
			p.loss = p.rng.Float64() * m.MaxLoss
		}
		p.down.SetParams(p.params(true))
		p.up.SetParams(p.params(false))
		next += RateEpoch
		s.At(next, tick)
	}
	next = RateEpoch
	s.At(next, tick)
	return p
}

// rateMbps is the current downlink rate.
func (p *netPath) rateMbps() float64 {
	return p.model.MedianMbps * math.Exp(p.model.RateSigma*p.logRate)
}

func (p *netPath) params(down bool) sim.LinkParams {
	lp := sim.LinkParams{Delay: p.model.OneWay + p.extra/2, Jitter: p.model.Jitter, QueueBytes: queueBytes}
	if down {
		lp.RateBps = p.rateMbps() * 1e6
		lp.Loss = p.loss
		p.rateTrace = append(p.rateTrace, p.rateMbps())
	}
	return lp
}

// rateMeter measures a path's delivery rate: bytes delivered per bucket,
// and the largest bucket rate over the last window (a bottleneck-bandwidth
// estimate that survives the application's idle gaps, as BBR's max filter).
type rateMeter struct {
	buckets [rateBuckets]float64
	at      [rateBuckets]int64 // bucket number each slot holds
}

const (
	rateBucket  = 50 * time.Millisecond
	rateBuckets = 20 // one second
)

func (r *rateMeter) add(now time.Duration, bytes float64) {
	n := int64(now / rateBucket)
	k := n % rateBuckets
	if r.at[k] != n {
		r.at[k], r.buckets[k] = n, 0
	}
	r.buckets[k] += bytes
}

// bps is the highest rate of the complete buckets in the last second.
func (r *rateMeter) bps(now time.Duration) float64 {
	n := int64(now / rateBucket)
	best := 0.0
	for k := range r.buckets {
		if r.at[k] < n && r.at[k] >= n-rateBuckets {
			best = math.Max(best, r.buckets[k])
		}
	}
	return best * 8 / rateBucket.Seconds()
}
