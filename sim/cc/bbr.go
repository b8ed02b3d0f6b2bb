package cc

import (
	"math"
	"time"
)

// BBR v1 (Cardwell et al., "BBR: congestion-based congestion control", ACM
// Queue 2016; draft-cardwell-iccrg-bbr-congestion-control-00): a model of
// the path from a windowed max of delivery-rate samples (BtlBw, 10 round
// trips) and a windowed min of RTT samples (RTprop, 10 s), and the states
// Startup → Drain → ProbeBW (gain cycling) ↔ ProbeRTT.
//
// BBR paces (cc.Pacer): the sending rate is pacing_gain·BtlBw, which is how
// it probes (1.25) and drains (0.75, Drain's 1/2.885) without building a
// standing queue. The window only bounds what is in flight: cwnd_gain·BDP
// plus three send quanta (cwnd_gain 2.885 in Startup and Drain, 2 in
// ProbeBW), reached gradually as packets are delivered, and 4 packets in
// ProbeRTT. Loss does not change the model (v1; its packet conservation
// during recovery is not modelled); a persistent congestion (PTO) holds the
// window at 4 packets until the next ACK, as v1's RTO handling does.
type BBR struct {
	cfg   Config
	state BBRState

	// delivery-rate sampling (draft §4.1.2): per send time, the delivered
	// count and its time when the packet left.
	delivered     float64 // bytes acknowledged so far
	deliveredTime time.Duration
	snaps         map[time.Duration]bbrSnap

	round          int     // packet-timed round trips
	nextRoundDeliv float64 // delivered count that ends the round
	roundStart     bool
	bwSamples      [bbrBwWindow]float64 // max filter: best rate per round, ring
	fullBw         float64
	fullBwCount    int
	filledPipe     bool
	rtProp         time.Duration
	rtPropStamp    time.Duration
	rtPropExpired  bool
	seenRTT        bool
	probeRTTDone   time.Duration
	probeRTTRound  bool // a round ended since ProbeRTT's inflight reached 4 packets
	cycleIdx       int
	cycleStamp     time.Duration
	pacingRate     float64 // bytes/s
	cwnd           int
	inflight       int  // mirrors the connection's bytes in flight
	lostSinceAck   bool // a loss since the last ACK (ProbeBW's probe phase ends on it)
	collapsed      bool
	sig            Signals
	lossRound      int
	lossCounted    bool
}

type bbrSnap struct {
	delivered float64
	at        time.Duration
	n         int // packets sent at this instant still outstanding
}

// BBRState is BBR's state machine state.
type BBRState int

// The BBR v1 states.
const (
	BBRStartup BBRState = iota
	BBRDrain
	BBRProbeBW
	BBRProbeRTT
)

func (s BBRState) String() string {
	return [...]string{"startup", "drain", "probe_bw", "probe_rtt"}[s]
}

// BBR v1 constants (draft-cardwell-iccrg-bbr-congestion-control-00 §4).
const (
	bbrHighGain       = 2.885 // 2/ln 2: Startup pacing and cwnd gain
	bbrCwndGain       = 2.0
	bbrBwWindow       = 10 // rounds of the BtlBw max filter
	bbrRTpropWindow   = 10 * time.Second
	bbrProbeRTTTime   = 200 * time.Millisecond
	bbrFullBwThresh   = 1.25 // Startup ends when BtlBw grew < 25 % ...
	bbrFullBwRounds   = 3    // ... for 3 rounds
	bbrMinPipePkts    = 4
	bbrCycleLen       = 8
	bbrProbeGain      = 1.25
	bbrDrainCycleGain = 0.75
	// bbrNoRTT stands in for the smoothed RTT before the first sample when
	// setting the initial pacing rate (draft §4.2.1: 1 ms).
	bbrNoRTT = time.Millisecond
	// Send quantum thresholds (draft §4.2.2): 1 packet below 1.2 Mbit/s, 2
	// below 24 Mbit/s, else 1 ms of pacing up to 64 KB.
	bbrQuantumLow  = 1.2e6 / 8
	bbrQuantumHigh = 24e6 / 8
	bbrQuantumMax  = 64 << 10
)

// NewBBR returns a BBR v1 controller in Startup.
func NewBBR(cfg Config) *BBR {
	b := &BBR{cfg: cfg, snaps: map[time.Duration]bbrSnap{}, rtProp: -1, cwnd: cfg.initialWindow()}
	b.initPacingRate(bbrNoRTT)
	return b
}

func (b *BBR) Name() string          { return "bbr" }
func (b *BBR) State() BBRState       { return b.state }
func (b *BBR) Signals() Signals      { return b.sig }
func (b *BBR) InSlowStart() bool     { return b.state == BBRStartup }
func (b *BBR) Ssthresh() int         { return math.MaxInt }
func (b *BBR) FilledPipe() bool      { return b.filledPipe }
func (b *BBR) RTprop() time.Duration { return b.rtProp }

// initPacingRate is draft §4.2.1: Startup's gain times the initial window
// per smoothed RTT, before there is a bandwidth sample.
func (b *BBR) initPacingRate(srtt time.Duration) {
	b.pacingRate = bbrHighGain * float64(b.cfg.initialWindow()) / srtt.Seconds()
}

