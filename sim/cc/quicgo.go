package cc

import "time"

// quic-go v0.65.0's constants (internal/congestion/cubic_sender.go,
// hybrid_slow_start.go).
const (
	// quicGoInitialWindow is 32 packets of quic-go's 1280-byte initial
	// datagram size: the window is set before path MTU discovery raises the
	// packet size.
	quicGoInitialWindow = 32 * 1280
	quicGoRenoBeta      = 0.7
	// Hybrid slow start (Chromium's HyStart as quic-go has it): from 16
	// packets of window, the least of the first 8 RTT samples of a round
	// above min RTT + clamp(min RTT/8, 4 ms, 16 ms) ends slow start.
	hystartLowWindowPackets = 16
	hystartMinSamples       = 8
	hystartMinThreshold     = 4 * time.Millisecond
	hystartMaxThreshold     = 16 * time.Millisecond
)

// QuicGo is quic-go v0.65.0's default congestion controller, which is Reno,
// not Cubic (internal/ackhandler builds its cubicSender with reno = true):
// a 40960-byte initial window, slow start with hybrid slow start (HyStart's
// delay-increase exit), congestion avoidance of one MSS per window, β = 0.7
// (renoBeta) once per recovery period, no growth during recovery. Not
// modelled: its pacer, the spurious-loss undo (the simulator's paths do not
// reorder), and the growth freeze when not window-limited (bulk senders
// here always are).
type QuicGo struct {
	*NewReno
	lastSentAt    time.Duration // HyStart's lastSentPacketNumber, by send time
	roundEnd      time.Duration // a round ends on the ACK of a packet sent after this
	roundStarted  bool
	currentMinRTT time.Duration
	samples       int
	found         bool
}

// NewQuicGo returns quic-go's Reno at its initial window (registry name
// "quicgo").
func NewQuicGo(cfg Config) *QuicGo {
	if cfg.InitialWindow <= 0 {
		cfg.InitialWindow = quicGoInitialWindow
	}
	r := NewNewReno(cfg)
	r.name, r.beta = "quicgo", quicGoRenoBeta
	return &QuicGo{NewReno: r}
}

func (q *QuicGo) OnPacketSent(now time.Duration, _, _ int) { q.lastSentAt = now }

// OnAck is NewReno's, and ends HyStart's round on the ACK of a packet sent
// after the round began (quic-go: HybridSlowStart.OnPacketAcked, called in
// slow start outside recovery).
func (q *QuicGo) OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT) {
	inRecovery := q.inRecovery && sentAt <= q.recoveryStart
	if !inRecovery && q.InSlowStart() && sentAt > q.roundEnd {
		q.roundStarted = false
	}
	q.NewReno.OnAck(now, bytes, sentAt, rtt)
}

// OnRTTSample is quic-go's MaybeExitSlowStart (HybridSlowStart.
// ShouldExitSlowStart), which it calls on every RTT sample.
func (q *QuicGo) OnRTTSample(now time.Duration, rtt RTT) {
	if !q.InSlowStart() {
		return
	}
	if !q.roundStarted {
		q.roundStarted, q.roundEnd = true, q.lastSentAt
		q.currentMinRTT, q.samples = 0, 0
	}
	if !q.found {
		q.samples++
		if q.samples <= hystartMinSamples && (q.currentMinRTT == 0 || rtt.Latest < q.currentMinRTT) {
			q.currentMinRTT = rtt.Latest
		}
		if q.samples == hystartMinSamples {
			th := min(max(rtt.Min/8, hystartMinThreshold), hystartMaxThreshold)
			q.found = q.currentMinRTT > rtt.Min+th
		}
	}
	if q.found && q.cwnd >= hystartLowWindowPackets*q.cfg.MSS {
		q.ssthresh = q.cwnd // leave slow start
	}
}

// OnPersistentCongestion is NewReno's; HyStart starts over.
func (q *QuicGo) OnPersistentCongestion(now time.Duration) {
	q.NewReno.OnPersistentCongestion(now)
	q.roundStarted, q.found = false, false
}
