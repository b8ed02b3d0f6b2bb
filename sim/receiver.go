package sim

import (
	"time"
)

// recvPath is the receiver's ACK state for one packet number space.
type recvPath struct {
	ranges    []pnRange // descending
	unacked   int       // ack-eliciting packets since the last ACK
	largestAt time.Duration
	timer     *Timer
	spec      PathSpec
	revDelay  time.Duration
	baseRTT   time.Duration
}

// Delivery is one chunk handed to the application in order.
type Delivery struct {
	Chunk     int
	At        time.Duration // delivered to the application
	Delay     time.Duration // At − first transmission (delivery delay)
	Reorder   time.Duration // At − arrival (time in the reordering buffer)
	ArrivedOn int           // path of the first copy to arrive
}

// ConnReceiver is the receiving side: per-path ACK generation (every second
// ack-eliciting packet, at once on a gap, else after max_ack_delay), MMQUIC
// ACK fields, connection flow control, and the reordering buffer.
type ConnReceiver struct {
	sim   *Sim
	conn  *Conn
	paths []*recvPath

	arrived   []bool
	arrivalAt []time.Duration
	arrivedOn []int8
	next      int // next chunk to deliver in order
	// OnDeliver, when set, is called for every chunk delivered in order.
	OnDeliver func(d Delivery)
	sent      map[int]time.Duration // first transmission of arrived, undelivered chunks
	// Duplicates counts chunks that arrived again after their first copy.
	Duplicates uint64
	Received   uint64
}

func newConnReceiver(s *Sim, c *Conn, specs []PathSpec) *ConnReceiver {
	r := &ConnReceiver{sim: s, conn: c}
	for i, ps := range specs {
		rp := &recvPath{spec: ps}
		for _, l := range ps.Rev {
			rp.revDelay += l.Params().Delay
		}
		rp.baseRTT = rp.revDelay
		for _, l := range ps.Fwd {
			rp.baseRTT += l.Params().Delay
		}
		i := i
		rp.timer = s.NewTimer(func() { r.sendAck(i) })
		r.paths = append(r.paths, rp)
	}
	return r
}

func (r *ConnReceiver) grow(n int) {
	for len(r.arrived) < n {
		r.arrived = append(r.arrived, false)
		r.arrivalAt = append(r.arrivalAt, 0)
		r.arrivedOn = append(r.arrivedOn, 0)
	}
}

// Delivered is the number of chunks delivered in order.
func (r *ConnReceiver) Delivered() int { return r.next }

// Receive takes data packets from the network.
func (r *ConnReceiver) Receive(pkt *Packet) {
	now := r.sim.now
	r.Received++
	rp := r.paths[pkt.Path]
	inOrder := rp.record(pkt.PN)
	if inOrder {
		rp.largestAt = now
	}
	rp.unacked++
	ch := pkt.Chunk
	r.grow(ch + 1)
	{
		if r.arrived[ch] {
			r.Duplicates++
		} else {
			r.arrived[ch] = true
			r.arrivalAt[ch] = now
			r.arrivedOn[ch] = int8(pkt.Path)
			r.firstSent(ch, pkt.SentAt)
			r.deliver()
		}
	}
	// RFC 9000 §13.2.1–2: ACK every second packet, and at once when a packet
	// arrives out of order; else within max_ack_delay.
	if rp.unacked >= r.conn.cfg.AckEvery || !inOrder {
		r.sendAck(pkt.Path)
	} else {
		rp.timer.Set(now + MaxAckDelay)
	}
}

// firstSent remembers the first transmission time the sender stamped.
func (r *ConnReceiver) firstSent(ch int, t time.Duration) {
	if r.sent == nil {
		r.sent = make(map[int]time.Duration)
	}
	r.sent[ch] = t
}

