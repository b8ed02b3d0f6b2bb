package sim

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/internal/linkmodel"
)

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

// Receiver takes packets at the end of their route. It must not keep p (or
// its frame) after Receive returns: connections reuse their packets.
type Receiver interface {
	Receive(p *Packet)
}

// Send starts p along route (at least one link) toward dst.
func Send(p *Packet, route []*Link, dst Receiver) {
	p.route, p.hop, p.dst = route, 0, dst
	route[0].Send(p)
}

// LinkParams is one direction of a link: what scenario.Link describes, with
// traces loaded (the one link model's parameters).
type LinkParams = linkmodel.Params

// LinkStats counts what a link did.
type LinkStats struct {
	Sent, Delivered           uint64 // packets offered, packets delivered
	QueueDrops, LossDrops     uint64
	OutageDrops, BytesDeliver uint64
}

// Link is one direction of a link on the event heap: the simulator's driver
// of the one link model (linkmodel), which decides each packet's drop or
// release time when it is offered; the link schedules its arrival then and
// drops it there if an outage covers that time.
type Link struct {
	Name  string
	sim   *Sim
	m     *linkmodel.Link
	Stats LinkStats
}

// NewLink returns a link whose random stream is named after it.
func NewLink(s *Sim, name string, p LinkParams) *Link {
	return newLink(s, name, p, s.Rand("link/"+name))
}

func newLink(s *Sim, name string, p LinkParams, rng *rand.Rand) *Link {
	return &Link{Name: name, sim: s, m: linkmodel.New(p, rng, s.now)}
}

// Params returns the current parameters.
func (l *Link) Params() LinkParams { return l.m.Params() }

// SetParams changes the link from now on; packets already offered keep
// their times.
func (l *Link) SetParams(p LinkParams) { l.m.Configure(p, l.sim.now) }

// SetDown starts (true) or ends an outage: while down the link drops what
// it is given and what it would deliver.
func (l *Link) SetDown(down bool) { l.m.SetDown(l.sim.now, down) }

// Outage makes the link deliver nothing for d from now (see
// linkmodel.Outage); an outage during an outage extends it.
func (l *Link) Outage(d time.Duration) { l.m.Outage(l.sim.now, d) }

// Down reports whether the link is in an outage.
func (l *Link) Down() bool { return l.m.InOutage(l.sim.now) }

// Send offers p to the link.
func (l *Link) Send(p *Packet) {
	l.Stats.Sent++
	v, _, release := l.m.Admit(l.sim.now, p.Size, true)
	switch v {
	case linkmodel.DropOutage:
		l.Stats.OutageDrops++
	case linkmodel.DropLoss:
		l.Stats.LossDrops++
	case linkmodel.DropQueue:
		l.Stats.QueueDrops++
	default:
		l.sim.arrive(release, p)
	}
}

// delivered reports whether p, at the end of this link now, reaches the far
// end (an outage drops what was in the air), and counts it.
func (l *Link) delivered(p *Packet) bool {
	if l.m.InOutage(l.sim.now) {
		l.Stats.OutageDrops++
		return false
	}
	l.Stats.Delivered++
	l.Stats.BytesDeliver += uint64(p.Size)
	return true
}

func forward(p *Packet) {
	if !p.route[p.hop].delivered(p) {
		return
	}
	p.hop++
	if p.hop < len(p.route) {
		p.route[p.hop].Send(p)
		return
	}
	p.dst.Receive(p)
}

func (l *Link) String() string { return fmt.Sprintf("link %s", l.Name) }
