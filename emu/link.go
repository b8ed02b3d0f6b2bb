package emu

import (
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/internal/linkmodel"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultQueuePackets is the one queue default of both backends (see
// linkmodel.DefaultQueuePackets), kept here for the emulator's callers.
const DefaultQueuePackets = linkmodel.DefaultQueuePackets

// DefaultMaxHeld bounds how many packets one link holds at once (queued and
// in propagation), so that memory stays bounded whatever the scenario says:
// 65536 packets of at most ~1.5 KB is ~100 MB per link at worst. Packets over
// the bound are dropped with CauseQueue.
const DefaultMaxHeld = 1 << 16

// linkCore is one direction of one path: the emulator's driver of the link
// model (linkmodel), with time passed in (now is the time since the engine
// started). It holds the packets until their release times, counts and logs.
// It is not safe for concurrent use (Engine wraps it in a mutex) and does not
// allocate per packet once its heap has grown.
type linkCore struct {
	path    string
	dir     Dir
	log     EventLog
	maxPkt  int
	maxHeld int
	m       *linkmodel.Link

	h   pktHeap
	seq uint64
	st  LinkStats
}

// verdictCause maps the model's verdicts to the emulator's drop causes.
var verdictCause = [...]Cause{
	linkmodel.Pass:       CauseNone,
	linkmodel.DropOutage: CauseOutage,
	linkmodel.DropLoss:   CauseLoss,
	linkmodel.DropQueue:  CauseQueue,
}

func newLinkCore(path string, dir Dir, rng *rand.Rand, maxPkt int, log EventLog) *linkCore {
	return &linkCore{path: path, dir: dir, maxPkt: maxPkt, maxHeld: DefaultMaxHeld, log: log,
		m: linkmodel.New(linkmodel.Params{}, rng, 0)}
}

// configure switches the link to cfg at time now (see linkmodel.Configure).
func (c *linkCore) configure(cfg scenario.Link, tr linkmodel.Traces, now time.Duration) error {
	p, err := linkmodel.FromScenario(cfg, tr)
	if err != nil {
		return err
	}
	c.m.Configure(p, now)
	return nil
}

// outage makes the link deliver nothing in [now, now+d) (see
// linkmodel.Outage).
func (c *linkCore) outage(now, d time.Duration) { c.m.Outage(now, d) }

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
	v, dep, release := c.m.Admit(now, size, len(c.h) < c.maxHeld)
	if v != linkmodel.Pass {
		return verdictCause[v]
	}
	p.arrive, p.depart, p.release = now, dep, release
	c.seq++
	p.seq = c.seq
	c.h.push(p)
	c.st.QueueDelay.add(dep - now)
	return CauseNone
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
		if c.m.InOutage(p.release) {
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
	s.QueuedPackets, s.QueuedBytes = c.m.Queued(now)
	s.Held = len(c.h)
	s.Outage = c.m.InOutage(now)
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
