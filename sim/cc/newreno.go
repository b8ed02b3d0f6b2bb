package cc

import (
	"math"
	"time"
)

// NewReno is RFC 9002 §7's controller: slow start, congestion avoidance with
// one MSS per window of acknowledged bytes, and one halving per recovery
// period (a loss of a packet sent before the recovery start is ignored).
type NewReno struct {
	cfg           Config
	name          string
	beta          float64 // multiplicative decrease on a loss episode
	cwnd          int
	ssthresh      int
	recoveryStart time.Duration
	inRecovery    bool
	ackedInCA     int // bytes acknowledged since the last CA increase
}

// NewNewReno returns a NewReno controller at its initial window.
func NewNewReno(cfg Config) *NewReno {
	return &NewReno{cfg: cfg, name: "newreno", beta: 0.5, cwnd: cfg.initialWindow(), ssthresh: math.MaxInt, recoveryStart: -1}
}

func (r *NewReno) Name() string      { return r.name }
func (r *NewReno) Window() int       { return r.cwnd }
func (r *NewReno) InSlowStart() bool { return r.cwnd < r.ssthresh }
func (r *NewReno) Ssthresh() int     { return r.ssthresh }

func (r *NewReno) OnPacketSent(time.Duration, int, int) {}
func (r *NewReno) OnRTTSample(time.Duration, RTT)       {}

// OnAck grows the window (RFC 9002 §7.3.1, §7.3.3), except for packets sent
// during recovery's start (§7.3.2 ends recovery on their ACK).
func (r *NewReno) OnAck(now time.Duration, bytes int, sentAt time.Duration, _ RTT) {
	if r.inRecovery && sentAt <= r.recoveryStart {
		return
	}
	r.inRecovery = false
	if r.cwnd < r.ssthresh {
		r.cwnd += bytes
		return
	}
	r.ackedInCA += bytes
	if r.ackedInCA >= r.cwnd {
		r.ackedInCA -= r.cwnd
		r.cwnd += r.cfg.MSS
	}
}

// OnLoss multiplies the window by β once per recovery period (RFC 9002
// §7.3.2, kLossReductionFactor = 0.5; quic-go 0.7).
func (r *NewReno) OnLoss(now time.Duration, _ int, sentAt time.Duration) {
	if r.inRecovery && sentAt <= r.recoveryStart {
		return
	}
	r.inRecovery, r.recoveryStart = true, now
	r.ssthresh = max(int(float64(r.cwnd)*r.beta), r.cfg.minWindow())
	r.cwnd = r.ssthresh
	r.ackedInCA = 0
}

// OnPersistentCongestion sets the window to the minimum (RFC 9002 §7.6.2).
func (r *NewReno) OnPersistentCongestion(now time.Duration) {
	r.ssthresh = max(r.cwnd/2, r.cfg.minWindow())
	r.cwnd = r.cfg.minWindow()
	r.inRecovery, r.recoveryStart = false, now
	r.ackedInCA = 0
}
