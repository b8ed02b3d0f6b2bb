package emu

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultQueuePackets bounds the drop-tail queue in front of a rate limit
// when the scenario gives neither queue_packets nor queue_bytes. It is
// netem's and Linux's default txqueuelen (1000 packets).
const DefaultQueuePackets = 1000

// DefaultMaxHeld bounds how many packets one link holds at once (queued and
// in propagation), so that memory stays bounded whatever the scenario says:
// 65536 packets of at most ~1.5 KB is ~100 MB per link at worst. Packets over
// the bound are dropped with CauseQueue.
const DefaultMaxHeld = 1 << 16

// linkCore is one direction of one path: the whole impairment model, with
// time passed in (now is the time since the engine started). It is not safe
// for concurrent use (Engine wraps it in a mutex) and does not allocate per
// packet once its queues have grown.
type linkCore struct {
	path    string
	dir     Dir
	cfg     scenario.Link
	log     EventLog
	rng     *rand.Rand
	maxPkt  int
	maxHeld int

	// delay
	base        time.Duration
	jitter      scenario.Jitter // extra delay J ≥ 0, std dev jitter_ms
	reorder     bool
	lastRelease time.Duration

	// loss
	lossTrace []bool
	lossIdx   int
	geBad     bool

	// rate: nsPerByte > 0 for a constant rate, trace != nil for a trace
	nsPerByte float64
	trace     []time.Duration // opportunity offsets in one period
	period    time.Duration
	traceBase time.Duration // engine time at which the trace started
	oppK      int64         // absolute index of the current opportunity
	oppLeft   int           // bytes left in it
	lastDep   time.Duration // when the bottleneck is next free
	qPkts     int           // queue limits (0: none)
	qBytes    int
	bq        ring // departures of packets still in the bottleneck
	bqBytes   int

	// outage [outFrom, outUntil)
	outFrom, outUntil time.Duration

	h   pktHeap
	seq uint64
	st  LinkStats
}

// traces resolves trace file names named in a Link to parsed traces.
type traces interface {
	rateTrace(name string) (scenario.RateTrace, error)
	lossTrace(name string) ([]bool, error)
}

func newLinkCore(path string, dir Dir, rng *rand.Rand, maxPkt int, log EventLog) *linkCore {
	return &linkCore{path: path, dir: dir, rng: rng, maxPkt: maxPkt, maxHeld: DefaultMaxHeld, log: log, oppK: -1}
}

// configure switches the link to cfg at time now. Packets already in the
// link keep the times they were given; the new parameters apply to packets
// that arrive from now on. Loss and rate-trace state restart only when the
// model or the trace changes.
func (c *linkCore) configure(cfg scenario.Link, tr traces, now time.Duration) error {
	var (
		lossTrace []bool
		rt        scenario.RateTrace
		err       error
	)
	if cfg.LossTrace != "" {
		if lossTrace, err = tr.lossTrace(cfg.LossTrace); err != nil {
			return err
		}
	}
	if cfg.RateTrace != "" {
		if rt, err = tr.rateTrace(cfg.RateTrace); err != nil {
			return err
		}
	}
	old := c.cfg
	c.cfg = cfg
	c.base = stats.DurationMs(cfg.DelayMs)
	c.reorder = cfg.Reorder
	switch cfg.JitterDist {
	case "", "normal", "uniform", "pareto":
		c.jitter = cfg.Jitter()
	default:
		return fmt.Errorf("jitter_dist: unknown distribution %q", cfg.JitterDist)
	}
	if cfg.LossTrace != old.LossTrace {
		c.lossIdx = 0
	}
	c.lossTrace = lossTrace
	if cfg.GilbertElliott == nil {
		c.geBad = false
	}
	c.nsPerByte = 0
	if cfg.RateMbps > 0 {
		c.nsPerByte = 8e3 / cfg.RateMbps
	}
	if cfg.RateTrace == "" {
		c.trace = nil
	} else if cfg.RateTrace != old.RateTrace || c.trace == nil {
		c.trace = c.trace[:0]
		for _, ms := range rt.Ms {
			c.trace = append(c.trace, time.Duration(ms)*time.Millisecond)
		}
		c.period = time.Duration(rt.PeriodMs()) * time.Millisecond
		c.traceBase = now
		c.oppK, c.oppLeft = -1, 0
	}
	c.qPkts, c.qBytes = cfg.QueuePackets, cfg.QueueBytes
	if c.qPkts == 0 && c.qBytes == 0 {
		c.qPkts = DefaultQueuePackets
	}
	return nil
}