// BtlBw is the max-filtered delivery rate in bytes per second.
func (b *BBR) BtlBw() float64 {
	m := 0.0
	for _, v := range b.bwSamples {
		m = max(m, v)
	}
	return m
}

// BDP is BtlBw·RTprop in bytes (0 before the first samples).
func (b *BBR) BDP() float64 {
	if b.rtProp < 0 {
		return 0
	}
	return b.BtlBw() * b.rtProp.Seconds()
}

// PacingGain is the gain of the current state (draft §4.3).
func (b *BBR) PacingGain() float64 {
	switch b.state {
	case BBRStartup:
		return bbrHighGain
	case BBRDrain:
		return 1 / bbrHighGain
	case BBRProbeBW:
		switch b.cycleIdx {
		case 0:
			return bbrProbeGain
		case 1:
			return bbrDrainCycleGain
		}
		return 1
	}
	return 1
}

// PacingRate implements cc.Pacer: PacingGain·BtlBw, never lowered before
// the pipe is full (draft §4.2.1: Startup's early samples are low).
func (b *BBR) PacingRate(time.Duration) float64 { return b.pacingRate }

// Window is the congestion window: cwnd, or 4 packets in ProbeRTT and after
// a persistent congestion (see the type comment).
func (b *BBR) Window() int {
	if b.state == BBRProbeRTT || b.collapsed {
		return min(b.cwnd, bbrMinPipePkts*b.cfg.MSS)
	}
	return b.cwnd
}

// sendQuantum is draft §4.2.2's, in bytes.
func (b *BBR) sendQuantum() float64 {
	switch {
	case b.pacingRate < bbrQuantumLow:
		return float64(b.cfg.MSS)
	case b.pacingRate < bbrQuantumHigh:
		return 2 * float64(b.cfg.MSS)
	}
	return min(b.pacingRate*time.Millisecond.Seconds(), bbrQuantumMax)
}

// inflightTarget is draft §4.2.3.2's BBRInflight(gain): gain·BDP plus
// three send quanta (room for the pacer's bursts and delayed ACKs); the
// initial window before the model has an RTT.
func (b *BBR) inflightTarget(gain float64) float64 {
	if b.rtProp < 0 {
		return float64(b.cfg.initialWindow())
	}
	return gain*b.BDP() + 3*b.sendQuantum()
}

// cwndGain is 2.885 in Startup and Drain (the Drain round keeps Startup's
// window while the pacer empties the queue), 2 elsewhere.
func (b *BBR) cwndGain() float64 {
	if b.state == BBRStartup || b.state == BBRDrain {
		return bbrHighGain
	}
	return bbrCwndGain
}

func (b *BBR) OnPacketSent(now time.Duration, _, bytesInFlight int) {
	b.inflight = bytesInFlight
	if b.deliveredTime == 0 && b.delivered == 0 {
		b.deliveredTime = now
	}
	s := b.snaps[now]
	if s.n == 0 {
		s.delivered, s.at = b.delivered, b.deliveredTime
	}
	s.n++
	b.snaps[now] = s
}

func (b *BBR) release(sentAt time.Duration) (bbrSnap, bool) {
	s, ok := b.snaps[sentAt]
	if !ok {
		return s, false
	}
	if s.n--; s.n <= 0 {
		delete(b.snaps, sentAt)
	} else {
		b.snaps[sentAt] = s
	}
	return s, true
}

// OnAck takes a delivery-rate sample (draft §4.1.2), runs the state
// machine (§4.3) and sets the pacing rate and window (§4.2).
func (b *BBR) OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT) {
	b.collapsed = false
	prior := float64(b.inflight)
	b.inflight -= bytes
	b.delivered += float64(bytes)
	b.deliveredTime = now
	snap, ok := b.release(sentAt)
	// Round counting (§4.1.1.3): a round ends when a packet sent after the
	// previous round's end is acknowledged.
	b.roundStart = false
	if ok && snap.delivered >= b.nextRoundDeliv {
		b.nextRoundDeliv = b.delivered
		b.round++
		b.roundStart = true
		b.bwSamples[b.round%bbrBwWindow] = 0
	}
	if ok {
		if iv := now - snap.at; iv > 0 {
			rate := (b.delivered - snap.delivered) / iv.Seconds()
			i := b.round % bbrBwWindow
			b.bwSamples[i] = max(b.bwSamples[i], rate)
		}
	}
	b.checkCyclePhase(now, prior)
	b.lostSinceAck = false
	b.checkFullPipe()
	b.checkDrain(now)
	b.updateRTprop(now, rtt.Latest)
	b.checkProbeRTT(now)
	if rate := b.PacingGain() * b.BtlBw(); rate > 0 && (b.filledPipe || rate > b.pacingRate) {
		b.pacingRate = rate
	}
	b.setCwnd(float64(bytes))
}

