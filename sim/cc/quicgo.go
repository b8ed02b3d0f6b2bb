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
	// quicGoInitialRTT is the smoothed RTT quic-go assumes before the
	// first sample (utils.DefaultInitialRTT); the pacer reads it.
	quicGoInitialRTT = 100 * time.Millisecond
	// The pacing rate is the window per smoothed RTT times these gains:
	// slow start must still be able to double the rate every round, and
	// congestion avoidance leaves room for RTT variation.
	quicGoSlowStartPacingGain = 2
	quicGoPacingGain          = 1.25
	// quicGoMaxBurstPackets: the window grows only while less than this
	// many packets of it are unused (isCwndLimited).
	quicGoMaxBurstPackets = 3
)

// QuicGo is quic-go v0.65.0's default congestion controller, which is Reno,
// not Cubic (internal/ackhandler builds its cubicSender with reno = true):
// a 40960-byte initial window, slow start with hybrid slow start (HyStart's
// delay-increase exit), congestion avoidance of one MSS per window, β = 0.7
// (renoBeta) once per recovery period, no growth during recovery, no
// growth while the sender does not use its window (with the pacer that
// happens: the pacer, not the window, may be what holds packets back), and
// the pacing rate of cc.Pacer. Not modelled: the spurious-loss undo (the
// simulator's paths do not reorder).
type QuicGo struct {
	*NewReno
	srtt time.Duration // smoothed RTT, for the pacing rate
	// inFlight mirrors the connection's bytes in flight; priorInFlight is
	// its value before the ACK being processed (quic-go's priorInFlight).
	// ACKs are told apart by their arrival time: all packets one ACK frame
	// acknowledges arrive with the same now.
	inFlight, priorInFlight int
	ackAt                   time.Duration
	lastSentAt              time.Duration // HyStart's lastSentPacketNumber, by send time
	roundEnd                time.Duration // a round ends on the ACK of a packet sent after this
	roundStarted            bool
	// roundEndedAt is the arrival time of the ACK frame that acknowledged a
	// packet sent after roundEnd (-1: none pending). quic-go takes that
	// frame's RTT sample into the ending round and starts the next round
	// only on the following frame, so the next round's end includes the
	// packets this frame released. Starting it at once would pin every
	// round's end to the last packet before the frame, and in slow start's
	// ACK-clocked flights that is the last packet before an idle gap: the
	// next round's first eight samples would then always come from packets
	// sent into an empty queue, and HyStart would fire a round late.
	roundEndedAt  time.Duration
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
	return &QuicGo{NewReno: r, srtt: quicGoInitialRTT, ackAt: -1, roundEndedAt: -1}
}

// PacingRate is quic-go's: the window per smoothed RTT, ×2 in slow start
// and ×1.25 otherwise.
func (q *QuicGo) PacingRate(time.Duration) float64 {
	gain := quicGoPacingGain
	if q.InSlowStart() {
		gain = quicGoSlowStartPacingGain
	}
	return gain * float64(q.cwnd) / q.srtt.Seconds()
}

func (q *QuicGo) OnPacketSent(now time.Duration, _, bytesInFlight int) {
	q.lastSentAt, q.inFlight = now, bytesInFlight
}

// OvershootsWindow: quic-go sends while bytes in flight are below the
// window (cc.WindowOvershoot).
func (q *QuicGo) OvershootsWindow() bool { return true }

// cwndLimited is quic-go's isCwndLimited: the window is (nearly) used, or
// in slow start more than half of it is.
func (q *QuicGo) cwndLimited() bool {
	if q.priorInFlight >= q.cwnd {
		return true
	}
	return (q.InSlowStart() && q.priorInFlight > q.cwnd/2) || q.cwnd-q.priorInFlight <= quicGoMaxBurstPackets*q.cfg.MSS
}

// OnAck is NewReno's, and marks HyStart's round as ended by this ACK frame
// when it acknowledges a packet sent after the round began (quic-go:
// HybridSlowStart.OnPacketAcked, called in slow start outside recovery,
// after the frame's RTT sample; see roundEndedAt).
// A sender that does not use its window leaves recovery but does not grow.
func (q *QuicGo) OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT) {
	if now != q.ackAt {
		q.ackAt, q.priorInFlight = now, q.inFlight
	}
	q.inFlight -= bytes
	inRecovery := q.inRecovery && sentAt <= q.recoveryStart
	if !inRecovery && q.InSlowStart() && q.roundStarted && sentAt > q.roundEnd {
		q.roundEndedAt = now
	}
	if !inRecovery && !q.cwndLimited() {
		q.inRecovery = false
		return
	}
	q.NewReno.OnAck(now, bytes, sentAt, rtt)
}

// OnLoss is NewReno's with β = 0.7.
func (q *QuicGo) OnLoss(now time.Duration, bytes int, sentAt time.Duration) {
	q.inFlight -= bytes
	q.NewReno.OnLoss(now, bytes, sentAt)
}

// OnRTTSample is quic-go's MaybeExitSlowStart (HybridSlowStart.
// ShouldExitSlowStart), which it calls on every ACK frame that newly
// acknowledges the largest packet, before the frame's packets are
// processed: the connection calls OnAck first, so a round ended by this
// frame (roundEndedAt == now) ends only after its sample is counted.
func (q *QuicGo) OnRTTSample(now time.Duration, rtt RTT) {
	q.srtt = rtt.Smoothed
	if q.roundEndedAt >= 0 && q.roundEndedAt != now {
		q.roundStarted, q.roundEndedAt = false, -1 // ended by an earlier frame
	}
	if !q.InSlowStart() {
		return
	}
	defer func() {
		if q.roundEndedAt == now {
			q.roundStarted, q.roundEndedAt = false, -1
		}
	}()
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
	q.roundStarted, q.found, q.roundEndedAt = false, false, -1
}