// outage makes the link deliver nothing in [now, now+d): arriving packets
// are dropped, and so are packets due for delivery in that window (they
// were "in the air"). An outage during an outage extends it.
func (c *linkCore) outage(now, d time.Duration) {
	if now >= c.outUntil {
		c.outFrom = now
	}
	c.outUntil = max(c.outUntil, now+d)
}

func (c *linkCore) inOutage(t time.Duration) bool { return t >= c.outFrom && t < c.outUntil }

// input takes p into the link at time now. It returns CauseNone if the link
// now holds p, or why p was dropped (the caller recycles p).
func (c *linkCore) input(p *Packet, now time.Duration) Cause {
	size := len(p.Data)
	c.st.PacketsIn++
	c.st.BytesIn += uint64(size)
	if c.log != nil {
		c.log.Record(PacketEvent{At: now, Path: c.path, Dir: c.dir, Kind: EventIn, Size: size})
	}
	cause := c.admit(p, size, now)
	if cause != CauseNone {
		c.st.Dropped[cause]++
		if c.log != nil {
			c.log.Record(PacketEvent{At: now, Path: c.path, Dir: c.dir, Kind: EventDrop, Cause: cause, Size: size})
		}
	}
	return cause
}

func (c *linkCore) admit(p *Packet, size int, now time.Duration) Cause {
	if size == 0 || size > c.maxPkt {
		return CauseMalformed
	}
	if c.inOutage(now) {
		return CauseOutage
	}
	if c.lost() {
		return CauseLoss
	}
	if len(c.h) >= c.maxHeld {
		return CauseQueue
	}
	dep := now
	if c.nsPerByte > 0 || c.trace != nil {
		for c.bq.len() > 0 && c.bq.front().dep <= now {
			c.bqBytes -= int(c.bq.pop().size)
		}
		if (c.qPkts > 0 && c.bq.len() >= c.qPkts) || (c.qBytes > 0 && c.bqBytes+size > c.qBytes) {
			return CauseQueue
		}
		if c.trace != nil {
			dep = c.traceDepart(now, size)
		} else {
			dep = max(now, c.lastDep) + time.Duration(float64(size)*c.nsPerByte)
			c.lastDep = dep
		}
		c.bq.push(qent{dep: dep, size: int32(size)})
		c.bqBytes += size
	}
	release := dep + c.base + c.jitterSample()
	if !c.reorder && release < c.lastRelease {
		release = c.lastRelease
	}
	c.lastRelease = max(c.lastRelease, release)
	p.arrive, p.depart, p.release = now, dep, release
	c.seq++
	p.seq = c.seq
	c.h.push(p)
	qd := dep - now
	c.st.QueueDelay.add(qd)
	return CauseNone
}

// lost draws the loss model for one packet.
func (c *linkCore) lost() bool {
	switch {
	case c.lossTrace != nil:
		d := c.lossTrace[c.lossIdx]
		c.lossIdx = (c.lossIdx + 1) % len(c.lossTrace)
		return d
	case c.cfg.GilbertElliott != nil:
		g := c.cfg.GilbertElliott
		p := g.LossGood
		if c.geBad {
			p = g.LossBad
		}
		drop := p > 0 && c.rng.Float64() < p
		if c.geBad {
			c.geBad = !(c.rng.Float64() < g.PBadGood)
		} else {
			c.geBad = c.rng.Float64() < g.PGoodBad
		}
		return drop
	case c.cfg.Loss > 0:
		return c.rng.Float64() < c.cfg.Loss
	}
	return false
}

// jitterSample draws the extra delay J ≥ 0 (std dev jitter_ms).
func (c *linkCore) jitterSample() time.Duration {
	return time.Duration(c.jitter.Draw(c.rng) * 1e6)
}

