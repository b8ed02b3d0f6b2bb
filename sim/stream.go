package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/hetquic/hetquic/sim/sched"
)

// StreamOpts are what an application says about a stream when it opens it.
type StreamOpts struct {
	// Priority orders the streams' new data: the lowest value is sent
	// first (RFC 9218's urgency), ties in opening order. Retransmissions go
	// before any new data, whatever their stream.
	Priority int
	// Deadline is the absolute virtual time by which the stream should be
	// delivered in full (0: none). It feeds the deadline-miss metrics and
	// the StreamEvent log; with DropLate the sender also stops sending the
	// stream's new data once it has passed (a late video frame is useless).
	Deadline time.Duration
	DropLate bool
	// Pinned sends the stream's packets, retransmissions included, only on
	// path Path, bypassing the scheduler: the application chose the path
	// (QC-MAB's access network per frame, RIDE's path per tile).
	Pinned bool
	Path   int
	// Window is the stream's receive window in bytes (0: the connection's
	// StreamWindow); with ConnConfig.AutoTune it is the initial window.
	Window int64
}

// Stream is one QUIC stream of a connection's sending side. The
// application writes whole chunks (payload-sized pieces; a short last piece
// is padded to a full packet).
type Stream struct {
	c        *Conn
	id       int
	opts     StreamOpts
	openedAt time.Duration
	written  int // chunks written
	closed   bool
	alloc    int // chunks given connection chunk numbers (sent or queued)
	acked    int // chunks acknowledged
	dropped  bool
	// peerMax is the stream offset flow control lets the sender reach
	// (MAX_STREAM_DATA).
	peerMax int64
	// writes remembers when each write's last chunk was written, for the
	// application-level delay of CBR and video (trimmed as delivered).
	writes []writeMark
	// OnDone, when set, gets the stream's own events (delivered, deadline
	// missed) before the receiver's OnStream log.
	OnDone func(e StreamEvent)
}

type writeMark struct {
	end int // one past the write's last chunk
	at  time.Duration
}

// ID is the stream's number (0 is Conn.Write's stream).
func (st *Stream) ID() int { return st.id }

// Opts returns the options the stream was opened with.
func (st *Stream) Opts() StreamOpts { return st.opts }

// OpenedAt is the virtual time the stream was opened.
func (st *Stream) OpenedAt() time.Duration { return st.openedAt }

// Written is the number of chunks written to the stream.
func (st *Stream) Written() int { return st.written }

// Closed reports whether the application closed the stream (its size is known).
func (st *Stream) Closed() bool { return st.closed }

// Write queues bytes (rounded up to whole chunks) at the end of the stream
// and returns the stream's chunk count. Writing to a closed stream panics:
// it is a bug of the application model.
func (st *Stream) Write(bytes int64) int {
	if st.closed {
		panic(fmt.Sprintf("sim: write to closed stream %d", st.id))
	}
	c := st.c
	n := int((bytes + int64(c.payload) - 1) / int64(c.payload))
	if n <= 0 {
		return st.written
	}
	st.written += n
	c.written += n
	st.writes = append(st.writes, writeMark{end: st.written, at: c.sim.now})
	c.activate(st)
	c.trySend()
	return st.written
}

// Close marks the end of the stream: its last chunk carries FIN and the
// receiver reports the stream complete once everything is delivered.
func (st *Stream) Close() {
	if st.closed {
		return
	}
	if st.written == 0 {
		panic(fmt.Sprintf("sim: stream %d closed with no data", st.id))
	}
	st.closed = true
	st.c.recv.checkDone(st.id) // everything may be delivered already
}

// writtenAt is when chunk off of the stream was written; it drops marks
// before off (offsets are asked for in increasing order).
func (st *Stream) writtenAt(off int) time.Duration {
	for len(st.writes) > 1 && st.writes[0].end <= off {
		st.writes = st.writes[1:]
	}
	if len(st.writes) == 0 {
		return st.openedAt
	}
	return st.writes[0].at
}

// OpenStream opens a stream at the current virtual time. size > 0 writes
// size bytes and closes the stream at once; size 0 leaves it open for
// Write and Close (CBR, an open-ended source).
func (c *Conn) OpenStream(size int64, o StreamOpts) (*Stream, error) {
	if err := c.CheckStreamOpts(o); err != nil {
		return nil, err
	}
	if size < 0 {
		return nil, fmt.Errorf("stream size: %d is negative", size)
	}
	st := c.newStream(o)
	if size > 0 {
		st.Write(size)
		st.Close()
	}
	return st, nil
}

// CheckStreamOpts reports what is wrong with o for this connection.
func (c *Conn) CheckStreamOpts(o StreamOpts) error {
	if o.Pinned && (o.Path < 0 || o.Path >= len(c.paths)) {
		return fmt.Errorf("stream path: %d is outside [0, %d)", o.Path, len(c.paths))
	}
	if o.Window != 0 && o.Window < int64(c.cfg.PacketBytes) {
		return fmt.Errorf("stream window: %d is smaller than a packet", o.Window)
	}
	if o.Deadline < 0 {
		return fmt.Errorf("stream deadline: %v is negative", o.Deadline)
	}
	return nil
}