// deliver hands in-order chunks to the application.
func (r *ConnReceiver) deliver() {
	now := r.sim.now
	for r.next < len(r.arrived) && r.arrived[r.next] {
		ch := r.next
		r.next++
		sent := r.sent[ch]
		delete(r.sent, ch)
		if r.OnDeliver != nil {
			r.OnDeliver(Delivery{Chunk: ch, At: now, Delay: now - sent, Reorder: now - r.arrivalAt[ch], ArrivedOn: int(r.arrivedOn[ch])})
		}
	}
}

// record adds pn to the ranges; it reports whether pn is the new largest
// and follows the previous largest directly (in order).
func (rp *recvPath) record(pn uint64) bool {
	if len(rp.ranges) == 0 {
		rp.ranges = append(rp.ranges, pnRange{pn, pn})
		return pn == 0
	}
	top := &rp.ranges[0]
	switch {
	case pn == top.hi+1:
		top.hi = pn
		return true
	case pn > top.hi+1:
		rp.ranges = append(rp.ranges, pnRange{})
		copy(rp.ranges[1:], rp.ranges)
		rp.ranges[0] = pnRange{pn, pn}
		if len(rp.ranges) > maxAckRanges {
			rp.ranges = rp.ranges[:maxAckRanges]
		}
		return false
	}
	// An older packet filling a hole (or a duplicate).
	for i := range rp.ranges {
		g := &rp.ranges[i]
		if pn >= g.lo && pn <= g.hi {
			return false
		}
		if pn == g.lo-1 {
			g.lo = pn
			if i+1 < len(rp.ranges) && rp.ranges[i+1].hi == pn-1 {
				g.lo = rp.ranges[i+1].lo
				rp.ranges = append(rp.ranges[:i+1], rp.ranges[i+2:]...)
			}
			return false
		}
		if pn == g.hi+1 { // i > 0 here
			g.hi = pn
			return false
		}
		if pn > g.hi {
			rp.ranges = append(rp.ranges, pnRange{})
			copy(rp.ranges[i+1:], rp.ranges[i:])
			rp.ranges[i] = pnRange{pn, pn}
			if len(rp.ranges) > maxAckRanges {
				rp.ranges = rp.ranges[:maxAckRanges]
			}
			return false
		}
	}
	if len(rp.ranges) < maxAckRanges {
		rp.ranges = append(rp.ranges, pnRange{pn, pn})
	}
	return false
}

// sendAck sends an MMQUIC ACK for path i.
func (r *ConnReceiver) sendAck(i int) {
	rp := r.paths[i]
	rp.timer.Stop()
	if len(rp.ranges) == 0 {
		return
	}
	rp.unacked = 0
	now := r.sim.now
	delivered := int64(r.next) * int64(r.conn.payload)
	f := &AckFrame{Path: i, Ranges: append([]pnRange(nil), rp.ranges...), AckDelay: now - rp.largestAt,
		MaxData: delivered + r.conn.cfg.RecvWindow, MaxStreamData: delivered + r.conn.cfg.StreamWindow}
	// MMQUIC BDP1..3 (thesis §2.4.2): the data path's rate now, in 0.5 s
	// and in 1 s times its base RTT, from the cross-layer database.
	for k, dt := range [3]time.Duration{0, 500 * time.Millisecond, time.Second} {
		var rate float64
		if rp.spec.Forecast != nil {
			rate = rp.spec.Forecast(now, dt)
		} else if len(rp.spec.Fwd) > 0 {
			rate = rp.spec.Fwd[0].Params().MeanRateBps()
		}
		f.BDP[k] = rate / 8 * rp.baseRTT.Seconds()
	}
	back := i
	if r.conn.cfg.AckOnFastest {
		for j, o := range r.paths {
			if len(o.spec.Rev) > 0 && !o.spec.Rev[0].Down() && o.revDelay < r.paths[back].revDelay {
				back = j
			}
		}
	}
	Send(&Packet{Size: AckPacketBytes, Flow: r.conn.cfg.Flow, Path: back, Chunk: -1, Ack: f, FromSrv: true},
		r.paths[back].spec.Rev, r.conn)
}