// traceDepart is mahimahi's link: each trace entry is an opportunity to send
// 1500 bytes at that ms; a packet leaves at the opportunity that sends its
// last byte; opportunities that find the queue empty are lost.
func (c *linkCore) traceDepart(now time.Duration, size int) time.Duration {
	if c.lastDep <= now { // queue empty: the next opportunity at or after now
		if k := c.firstOpp(now); k != c.oppK {
			c.oppK, c.oppLeft = k, scenario.TraceOpportunityBytes
		}
	}
	need := size
	for c.oppLeft < need {
		need -= c.oppLeft
		c.oppK++
		c.oppLeft = scenario.TraceOpportunityBytes
	}
	c.oppLeft -= need
	c.lastDep = c.oppTime(c.oppK)
	return c.lastDep
}

func (c *linkCore) oppTime(k int64) time.Duration {
	n := int64(len(c.trace))
	return c.traceBase + time.Duration(k/n)*c.period + c.trace[k%n]
}

func (c *linkCore) firstOpp(now time.Duration) int64 {
	t := now - c.traceBase
	cycle := int64(t / c.period)
	off := t - time.Duration(cycle)*c.period
	i := sort.Search(len(c.trace), func(i int) bool { return c.trace[i] >= off })
	if i == len(c.trace) {
		cycle, i = cycle+1, 0
	}
	return cycle*int64(len(c.trace)) + int64(i)
}

// next returns the release time of the first held packet.
func (c *linkCore) next() (time.Duration, bool) {
	if len(c.h) == 0 {
		return 0, false
	}
	return c.h[0].release, true
}

// popDue appends to out every packet due at now, in release order, and
// recycles (with free) those dropped by an outage at their release time.
func (c *linkCore) popDue(now time.Duration, out []*Packet, free func(*Packet)) []*Packet {
	for len(c.h) > 0 && c.h[0].release <= now {
		p := c.h.pop()
		size := len(p.Data)
		if c.inOutage(p.release) {
			c.st.Dropped[CauseOutage]++
			if c.log != nil {
				c.log.Record(PacketEvent{At: p.release, Path: c.path, Dir: c.dir, Kind: EventDrop, Cause: CauseOutage, Size: size})
			}
			free(p)
			continue
		}
		c.st.PacketsOut++
		c.st.BytesOut += uint64(size)
		c.st.Delay.add(p.release - p.arrive)
		if c.log != nil {
			c.log.Record(PacketEvent{At: p.release, Path: c.path, Dir: c.dir, Kind: EventOut, Size: size,
				QueueDelay: p.depart - p.arrive, Delay: p.release - p.arrive})
		}
		out = append(out, p)
	}
	return out
}

func (c *linkCore) stats(now time.Duration) LinkStats {
	s := c.st
	for c.bq.len() > 0 && c.bq.front().dep <= now {
		c.bqBytes -= int(c.bq.pop().size)
	}
	s.QueuedPackets, s.QueuedBytes, s.Held = c.bq.len(), c.bqBytes, len(c.h)
	s.Outage = c.inOutage(now)
	return s
}

// pktHeap is a binary min-heap on (release, seq): the seq tie-break keeps
// packets with equal release times in arrival order.
type pktHeap []*Packet

func (h pktHeap) less(i, j int) bool {
	if h[i].release != h[j].release {
		return h[i].release < h[j].release
	}
	return h[i].seq < h[j].seq
}

func (h *pktHeap) push(p *Packet) {
	*h = append(*h, p)
	s := *h
	for i := len(s) - 1; i > 0; {
		up := (i - 1) / 2
		if !s.less(i, up) {
			break
		}
		s[i], s[up] = s[up], s[i]
		i = up
	}
}

func (h *pktHeap) pop() *Packet {
	s := *h
	p := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s[n] = nil
	s = s[:n]
	for i := 0; ; {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s.less(l, m) {
			m = l
		}
		if r < n && s.less(r, m) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return p
}

// ring is a FIFO of bottleneck departures that reuses its storage.
type qent struct {
	dep  time.Duration
	size int32
}

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
