// Package linkmodel is the one model of a network link direction that both
// backends run: the emulator (emu) on a clock and sockets, the simulator
// (sim) on its event heap. It is pure: time comes in as now, randomness as an
// injected *rand.Rand, and it never holds packets, so the same parameters,
// seed and arrival times give the same drops and delays in either driver.
//
// A packet offered at now goes through, in this order:
//
//  1. an outage (dropped while the link is down);
//  2. the loss model (Bernoulli, Gilbert–Elliott or a loss trace);
//  3. the driver's memory bound (dropped as queue overflow);
//  4. the drop-tail queue in front of the serialiser (rate-limited links
//     only), then serialisation at a constant rate or on a mahimahi trace;
//  5. propagation: the base delay plus a jitter draw, kept in arrival order
//     unless Reorder is set.
//
// The driver delivers the packet at its release time unless an outage covers
// that time (it was in the air), which it asks with InOutage.
//
// Random draws per packet, in order, so one seed gives one sequence: none
// for a packet dropped by an outage; then the loss model's draws (Bernoulli:
// one when Loss > 0; Gilbert–Elliott: always two, the drop in the current
// state and then the state change; a loss trace: none); then, for a packet
// admitted to propagation, one jitter draw when Jitter > 0.
package linkmodel

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultQueuePackets bounds the drop-tail queue in front of a rate limit
// when the parameters give neither QueuePkts nor QueueBytes. It is Linux's
// default txqueuelen, which netem (what the emulator stands in for) uses:
// 1000 packets. Both backends use it; a scenario that means ns-3's 100-packet
// DropTailQueue says queue_packets: 100.
const DefaultQueuePackets = 1000

// Verdict is what the link did with an offered packet.
type Verdict uint8

// The verdicts of Admit.
const (
	Pass       Verdict = iota // held until its release time
	DropOutage                // the link is down
	DropLoss                  // the loss model dropped it
	DropQueue                 // the drop-tail queue (or the driver's bound) is full
)

// Params is one direction of a link, traces loaded.
type Params struct {
	Delay      time.Duration
	Jitter     time.Duration // standard deviation of the extra delay J ≥ 0
	JitterDist string        // normal (default), uniform, pareto
	Reorder    bool          // let jitter reorder packets (off: FIFO)
	Loss       float64       // Bernoulli loss probability
	GE         *scenario.GilbertElliott
	LossTrace  []bool              // per-packet drops, cycled
	RateBps    float64             // 0: unlimited (and no queue)
	Trace      *scenario.RateTrace // mahimahi delivery opportunities (replaces RateBps)
	QueuePkts  int                 // drop-tail bound in packets (0 with QueueBytes 0: DefaultQueuePackets)
	QueueBytes int
}

// MeanRateBps is the long-run rate (a trace's mean; 0: unlimited).
func (p Params) MeanRateBps() float64 {
	if p.Trace != nil {
		return p.Trace.MeanMbps() * 1e6
	}
	return p.RateBps
}

// goldenGamma spreads the direction over the stream id (2⁶⁴/φ, odd), so the
// two directions of one path get unrelated streams.
const goldenGamma = 0x9e3779b97f4a7c15

// Rand returns the random stream of one direction of a scenario path: PCG
// seeded with seed and a hash of the path's name and direction. Both
// backends take their links' streams from it, so one scenario and seed draw
// one sequence, and adding a path does not change the others' draws.
func Rand(seed uint64, path string, down bool) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(path))
	dir := uint64(1)
	if down {
		dir = 2
	}
	return rand.New(rand.NewPCG(seed, h.Sum64()^dir*goldenGamma))
}

// Traces resolves the trace files a scenario.Link names.
type Traces interface {
	RateTrace(name string) (*scenario.RateTrace, error)
	LossTrace(name string) ([]bool, error)
}

// TraceFiles is Traces over a scenario's files (read, relative to the
// scenario, by read), each parsed once: a reconfiguration that keeps a
// trace keeps its position in it, in either backend. Not safe for
// concurrent use.
type TraceFiles struct {
	read func(name string) ([]byte, error)
	rate map[string]*scenario.RateTrace
	loss map[string][]bool
}

// NewTraceFiles returns a cache of the traces read gives.
func NewTraceFiles(read func(name string) ([]byte, error)) *TraceFiles {
	return &TraceFiles{read: read, rate: map[string]*scenario.RateTrace{}, loss: map[string][]bool{}}
}

// RateTrace implements Traces.
func (t *TraceFiles) RateTrace(name string) (*scenario.RateTrace, error) {
	return cached(t.rate, name, t.read, "rate_trace", func(name string, data []byte) (*scenario.RateTrace, error) {
		tr, err := scenario.ParseRateTrace(name, data)
		return &tr, err
	})
}

// LossTrace implements Traces.
func (t *TraceFiles) LossTrace(name string) ([]bool, error) {
	return cached(t.loss, name, t.read, "loss_trace", scenario.ParseLossTrace)
}

