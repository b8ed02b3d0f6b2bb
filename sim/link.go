package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultQueuePackets bounds a link's drop-tail queue when the scenario
// leaves queue_packets and queue_bytes at 0 (ns-3's DropTailQueue default).
const DefaultQueuePackets = 100

// Packet is one datagram in flight. Links look only at Size and the route;
// the transport fields are the MPQUIC model's.
type Packet struct {
	Size  int // bytes on the wire
	route []*Link
	hop   int
	dst   Receiver

	Flow    int    // connection id
	Path    int    // path id = packet number space
	PN      uint64 // packet number in the path's space
	Chunk   int    // data chunk carried (-1: none)
	Stream  int32  // the chunk's stream
	Off     int32  // the chunk's position in its stream
	Ack     *AckFrame
	SentAt  time.Duration
	FromSrv bool // sent by the data receiver (ACKs)
}

// Receiver takes packets at the end of their route.
type Receiver interface {
	Receive(p *Packet)
}

// Send starts p along route (at least one link) toward dst.
func Send(p *Packet, route []*Link, dst Receiver) {
	p.route, p.hop, p.dst = route, 0, dst
	route[0].Send(p)
}

// LinkParams is one direction of a link: what scenario.Link describes, with
// traces loaded.
type LinkParams struct {
	Delay      time.Duration
	Jitter     time.Duration // standard deviation of the extra delay
	JitterDist string        // normal (default), uniform, pareto
	Reorder    bool          // let jitter reorder packets (off: FIFO)
	Loss       float64       // Bernoulli loss probability
	GE         *scenario.GilbertElliott
	LossTrace  []bool              // per-packet drops, cycled
	RateBps    float64             // 0: unlimited
	Trace      *scenario.RateTrace // mahimahi delivery opportunities
	QueuePkts  int                 // drop-tail bound in packets (0 with QueueBytes 0: DefaultQueuePackets)
	QueueBytes int
}

// ParamsFromScenario converts one direction of a scenario path, reading
// trace files relative to the scenario.
func ParamsFromScenario(s *scenario.Scenario, l scenario.Link) (LinkParams, error) {
	p := LinkParams{
		Delay:      stats.DurationMs(l.DelayMs),
		Jitter:     stats.DurationMs(l.JitterMs),
		JitterDist: l.JitterDist,
		Reorder:    l.Reorder,
		Loss:       l.Loss,
		GE:         l.GilbertElliott,
		RateBps:    l.RateMbps * 1e6,
		QueuePkts:  l.QueuePackets,
		QueueBytes: l.QueueBytes,
	}
	if l.RateTrace != "" {
		data, err := s.ReadFile(l.RateTrace)
		if err != nil {
			return p, err
		}
		t, err := scenario.ParseRateTrace(l.RateTrace, data)
		if err != nil {
			return p, err
		}
		p.Trace = &t
	}
	if l.LossTrace != "" {
		data, err := s.ReadFile(l.LossTrace)
		if err != nil {
			return p, err
		}
		if p.LossTrace, err = scenario.ParseLossTrace(l.LossTrace, data); err != nil {
			return p, err
		}
	}
	return p, nil
}

// MeanRateBps is the long-run rate (a trace's mean; 0: unlimited).
func (p LinkParams) MeanRateBps() float64 {
	if p.Trace != nil {
		return p.Trace.MeanMbps() * 1e6
	}
	return p.RateBps
}

// LinkStats counts what a link did.
type LinkStats struct {
	Sent, Delivered           uint64 // packets offered, packets delivered
	QueueDrops, LossDrops     uint64
	OutageDrops, BytesDeliver uint64
}

// Link is one direction of a link: a drop-tail queue in front of a
// serialiser (constant rate or a delivery trace), then random loss and a
// propagation delay with optional jitter. Packets leave in FIFO order unless
// Reorder is set.
type Link struct {
	Name  string
	sim   *Sim
	p     LinkParams
	rng   *rand.Rand
	Stats LinkStats

	queue       []*Packet // ring buffer
	qHead, qLen int
	qBytes      int
	busy        bool
	down        bool
	geBad       bool
	lossIdx     int
	lastArrival time.Duration
	txDoneFn    func()

	// trace position: opportunity traceIdx of cycle traceCycle
	traceIdx   int
	traceCycle uint64
}

// NewLink returns a link whose random stream is named after it.
func NewLink(s *Sim, name string, p LinkParams) *Link {
	l := &Link{Name: name, sim: s, p: p, rng: s.Rand("link/" + name), queue: make([]*Packet, 16)}
	l.txDoneFn = l.txDone
	return l
}

// Params returns the current parameters.
func (l *Link) Params() LinkParams { return l.p }

// SetParams changes the link from now on; queued packets stay queued.
func (l *Link) SetParams(p LinkParams) {
	if p.Trace != l.p.Trace {
		l.traceIdx, l.traceCycle = 0, 0
	}
	l.p = p
}

// SetDown starts (true) or ends an outage: while down the link drops what
// it is given and holds its queue.
func (l *Link) SetDown(down bool) {
	l.down = down
	if !down && !l.busy && l.qLen > 0 {
		l.startTx()
	}
}

// Down reports whether the link is in an outage.
func (l *Link) Down() bool { return l.down }

// QueueLen is the number of packets waiting (including the one being sent).
func (l *Link) QueueLen() int { return l.qLen }

