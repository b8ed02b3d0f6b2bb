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
	// perAck grows once per ACK frame as ns-3's TcpNewReno does
	// (newreno-ns3); grow is set by OnAck when the frame may grow the window.
	perAck, grow bool
}

// NewNewReno returns a NewReno controller at its initial window.
func NewNewReno(cfg Config) *NewReno {
	return &NewReno{cfg: cfg, name: "newreno", beta: 0.5, cwnd: cfg.initialWindow(), ssthresh: math.MaxInt, recoveryStart: -1}
}

// NewNewRenoNS3 is NewReno with ns-3 3.37 TcpNewReno's window growth, for
// like-for-like comparisons with ns-3: per ACK received, not per
// byte acknowledged — one MSS per ACK in slow start
// (TcpNewReno::SlowStart) and max(1, MSS²/cwnd) bytes per ACK in
// congestion avoidance (TcpNewReno::CongestionAvoidance). With an ACK for
// every second packet it therefore grows half as fast as RFC 9002's
// NewReno. Loss response and recovery stay RFC 9002's.
func NewNewRenoNS3(cfg Config) *NewReno {
	r := NewNewReno(cfg)
	r.name, r.perAck = "newreno-ns3", true
	return r
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
	if r.perAck {
		r.grow = true
		return
	}
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

// OnAckEvent is ns-3's per-ACK growth (newreno-ns3 only).
func (r *NewReno) OnAckEvent(time.Duration) {
	if !r.perAck || !r.grow {
		return
	}
	r.grow = false
	mss := r.cfg.MSS
	if r.cwnd < r.ssthresh {
		r.cwnd += mss
		return
	}
	r.cwnd += max(1, mss*mss/r.cwnd)
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
	r.ackedInCA, r.grow = 0, false
}

// OnPersistentCongestion sets the window to the minimum (RFC 9002 §7.6.2).
func (r *NewReno) OnPersistentCongestion(now time.Duration) {
	r.ssthresh = max(r.cwnd/2, r.cfg.minWindow())
	r.cwnd = r.cfg.minWindow()
	r.inRecovery, r.recoveryStart = false, now
	r.ackedInCA = 0
}