// cached returns m[name], reading and parsing it first if needed; errors
// name the field.
func cached[T any](m map[string]T, name string, read func(string) ([]byte, error), field string, parse func(string, []byte) (T, error)) (T, error) {
	if v, ok := m[name]; ok {
		return v, nil
	}
	var zero T
	data, err := read(name)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", field, err)
	}
	v, err := parse(name, data)
	if err != nil {
		return zero, fmt.Errorf("%s: %w", field, err)
	}
	m[name] = v
	return v, nil
}

// FromScenario converts one direction of a scenario path. tr may be nil
// when l names no trace.
func FromScenario(l scenario.Link, tr Traces) (Params, error) {
	p := Params{
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
	switch l.JitterDist {
	case "", "normal", "uniform", "pareto":
	default:
		return p, fmt.Errorf("jitter_dist: unknown distribution %q", l.JitterDist)
	}
	var err error
	if l.RateTrace != "" {
		if p.Trace, err = tr.RateTrace(l.RateTrace); err != nil {
			return p, err
		}
	}
	if l.LossTrace != "" {
		if p.LossTrace, err = tr.LossTrace(l.LossTrace); err != nil {
			return p, err
		}
	}
	return p, nil
}

// Link is the state of one link direction. It is not safe for concurrent
// use and does not allocate per packet once its queue has grown.
type Link struct {
	p      Params
	rng    *rand.Rand
	jitter scenario.Jitter // p.Jitter's distribution, built once per Configure

	lastRelease time.Duration // FIFO bound
	lossIdx     int
	geBad       bool

	nsPerByte float64
	trace     []time.Duration // opportunity offsets in one period
	period    time.Duration
	traceBase time.Duration // time at which the trace started
	oppK      int64         // absolute index of the current opportunity
	oppLeft   int           // bytes left in it
	lastDep   time.Duration // when the serialiser is next free
	bq        ring          // departures of packets still in the queue
	bqBytes   int

	outFrom, outUntil time.Duration // the latest outage, [outFrom, outUntil)
}

// New returns a link with parameters p from time now, drawing from rng
// (which may be nil only if p never draws: no Loss, GE or Jitter).
func New(p Params, rng *rand.Rand, now time.Duration) *Link {
	l := &Link{rng: rng, oppK: -1}
	l.Configure(p, now)
	return l
}

// Params returns the current parameters.
func (l *Link) Params() Params { return l.p }

// Configure switches the link to p at time now. Packets already admitted
// keep their times; the new parameters apply to packets offered from now
// on. Loss-trace and rate-trace positions restart only when the trace
// changes; the Gilbert–Elliott state resets when the model is removed.
func (l *Link) Configure(p Params, now time.Duration) {
	old := l.p
	l.p = p
	l.jitter = scenario.JitterOf(float64(p.Jitter)/float64(time.Millisecond), p.JitterDist)
	if !sameSlice(p.LossTrace, old.LossTrace) {
		l.lossIdx = 0
	}
	if p.GE == nil {
		l.geBad = false
	}
	l.nsPerByte = 0
	if p.RateBps > 0 {
		l.nsPerByte = 8e9 / p.RateBps
	}
	switch {
	case p.Trace == nil:
		l.trace = nil
	case old.Trace == nil || l.trace == nil || !sameSlice(p.Trace.Ms, old.Trace.Ms):
		l.trace = l.trace[:0]
		for _, ms := range p.Trace.Ms {
			l.trace = append(l.trace, time.Duration(ms)*time.Millisecond)
		}
		l.period = time.Duration(p.Trace.PeriodMs()) * time.Millisecond
		l.traceBase = now
		l.oppK, l.oppLeft = -1, 0
	}
}

// sameSlice reports whether a and b are the same slice (same backing array
// and length), which is how a reconfiguration with an unchanged trace looks.
func sameSlice[T any](a, b []T) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0])
}

// Outage makes the link deliver nothing in [now, now+d): offered packets are
// dropped, and so are packets whose release falls in the window (they were
// in the air). An outage during an outage extends it.
func (l *Link) Outage(now, d time.Duration) {
	if now >= l.outUntil {
		l.outFrom = now
	}
	l.outUntil = max(l.outUntil, now+d)
}

// SetDown starts (true) an outage of unknown length at now, or ends (false)
// the current one at now.
func (l *Link) SetDown(now time.Duration, down bool) {
	switch {
	case down:
		l.Outage(now, time.Duration(1<<63-1)-now)
	case l.InOutage(now):
		l.outUntil = now
	}
}

// InOutage reports whether t falls in the latest outage.
func (l *Link) InOutage(t time.Duration) bool { return t >= l.outFrom && t < l.outUntil }