// setCwnd is draft §4.2.3.4: toward cwnd_gain·BDP as packets are delivered;
// before the pipe is full it only grows (slow-start-like, by the bytes
// delivered), so Startup's window is never cut by an early low BtlBw.
func (b *BBR) setCwnd(acked float64) {
	target := b.inflightTarget(b.cwndGain())
	w := float64(b.cwnd)
	switch {
	case b.filledPipe:
		w = min(w+acked, target)
	case w < target || b.delivered < float64(b.cfg.initialWindow()):
		w += acked
	}
	b.cwnd = int(max(w, bbrMinPipePkts*float64(b.cfg.MSS)))
}

// checkCyclePhase is §4.3.4.3: in ProbeBW a gain phase lasts one RTprop;
// the probing phase (1.25) also lasts until its higher inflight is reached
// or a loss says the path is full, and the draining phase (0.75) ends as
// soon as inflight is down to one BDP. prior is the inflight before the ACK.
func (b *BBR) checkCyclePhase(now time.Duration, prior float64) {
	if b.state != BBRProbeBW {
		return
	}
	next := now-b.cycleStamp > b.rtProp
	switch g := b.PacingGain(); {
	case g > 1:
		next = next && (b.lostSinceAck || prior >= b.inflightTarget(g))
	case g < 1:
		next = next || prior <= b.inflightTarget(1)
	}
	if next {
		b.cycleIdx = (b.cycleIdx + 1) % bbrCycleLen
		b.cycleStamp = now
	}
}

func (b *BBR) updateRTprop(now, sample time.Duration) {
	b.rtPropExpired = b.rtProp >= 0 && now > b.rtPropStamp+bbrRTpropWindow
	if sample > 0 && (b.rtProp < 0 || sample <= b.rtProp || b.rtPropExpired) {
		b.rtProp, b.rtPropStamp = sample, now
	}
}

// checkFullPipe is §4.3.2.2: Startup has filled the pipe when BtlBw grew by
// less than 25 % for three rounds.
func (b *BBR) checkFullPipe() {
	if b.filledPipe || !b.roundStart {
		return
	}
	bw := b.BtlBw()
	if bw >= b.fullBw*bbrFullBwThresh {
		b.fullBw, b.fullBwCount = bw, 0
		return
	}
	if b.fullBwCount++; b.fullBwCount >= bbrFullBwRounds {
		b.filledPipe = true
	}
}

// checkDrain is §4.3.3: Startup hands over to Drain once the pipe is full;
// Drain ends when what is in flight is down to one BDP.
func (b *BBR) checkDrain(now time.Duration) {
	if b.state == BBRStartup && b.filledPipe {
		b.state = BBRDrain
	}
	if b.state == BBRDrain && float64(b.inflight) <= b.inflightTarget(1) {
		b.enterProbeBW(now)
	}
}

// checkProbeRTT is §4.3.5: ProbeRTT starts when RTprop was not refreshed
// for 10 s, and ends once 4 packets in flight were held for 200 ms and at
// least one round.
func (b *BBR) checkProbeRTT(now time.Duration) {
	if b.rtPropExpired && b.state != BBRProbeRTT {
		b.state = BBRProbeRTT
		b.probeRTTDone = 0
	}
	if b.state != BBRProbeRTT {
		return
	}
	switch {
	case b.probeRTTDone == 0 && b.inflight <= bbrMinPipePkts*b.cfg.MSS:
		b.probeRTTDone = now + bbrProbeRTTTime
		b.probeRTTRound = false
		b.nextRoundDeliv = b.delivered
	case b.probeRTTDone != 0:
		if b.roundStart {
			b.probeRTTRound = true
		}
		if b.probeRTTRound && now > b.probeRTTDone {
			b.rtPropStamp = now
			b.probeRTTDone = 0
			if b.filledPipe {
				b.enterProbeBW(now)
			} else {
				b.state = BBRStartup
			}
		}
	}
}

func (b *BBR) enterProbeBW(now time.Duration) {
	b.state = BBRProbeBW
	b.cycleIdx = 2 // start cruising (v1 picks a random phase other than 1)
	b.cycleStamp = now
}

// OnRTTSample sets the initial pacing rate again from the first smoothed
// RTT (the 1 ms stand-in is far too fast for any real path; Linux does the
// same). The connection reports the sample after the ACK's OnAck calls, so
// later ACKs raise the rate from there as BtlBw grows.
func (b *BBR) OnRTTSample(_ time.Duration, rtt RTT) {
	if !b.seenRTT && rtt.Smoothed > 0 {
		b.seenRTT = true
		b.initPacingRate(rtt.Smoothed)
	}
}

// OnLoss counts a loss episode (one per round) and leaves the model alone.
func (b *BBR) OnLoss(now time.Duration, bytes int, sentAt time.Duration) {
	b.release(sentAt)
	b.inflight -= bytes
	b.lostSinceAck = true
	if !b.lossCounted || b.lossRound != b.round {
		b.lossCounted, b.lossRound = true, b.round
		b.sig.LossEvents++
	}
}

// OnPersistentCongestion holds the window at its minimum until the next ACK.
func (b *BBR) OnPersistentCongestion(time.Duration) { b.collapsed = true }