func (c *Conn) newStream(o StreamOpts) *Stream {
	st := &Stream{c: c, id: len(c.streams), opts: o, openedAt: c.sim.now, peerMax: c.streamWindow(o)}
	c.streams = append(c.streams, st)
	if o.Deadline > 0 {
		c.sim.At(o.Deadline, func() {
			if st.opts.DropLate && !c.recv.streamDone(st.id) && !st.dropped {
				st.dropped = true
				c.LateDrops++
			}
			c.recv.onDeadline(st)
		})
	}
	return st
}

// streamWindow is the initial receive window of a stream with options o.
func (c *Conn) streamWindow(o StreamOpts) int64 {
	if o.Window > 0 {
		return o.Window
	}
	return c.cfg.StreamWindow
}

// Stream returns stream id (nil when there is none).
func (c *Conn) Stream(id int) *Stream {
	if id < 0 || id >= len(c.streams) {
		return nil
	}
	return c.streams[id]
}

// Streams is the number of streams opened.
func (c *Conn) Streams() int { return len(c.streams) }

// defaultStream is stream 0, which Conn.Write uses; it is opened on first use.
func (c *Conn) defaultStream() *Stream {
	if c.def == nil {
		c.def = c.newStream(StreamOpts{})
	}
	return c.def
}

// activate puts st in its send list if it has chunks without a number.
func (c *Conn) activate(st *Stream) {
	list := &c.active
	if st.opts.Pinned {
		list = &c.pinned[st.opts.Path]
	}
	if slices.Contains(*list, st) {
		return
	}
	i, _ := slices.BinarySearchFunc(*list, st, func(a, b *Stream) int {
		if a.opts.Priority != b.opts.Priority {
			return a.opts.Priority - b.opts.Priority
		}
		return a.id - b.id
	})
	*list = slices.Insert(*list, i, st)
}

// room is the number of st's chunks flow control and the application let
// the sender number now (ignoring the connection limit).
func (st *Stream) room(payload int) int {
	if st.dropped {
		return 0
	}
	fc := int(st.peerMax/int64(payload)) - st.alloc
	return max(0, min(st.written-st.alloc, fc))
}

// allocatable is the number of new chunks of the unpinned streams the
// sender may number now: the connection's flow-control room and each
// stream's.
func (c *Conn) allocatable() int {
	conn := c.fcLimit() - c.nChunks
	if conn <= 0 {
		return 0
	}
	n := 0
	for _, st := range c.active {
		n += st.room(c.payload)
		if n >= conn {
			return conn
		}
	}
	return n
}

// allocate numbers the next chunk of the first stream in list that may
// send, and returns it (−1: none). Streams with nothing left leave the list.
func (c *Conn) allocate(list *[]*Stream) int {
	if c.nChunks >= c.fcLimit() {
		return -1
	}
	for i := 0; i < len(*list); i++ {
		st := (*list)[i]
		if st.dropped || st.alloc >= st.written {
			*list = slices.Delete(*list, i, i+1) // Write puts it back
			i--
			continue
		}
		if st.room(c.payload) == 0 {
			continue // held by its own flow control
		}
		ch := c.number(st.id, st.alloc)
		st.alloc++
		if st.alloc == st.written {
			*list = slices.Delete(*list, i, i+1)
		}
		return ch
	}
	return -1
}

// sendPinned sends the pinned streams' retransmissions and new data on
// their paths while the windows allow.
func (c *Conn) sendPinned() {
	for k, p := range c.paths {
		if len(c.pinRetx[k]) == 0 && len(c.pinned[k]) == 0 {
			continue
		}
		for {
			c.fillView()
			if !c.view.Paths[k].CanSend(c.cfg.PacketBytes) {
				break
			}
			var ch int
			if len(c.pinRetx[k]) > 0 {
				ch = c.pinRetx[k][0]
			} else if ch = c.allocate(&c.pinned[k]); ch < 0 {
				break
			}
			c.sendChunk(p, ch, false)
		}
	}
}

// pinnedPath is the path chunk ch is pinned to, or −1.
func (c *Conn) pinnedPath(ch int) int {
	if o := c.streams[c.chunk(ch).stream].opts; o.Pinned {
		return o.Path
	}
	return -1
}

// StreamOf implements sched.Queue: the stream of chunk ch, for schedulers
// that decide per packet with the application's context (ID −1 for a chunk
// not numbered yet, or acknowledged and forgotten).
func (c *Conn) StreamOf(ch int) sched.StreamInfo {
	if ch < c.base || ch >= c.nChunks {
		return sched.StreamInfo{ID: -1}
	}
	cs := c.chunk(ch)
	st := c.streams[cs.stream]
	return sched.StreamInfo{ID: st.id, Priority: st.opts.Priority, Deadline: st.opts.Deadline, Offset: int(cs.off)}
}
