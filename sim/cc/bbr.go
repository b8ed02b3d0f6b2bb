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
// The simulator's sender has no pacer: it sends whenever the window has
// room. So the pacing gain is applied to the window instead: the inflight
// target is gain·BDP (+ 2 MSS of ACK-clocking headroom, the simulator ACKs
// every second packet), capped at cwnd_gain·BDP (2·BDP, v1). That keeps
// v1's intent (probe 1.25·BDP for one RTT, drain 0.75·BDP, cruise at 1·BDP)
// but sends in ACK-clocked bursts, not paced. Loss does not change the
// model (v1); a persistent congestion (PTO) falls back to the minimum
// window until the next ACK, as v1's RTO handling does.
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
	probeRTTDone   time.Duration
	cycleIdx       int
	cycleStamp     time.Duration
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
	bbrHeadroomPkts   = 2
	bbrCycleLen       = 8
	bbrProbeGain      = 1.25
	bbrDrainCycleGain = 0.75
)

// NewBBR returns a BBR v1 controller in Startup.
func NewBBR(cfg Config) *BBR {
	return &BBR{cfg: cfg, snaps: map[time.Duration]bbrSnap{}, rtProp: -1}
}

func (b *BBR) Name() string          { return "bbr" }
func (b *BBR) State() BBRState       { return b.state }
func (b *BBR) Signals() Signals      { return b.sig }
func (b *BBR) InSlowStart() bool     { return b.state == BBRStartup }
func (b *BBR) Ssthresh() int         { return math.MaxInt }
func (b *BBR) FilledPipe() bool      { return b.filledPipe }
func (b *BBR) RTprop() time.Duration { return b.rtProp }

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

// PacingRate is PacingGain·BtlBw in bytes per second (reported for the
// window traces, thesis Fig. 3.8(a), which plots BBR's pacing rate).
func (b *BBR) PacingRate() float64 { return b.PacingGain() * b.BtlBw() }

// Window is the inflight target (see the type comment).
func (b *BBR) Window() int {
	mss := float64(b.cfg.MSS)
	minW := bbrMinPipePkts * mss
	if b.state == BBRProbeRTT || b.collapsed {
		return int(minW)
	}
	bdp := b.BDP()
	if bdp == 0 {
		return b.cfg.initialWindow()
	}
	gain := min(b.PacingGain(), bbrCwndGain) // cwnd_gain caps the target...
	if b.state == BBRStartup {
		gain = bbrHighGain // ...except in Startup (cwnd_gain = high_gain)
	}
	w := gain*bdp + bbrHeadroomPkts*mss
	return int(max(w, minW))
}

func (b *BBR) OnPacketSent(now time.Duration, _, bytesInFlight int) {
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

// OnAck takes a delivery-rate sample (draft §4.1.2) and runs the state
// machine (§4.3).
func (b *BBR) OnAck(now time.Duration, bytes int, sentAt time.Duration, rtt RTT) {
	b.collapsed = false
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
	b.updateRTprop(now, rtt.Latest)
	b.checkFullPipe()
	b.advance(now)
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

// advance runs the state transitions of §4.3.
func (b *BBR) advance(now time.Duration) {
	inflight := b.inflightEstimate()
	switch b.state {
	case BBRStartup:
		if b.filledPipe {
			b.state = BBRDrain
		}
	case BBRDrain:
		// Drain ends when inflight is down to one BDP; without a pacer the
		// window already is, so one round in Drain.
		if b.roundStart || inflight <= b.BDP() {
			b.enterProbeBW(now)
		}
	case BBRProbeBW:
		// §4.3.4.3: advance the gain cycle every RTprop.
		if now-b.cycleStamp > b.rtProp {
			b.cycleIdx = (b.cycleIdx + 1) % bbrCycleLen
			b.cycleStamp = now
		}
	case BBRProbeRTT:
		if b.probeRTTDone == 0 {
			b.probeRTTDone = now + max(bbrProbeRTTTime, b.rtProp)
		} else if now >= b.probeRTTDone {
			b.rtPropStamp = now
			b.probeRTTDone = 0
			if b.filledPipe {
				b.enterProbeBW(now)
			} else {
				b.state = BBRStartup
			}
		}
	}
	// §4.3.5: enter ProbeRTT when RTprop was not refreshed for 10 s.
	if b.rtPropExpired && b.state != BBRProbeRTT {
		b.state = BBRProbeRTT
		b.probeRTTDone = 0
	}
}

func (b *BBR) enterProbeBW(now time.Duration) {
	b.state = BBRProbeBW
	b.cycleIdx = 2 // start cruising (v1 picks a random phase other than 1)
	b.cycleStamp = now
}

// inflightEstimate is the window as the controller last set it; the sender
// keeps bytes in flight at or below it.
func (b *BBR) inflightEstimate() float64 { return float64(b.Window()) }

func (b *BBR) OnRTTSample(time.Duration, RTT) {}

// OnLoss counts a loss episode (one per round) and leaves the model alone.
func (b *BBR) OnLoss(now time.Duration, _ int, sentAt time.Duration) {
	b.release(sentAt)
	if !b.lossCounted || b.lossRound != b.round {
		b.lossCounted, b.lossRound = true, b.round
		b.sig.LossEvents++
	}
}

// OnPersistentCongestion holds the window at its minimum until the next ACK.
func (b *BBR) OnPersistentCongestion(time.Duration) { b.collapsed = true }
