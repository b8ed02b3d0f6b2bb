package sim

// packetPool recycles a connection's packets and ACK frames: a 10 MB
// transfer made 28 k allocations, four per ACK (packet, frame, copy of the
// ranges, stream limits) and two per data packet, and the garbage
// collector's share of the loop's CPU followed. A packet returns to the pool
// only where its one consumer is done with it (ConnReceiver.Receive for
// data, Conn.Receive for ACKs); one a link drops is left to the collector.
type packetPool struct {
	pkts freeList[Packet]
	acks freeList[AckFrame]
}

// packet returns a zeroed packet.
func (pp *packetPool) packet() *Packet { return pp.pkts.get() }

// putPacket takes back a packet nothing refers to any more (its frame
// included: the caller puts that back separately).
func (pp *packetPool) putPacket(p *Packet) {
	*p = Packet{}
	pp.pkts.put(p)
}

// ack returns a frame with empty Ranges and Streams whose arrays are reused.
func (pp *packetPool) ack() *AckFrame { return pp.acks.get() }

// putAck takes back a frame nothing refers to any more.
func (pp *packetPool) putAck(f *AckFrame) {
	*f = AckFrame{Ranges: f.Ranges[:0], Streams: f.Streams[:0]}
	pp.acks.put(f)
}

// freeList is a stack of reset values to reuse.
type freeList[T any] []*T

// get pops a value, or allocates one when the list is empty.
func (l *freeList[T]) get() *T {
	n := len(*l)
	if n == 0 {
		return new(T)
	}
	x := (*l)[n-1]
	*l = (*l)[:n-1]
	return x
}

func (l *freeList[T]) put(x *T) { *l = append(*l, x) }