func (l *Link) queueFull(size int) bool {
	if l.p.QueuePkts == 0 && l.p.QueueBytes == 0 {
		return l.qLen >= DefaultQueuePackets
	}
	if l.p.QueuePkts > 0 && l.qLen >= l.p.QueuePkts {
		return true
	}
	return l.p.QueueBytes > 0 && l.qBytes+size > l.p.QueueBytes
}

// Send offers p to the link.
func (l *Link) Send(p *Packet) {
	l.Stats.Sent++
	if l.down {
		l.Stats.OutageDrops++
		return
	}
	if l.p.RateBps == 0 && l.p.Trace == nil { // unlimited: no queue
		l.transmitted(p)
		return
	}
	if l.queueFull(p.Size) {
		l.Stats.QueueDrops++
		return
	}
	if l.qLen == len(l.queue) {
		q := make([]*Packet, 2*len(l.queue))
		for i := 0; i < l.qLen; i++ {
			q[i] = l.queue[(l.qHead+i)%len(l.queue)]
		}
		l.queue, l.qHead = q, 0
	}
	l.queue[(l.qHead+l.qLen)%len(l.queue)] = p
	l.qLen++
	l.qBytes += p.Size
	if !l.busy {
		l.startTx()
	}
}

// startTx schedules the end of serialisation of the head packet.
func (l *Link) startTx() {
	if l.down || l.qLen == 0 {
		return
	}
	l.busy = true
	p := l.queue[l.qHead]
	now := l.sim.now
	var done time.Duration
	switch {
	case l.p.Trace != nil:
		done = l.nextOpportunity(now, (p.Size+scenario.TraceOpportunityBytes-1)/scenario.TraceOpportunityBytes)
	case l.p.RateBps > 0:
		done = now + time.Duration(float64(p.Size)*8/l.p.RateBps*1e9)
	default:
		done = now
	}
	l.sim.At(done, l.txDoneFn)
}

// nextOpportunity consumes n delivery opportunities at or after now and
// returns the time of the last one (mahimahi semantics; the trace repeats).
func (l *Link) nextOpportunity(now time.Duration, n int) time.Duration {
	t := l.p.Trace
	period := time.Duration(t.PeriodMs()) * time.Millisecond
	at := func() time.Duration {
		return time.Duration(l.traceCycle)*period + time.Duration(t.Ms[l.traceIdx])*time.Millisecond
	}
	// Skip whole idle cycles at once.
	if c := uint64(now / period); c > l.traceCycle {
		l.traceCycle, l.traceIdx = c, 0
	}
	var last time.Duration
	for i := 0; i < n; i++ {
		for at() < now {
			l.advanceTrace()
		}
		last = at()
		l.advanceTrace()
	}
	return last
}

func (l *Link) advanceTrace() {
	l.traceIdx++
	if l.traceIdx == len(l.p.Trace.Ms) {
		l.traceIdx, l.traceCycle = 0, l.traceCycle+1
	}
}

func (l *Link) txDone() {
	l.busy = false
	if l.qLen == 0 {
		return
	}
	p := l.queue[l.qHead]
	l.queue[l.qHead] = nil
	l.qHead = (l.qHead + 1) % len(l.queue)
	l.qLen--
	l.qBytes -= p.Size
	if l.down { // the outage began while it was on the wire
		l.Stats.OutageDrops++
	} else {
		l.transmitted(p)
	}
	if l.qLen > 0 {
		l.startTx()
	}
}

// transmitted applies loss and delay to a packet that has left the queue.
func (l *Link) transmitted(p *Packet) {
	if l.lost() {
		l.Stats.LossDrops++
		return
	}
	arrive := l.sim.now + l.p.Delay + l.jitter()
	if !l.p.Reorder {
		arrive = max(arrive, l.lastArrival)
		l.lastArrival = arrive
	}
	l.Stats.Delivered++
	l.Stats.BytesDeliver += uint64(p.Size)
	l.sim.arrive(arrive, p)
}

func forward(p *Packet) {
	p.hop++
	if p.hop < len(p.route) {
		p.route[p.hop].Send(p)
		return
	}
	p.dst.Receive(p)
}

// lost draws the loss decision of the current model.
func (l *Link) lost() bool {
	switch {
	case l.p.LossTrace != nil:
		d := l.p.LossTrace[l.lossIdx%len(l.p.LossTrace)]
		l.lossIdx++
		return d
	case l.p.GE != nil:
		g := l.p.GE
		if l.geBad {
			if l.rng.Float64() < g.PBadGood {
				l.geBad = false
			}
		} else if l.rng.Float64() < g.PGoodBad {
			l.geBad = true
		}
		if l.geBad {
			return l.rng.Float64() < g.LossBad
		}
		return l.rng.Float64() < g.LossGood
	case l.p.Loss > 0:
		return l.rng.Float64() < l.p.Loss
	}
	return false
}

// jitter draws the extra delay J ≥ 0 as the emulator does (scenario.Jitter:
// standard deviation jitter_ms); the delay never goes below the base delay.
func (l *Link) jitter() time.Duration {
	if l.p.Jitter == 0 {
		return 0
	}
	j := scenario.Link{JitterMs: float64(l.p.Jitter) / float64(time.Millisecond), JitterDist: l.p.JitterDist}.Jitter()
	return time.Duration(j.Draw(l.rng) * float64(time.Millisecond))
}

func (l *Link) String() string { return fmt.Sprintf("link %s", l.Name) }
