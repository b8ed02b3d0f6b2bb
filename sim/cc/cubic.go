package cc

import (
	"math"
	"time"
)

// RFC 9438 constants.
const (
	cubicC    = 0.4 // §5.1: scaling constant C
	cubicBeta = 0.7 // §4.6: multiplicative decrease factor β_cubic
)

// Cubic is RFC 9438 CUBIC: slow start as NewReno, then the window follows
// W_cubic(t) = C(t−K)³ + W_max (Eq. 1) with the Reno-friendly estimate
// W_est (Eq. 4) as a floor, fast convergence (§4.7), β = 0.7.
type Cubic struct {
	cfg           Config
	cwnd          float64 // bytes
	ssthresh      int
	wMax          float64 // bytes, window before the last reduction
	wLastMax      float64
	k             float64 // seconds, Eq. 2
	epochStart    time.Duration
	epochSet      bool
	wEst          float64 // bytes, Eq. 4
	recoveryStart time.Duration
	inRecovery    bool
}

// NewCubic returns a CUBIC controller at its initial window.
func NewCubic(cfg Config) *Cubic {
	return &Cubic{cfg: cfg, cwnd: float64(cfg.initialWindow()), ssthresh: math.MaxInt, recoveryStart: -1}
}

func (c *Cubic) Name() string      { return "cubic" }
func (c *Cubic) Window() int       { return int(c.cwnd) }
func (c *Cubic) InSlowStart() bool { return int(c.cwnd) < c.ssthresh }
func (c *Cubic) Ssthresh() int     { return c.ssthresh }

func (c *Cubic) OnPacketSent(time.Duration, int, int) {}
func (c *Cubic) OnRTTSample(time.Duration, RTT)       {}

// OnAck grows the window: slow start below ssthresh, else toward the target
// W_cubic(t + RTT) (RFC 9438 §4.2), never below W_est (§4.3).
func (c *Cubic) OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT) {
	if c.inRecovery && sentAt <= c.recoveryStart {
		return
	}
	c.inRecovery = false
	mss := float64(c.cfg.MSS)
	if int(c.cwnd) < c.ssthresh {
		c.cwnd += float64(bytes)
		return
	}
	if !c.epochSet {
		c.epochSet, c.epochStart = true, now
		if c.wMax < c.cwnd { // no reduction seen yet: start at the plateau
			c.wMax, c.k = c.cwnd, 0
		} else {
			c.k = math.Cbrt((c.wMax - c.cwnd) / mss / cubicC) // Eq. 2
		}
		c.wEst = c.cwnd
	}
	srtt := rtt.Smoothed
	if srtt <= 0 {
		srtt = 100 * time.Millisecond
	}
	t := (now - c.epochStart + srtt).Seconds()
	target := cubicC*math.Pow(t-c.k, 3)*mss + c.wMax // Eq. 1, bytes
	// §4.3 Reno-friendly region, Eq. 4 with α_cubic = 3(1−β)/(1+β).
	alpha := 3 * (1 - cubicBeta) / (1 + cubicBeta)
	c.wEst += alpha * mss * float64(bytes) / c.cwnd
	switch {
	case target < c.cwnd:
		// §4.4: concave/convex regions never shrink the window on ACK.
	case target > 1.5*c.cwnd:
		c.cwnd += 0.5 * float64(bytes) // §4.4: growth at most 1.5x per RTT
	default:
		c.cwnd += (target - c.cwnd) / c.cwnd * float64(bytes)
	}
	if c.wEst > c.cwnd {
		c.cwnd = c.wEst
	}
}

// OnLoss applies β and fast convergence once per recovery period (§4.6, §4.7).
func (c *Cubic) OnLoss(now time.Duration, _ int, sentAt time.Duration) {
	if c.inRecovery && sentAt <= c.recoveryStart {
		return
	}
	c.inRecovery, c.recoveryStart = true, now
	if c.cwnd < c.wLastMax { // §4.7 fast convergence
		c.wLastMax = c.cwnd
		c.wMax = c.cwnd * (1 + cubicBeta) / 2
	} else {
		c.wLastMax = c.cwnd
		c.wMax = c.cwnd
	}
	c.cwnd = max(c.cwnd*cubicBeta, float64(c.cfg.minWindow()))
	c.ssthresh = int(c.cwnd)
	c.epochSet = false
}

// OnPersistentCongestion resets to the minimum window (§4.8 / RFC 9002 §7.6.2).
func (c *Cubic) OnPersistentCongestion(now time.Duration) {
	c.wLastMax, c.wMax = c.cwnd, c.cwnd
	c.ssthresh = max(int(c.cwnd*cubicBeta), c.cfg.minWindow())
	c.cwnd = float64(c.cfg.minWindow())
	c.epochSet, c.inRecovery, c.recoveryStart = false, false, now
}
