package sim

import (
	"slices"
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

// Delivery is one chunk handed to the application in order on its stream.
type Delivery struct {
	Stream    int
	Chunk     int           // the chunk's position in its stream
	At        time.Duration // delivered to the application
	Delay     time.Duration // At − first transmission (delivery delay)
	Reorder   time.Duration // At − arrival (time in the reordering buffer)
	AppDelay  time.Duration // At − when the application wrote the chunk
	ArrivedOn int           // path of the first copy to arrive
}

// StreamEventKind says what happened to a stream.
type StreamEventKind uint8

const (
	// StreamDelivered: the stream's last chunk was delivered (Late when
	// after its deadline).
	StreamDelivered StreamEventKind = iota + 1
	// StreamMissed: the deadline passed before the stream was delivered
	// (a StreamDelivered with Late may follow).
	StreamMissed
)

// StreamEvent is one entry of the stream event log (Conn.Receiver().OnStream).
type StreamEvent struct {
	Kind     StreamEventKind
	Stream   int
	At       time.Duration
	Opened   time.Duration
	Deadline time.Duration // 0: none
	Chunks   int           // chunks written to the stream
	Late     bool          // StreamDelivered after the deadline
}

// Delay is At − Opened: the stream's completion time when delivered.
func (e StreamEvent) Delay() time.Duration { return e.At - e.Opened }

// slot is a chunk the receiver holds, not yet delivered.
type slot struct {
	arrived bool
	on      int8
	at      time.Duration // arrival
	sent    time.Duration // first transmission, as the sender stamped it
}

// rstream is the receiving side of one stream: its reordering buffer
// (chunks from next on) and its flow-control window.
type rstream struct {
	next   int
	pend   []slot
	done   bool // delivered in full (or abandoned after a DropLate deadline)
	missed bool
	fc     fcWindow
}

// ConnReceiver is the receiving side: per-path ACK generation (every second
// ack-eliciting packet, at once on a gap, else after max_ack_delay), MMQUIC
// ACK fields, stream and connection flow control, and a reordering buffer
// per stream (a loss on one stream does not block another).
type ConnReceiver struct {
	sim   *Sim
	conn  *Conn
	paths []*recvPath

	streams   []*rstream
	open      []int // streams seen and not done, ascending
	connFC    fcWindow
	delivered int // chunks delivered, all streams
	// OnDeliver, when set, is called for every chunk delivered in order.
	OnDeliver func(d Delivery)
	// OnStream, when set, gets the stream event log: each stream delivered
	// in full, and each deadline missed.
	OnStream func(e StreamEvent)
	// Duplicates counts chunks that arrived again after their first copy.
	Duplicates uint64
	Received   uint64
}

func newConnReceiver(s *Sim, c *Conn, specs []PathSpec) *ConnReceiver {
	r := &ConnReceiver{sim: s, conn: c, connFC: newFCWindow(c.cfg.RecvWindow, c.cfg.MaxRecvWindow, c.cfg.AutoTune)}
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

// Delivered is the number of chunks delivered in order, all streams.
func (r *ConnReceiver) Delivered() int { return r.delivered }

// stream returns the receiving side of stream id, creating it (and those
// below it) on first use.
func (r *ConnReceiver) stream(id int) *rstream {
	for len(r.streams) <= id {
		k := len(r.streams)
		st := r.conn.streams[k]
		r.streams = append(r.streams, &rstream{fc: newFCWindow(r.conn.streamWindow(st.opts), r.conn.cfg.MaxStreamWindow, r.conn.cfg.AutoTune)})
		r.open = append(r.open, k)
	}
	return r.streams[id]
}

// streamDone reports whether stream id was delivered in full.
func (r *ConnReceiver) streamDone(id int) bool {
	return id < len(r.streams) && r.streams[id].done && !r.streams[id].missed
}

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
	st := r.stream(int(pkt.Stream))
	if off := int(pkt.Off) - st.next; off < 0 || (off < len(st.pend) && st.pend[off].arrived) {
		r.Duplicates++
	} else {
		for len(st.pend) <= off {
			st.pend = append(st.pend, slot{})
		}
		st.pend[off] = slot{arrived: true, on: int8(pkt.Path), at: now, sent: pkt.SentAt}
		r.deliver(int(pkt.Stream), st)
	}
	// RFC 9000 §13.2.1–2: ACK every second packet, and at once when a packet
	// arrives out of order; else within max_ack_delay.
	if rp.unacked >= r.conn.cfg.AckEvery || !inOrder {
		r.sendAck(pkt.Path)
	} else {
		rp.timer.Set(now + MaxAckDelay)
	}
	r.conn.pool.putPacket(pkt)
}

// srtt is the connection's smoothed RTT for window auto-tuning: the lowest
// among paths with a sample (0: none yet). The sender's estimate stands in
// for the receiver's own, which the model does not keep.
func (r *ConnReceiver) srtt() time.Duration {
	var best time.Duration
	for _, p := range r.conn.paths {
		if p.hasRTT && (best == 0 || p.rtt.Smoothed < best) {
			best = p.rtt.Smoothed
		}
	}
	return best
}

// deliver hands stream id's in-order chunks to the application.
func (r *ConnReceiver) deliver(id int, st *rstream) {
	now := r.sim.now
	sender := r.conn.streams[id]
	n := 0
	for n < len(st.pend) && st.pend[n].arrived {
		sl := st.pend[n]
		off := st.next + n
		n++
		if r.OnDeliver != nil {
			r.OnDeliver(Delivery{Stream: id, Chunk: off, At: now, Delay: now - sl.sent, Reorder: now - sl.at,
				AppDelay: now - sender.writtenAt(off), ArrivedOn: int(sl.on)})
		}
	}
	if n == 0 {
		return
	}
	if n == len(st.pend) {
		// All delivered (the usual case in order): reuse the buffer, else
		// re-slicing past its end makes the next arrival allocate a new one.
		st.pend = st.pend[:0]
	} else {
		st.pend = st.pend[n:]
	}
	st.next += n
	r.delivered += n
	bytes := int64(n) * int64(r.conn.payload)
	srtt := r.srtt()
	if st.fc.onRead(bytes, now, srtt) {
		r.connFC.ensure(int64(connWindowMultiplier*float64(st.fc.size)), now)
	}
	r.connFC.onRead(bytes, now, srtt)
	r.checkDone(id)
}

// checkDone reports stream id delivered once it is closed and complete.
func (r *ConnReceiver) checkDone(id int) {
	if id >= len(r.streams) {
		return
	}
	st, sender := r.streams[id], r.conn.streams[id]
	if st.done || !sender.closed || st.next < sender.written {
		return
	}
	st.done = true
	r.close(id)
	dl := sender.opts.Deadline
	r.emit(sender, StreamEvent{Kind: StreamDelivered, Stream: id, At: r.sim.now, Opened: sender.openedAt, Deadline: dl,
		Chunks: sender.written, Late: dl > 0 && r.sim.now > dl})
}

// emit hands e to the stream's own callback, then to the log.
func (r *ConnReceiver) emit(sender *Stream, e StreamEvent) {
	if sender.OnDone != nil {
		sender.OnDone(e)
	}
	if r.OnStream != nil {
		r.OnStream(e)
	}
}

// close drops stream id from the streams the ACKs update.
func (r *ConnReceiver) close(id int) {
	if i := slices.Index(r.open, id); i >= 0 {
		r.open = slices.Delete(r.open, i, i+1)
	}
}

// onDeadline reports a missed deadline; a DropLate stream is abandoned.
func (r *ConnReceiver) onDeadline(sender *Stream) {
	id := sender.id
	if id < len(r.streams) && r.streams[id].done {
		return
	}
	if sender.dropped {
		st := r.stream(id)
		st.done, st.missed = true, true
		r.close(id)
	}
	r.emit(sender, StreamEvent{Kind: StreamMissed, Stream: id, At: r.sim.now, Opened: sender.openedAt,
		Deadline: sender.opts.Deadline, Chunks: sender.written})
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
	f := r.conn.pool.ack()
	f.Path, f.Ranges, f.AckDelay, f.MaxData = i, append(f.Ranges, rp.ranges...), now-rp.largestAt, r.connFC.limit
	for _, id := range r.open {
		f.Streams = append(f.Streams, StreamMax{ID: id, Max: r.streams[id].fc.limit})
	}
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
	pkt := r.conn.pool.packet()
	*pkt = Packet{Size: AckPacketBytes, Flow: r.conn.cfg.Flow, Path: back, Chunk: -1, Ack: f, FromSrv: true}
	Send(pkt, r.paths[back].spec.Rev, r.conn)
}