// Admit offers a packet of size bytes at now. room is false when the driver
// holds as many packets for this link as it may (its memory bound): the
// packet is then dropped as queue overflow, after the loss draw. A passed
// packet leaves the serialiser at depart and reaches the far end at release.
func (l *Link) Admit(now time.Duration, size int, room bool) (v Verdict, depart, release time.Duration) {
	if l.InOutage(now) {
		return DropOutage, 0, 0
	}
	if l.lost() {
		return DropLoss, 0, 0
	}
	if !room {
		return DropQueue, 0, 0
	}
	depart = now
	if l.nsPerByte > 0 || l.trace != nil {
		l.drain(now)
		if l.full(size) {
			return DropQueue, 0, 0
		}
		if l.trace != nil {
			depart = l.traceDepart(now, size)
		} else {
			depart = max(now, l.lastDep) + time.Duration(float64(size)*l.nsPerByte)
			l.lastDep = depart
		}
		l.bq.push(qent{dep: depart, size: int32(size)})
		l.bqBytes += size
	}
	release = depart + l.p.Delay + time.Duration(l.jitter.Draw(l.rng)*float64(time.Millisecond))
	if !l.p.Reorder {
		release = max(release, l.lastRelease)
	}
	l.lastRelease = max(l.lastRelease, release)
	return Pass, depart, release
}

// full reports whether a packet of size bytes overflows the drop-tail queue.
func (l *Link) full(size int) bool {
	qp, qb := l.p.QueuePkts, l.p.QueueBytes
	if qp == 0 && qb == 0 {
		qp = DefaultQueuePackets
	}
	return (qp > 0 && l.bq.len() >= qp) || (qb > 0 && l.bqBytes+size > qb)
}

// drain forgets the packets that have left the serialiser by now.
func (l *Link) drain(now time.Duration) {
	for l.bq.len() > 0 && l.bq.front().dep <= now {
		l.bqBytes -= int(l.bq.pop().size)
	}
}

// Queued returns the packets and bytes in the queue at now (including the
// one being serialised).
func (l *Link) Queued(now time.Duration) (pkts, bytes int) {
	l.drain(now)
	return l.bq.len(), l.bqBytes
}

// lost draws the loss model for one packet (see the package comment for
// the draws).
func (l *Link) lost() bool {
	switch {
	case l.p.LossTrace != nil:
		d := l.p.LossTrace[l.lossIdx]
		l.lossIdx = (l.lossIdx + 1) % len(l.p.LossTrace)
		return d
	case l.p.GE != nil:
		g := l.p.GE
		p, leave := g.LossGood, g.PGoodBad
		if l.geBad {
			p, leave = g.LossBad, g.PBadGood
		}
		drop := l.rng.Float64() < p
		if l.rng.Float64() < leave {
			l.geBad = !l.geBad
		}
		return drop
	case l.p.Loss > 0:
		return l.rng.Float64() < l.p.Loss
	}
	return false
}

// traceDepart is mahimahi's link: each trace entry is an opportunity to send
// 1500 bytes at that ms; a packet leaves at the opportunity that sends its
// last byte; opportunities that find the queue empty are lost.
func (l *Link) traceDepart(now time.Duration, size int) time.Duration {
	if l.lastDep <= now { // queue empty: the next opportunity at or after now
		if k := l.firstOpp(now); k != l.oppK {
			l.oppK, l.oppLeft = k, scenario.TraceOpportunityBytes
		}
	}
	need := size
	for l.oppLeft < need {
		need -= l.oppLeft
		l.oppK++
		l.oppLeft = scenario.TraceOpportunityBytes
	}
	l.oppLeft -= need
	l.lastDep = l.oppTime(l.oppK)
	return l.lastDep
}

func (l *Link) oppTime(k int64) time.Duration {
	n := int64(len(l.trace))
	return l.traceBase + time.Duration(k/n)*l.period + l.trace[k%n]
}

func (l *Link) firstOpp(now time.Duration) int64 {
	t := now - l.traceBase
	cycle := int64(t / l.period)
	off := t - time.Duration(cycle)*l.period
	i := sort.Search(len(l.trace), func(i int) bool { return l.trace[i] >= off })
	if i == len(l.trace) {
		cycle, i = cycle+1, 0
	}
	return cycle*int64(len(l.trace)) + int64(i)
}

// qent is one packet in the queue: when it leaves the serialiser, its size.
type qent struct {
	dep  time.Duration
	size int32
}

// ring is a FIFO of queue entries that reuses its storage.
type ring struct {
	buf        []qent
	head, size int
}

func (r *ring) len() int    { return r.size }
func (r *ring) front() qent { return r.buf[r.head] }
func (r *ring) push(e qent) {
	if r.size == len(r.buf) {
		nb := make([]qent, max(16, 2*len(r.buf)))
		for i := 0; i < r.size; i++ {
			nb[i] = r.buf[(r.head+i)%len(r.buf)]
		}
		r.buf, r.head = nb, 0
	}
	r.buf[(r.head+r.size)%len(r.buf)] = e
	r.size++
}
func (r *ring) pop() qent {
	e := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return e
}
