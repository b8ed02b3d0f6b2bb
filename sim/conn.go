package sim

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/hetquic/hetquic/sim/cc"
	"github.com/hetquic/hetquic/sim/sched"
)

// RFC 9002 constants (§6.1, §6.2, Appendix A.2).
const (
	kPacketThreshold = 3
	kTimeThreshold   = 9.0 / 8
	kGranularity     = time.Millisecond
	kInitialRTT      = 333 * time.Millisecond
	// MaxAckDelay is RFC 9000's default max_ack_delay.
	MaxAckDelay = 25 * time.Millisecond
	// AckPacketBytes is the wire size of an ACK-only packet.
	AckPacketBytes = 50
	// maxAckRanges bounds the ranges an ACK frame repeats.
	maxAckRanges = 32
	// lossEWMA weighs each packet's outcome in PathView.LossRate.
	lossEWMA = 1.0 / 256
	// lossHalfLife ages the loss estimate of a path that is not used, so a
	// scheduler that avoided a path after a burst of losses tries it again.
	lossHalfLife = time.Second
)

// pnRange is an inclusive range of packet numbers.
type pnRange struct{ lo, hi uint64 }

// AckFrame is an MMQUIC ACK (thesis §2.4.2, Fig. 2.3): it acknowledges
// packets of one path (the PID field) and may travel on any path.
type AckFrame struct {
	Path     int       // PID: the packet number space acknowledged
	Ranges   []pnRange // descending, disjoint
	AckDelay time.Duration
	// BDP is the data path's bandwidth-delay product in bytes now, in 0.5 s
	// and in 1 s (BDP1..BDP3); 0 when the link rate is unlimited.
	BDP     [3]float64
	MaxData int64 // connection flow-control limit in bytes (MAX_DATA)
	// Streams carries MAX_STREAM_DATA for every stream the receiver is
	// still receiving, in stream order (the updates QUIC sends as frames).
	Streams []StreamMax
}

// StreamMax is one stream's flow-control limit in bytes (MAX_STREAM_DATA).
type StreamMax struct {
	ID  int
	Max int64
}

// PathSpec is one path of a connection: the links data takes and those ACKs
// take back, and what the receiver's cross-layer database knows of it.
type PathSpec struct {
	Name string
	Fwd  []*Link // data direction
	Rev  []*Link // ACK direction
	// Forecast returns the data direction's bottleneck rate in bit/s at
	// now+dt (0: unlimited), for the MMQUIC BDP fields; nil: the current
	// rate of the first Fwd link.
	Forecast func(now, dt time.Duration) float64
	// Weight is the min-FCT path weight (Eq. 19), passed to schedulers.
	Weight float64
	// Access is the cross-layer database's access-link capacity (bit/s)
	// and round-trip propagation delay for MACO (thesis Fig. 3.7, Eqs.
	// 3.3, 3.11); nil: Forecast(now, 0) and the sum of the links' delays.
	Access func(now time.Duration) (capacityBps float64, propRTT time.Duration)
}

// access returns ps.Access or the default described there.
func (ps PathSpec) access() func(time.Duration) (float64, time.Duration) {
	if ps.Access != nil {
		return ps.Access
	}
	var prop time.Duration
	for _, l := range append(append([]*Link(nil), ps.Fwd...), ps.Rev...) {
		prop += l.Params().Delay
	}
	return func(now time.Duration) (float64, time.Duration) {
		if ps.Forecast != nil {
			return ps.Forecast(now, 0), prop
		}
		if len(ps.Fwd) > 0 {
			return ps.Fwd[0].Params().MeanRateBps(), prop
		}
		return 0, prop
	}
}

// DefaultStreamWindow is the stream flow-control window when
// ConnConfig.StreamWindow is 0: 6 MiB, the most quic-go v0.65.0's receive
// window auto-tuning grows a stream's window to
// (DefaultMaxReceiveStreamFlowControlWindow). quic-go starts at 512 KiB
// and doubles the window when the application reads fast; that tuning is
// not modelled, so a bulk transfer here has the grown window from the
// start.
const DefaultStreamWindow = 6 << 20

// ConnConfig configures a connection.
type ConnConfig struct {
	Flow        int
	PacketBytes int // wire size of a data packet (default 1500)
	Overhead    int // header bytes per data packet (default 52): payload = PacketBytes − Overhead
	CC          string
	Scheduler   string
	// RecvWindow is the connection flow-control window in bytes the
	// receiver keeps open beyond what it delivered (0: 16 MiB).
	RecvWindow int64
	// StreamWindow is the stream flow-control window in bytes
	// (MAX_STREAM_DATA): the receiver lets the sender send at most this far
	// beyond what it delivered in order on the stream (0:
	// DefaultStreamWindow; with AutoTune quic-go's initial 512 KiB).
	StreamWindow int64
	// AutoTune grows the receive windows as quic-go does (see
	// flowcontrol.go): window updates only once a quarter of the window is
	// consumed, and the window doubles, up to MaxStreamWindow and
	// MaxRecvWindow, when half of it was read within 4·fraction·SRTT.
	// Without it the receiver advertises delivered + window in every ACK.
	AutoTune                       bool
	MaxStreamWindow, MaxRecvWindow int64 // AutoTune caps (0: 6 MiB, 15 MiB as quic-go)
	// AckOnFastest sends each ACK on the path with the lowest base delay
	// back (MMQUIC's "return the ACK as soon as possible"); otherwise on the
	// path it acknowledges.
	AckOnFastest bool
	// AckEvery is the number of ack-eliciting packets that trigger an
	// immediate ACK (RFC 9000 §13.2.2 recommends 2; default 2).
	AckEvery int
}

func (c *ConnConfig) defaults() {
	if c.PacketBytes == 0 {
		c.PacketBytes = 1500
	}
	if c.Overhead == 0 {
		c.Overhead = 52
	}
	if c.AutoTune {
		if c.StreamWindow == 0 {
			c.StreamWindow = quicgoInitialStreamWindow
		}
		if c.RecvWindow == 0 {
			c.RecvWindow = quicgoInitialConnWindow
		}
		// A window given above quic-go's ceiling is its own ceiling.
		if c.MaxStreamWindow == 0 {
			c.MaxStreamWindow = max(DefaultStreamWindow, c.StreamWindow)
		}
		if c.MaxRecvWindow == 0 {
			c.MaxRecvWindow = max(quicgoMaxConnWindow, c.RecvWindow)
		}
	}
	if c.RecvWindow == 0 {
		c.RecvWindow = 16 << 20
	}
	if c.StreamWindow == 0 {
		c.StreamWindow = DefaultStreamWindow
	}
	if c.AckEvery == 0 {
		c.AckEvery = 2
	}
	if c.CC == "" {
		c.CC = "newreno"
	}
	if c.Scheduler == "" {
		c.Scheduler = "minrtt"
	}
}

// WithDefaults is c with every zero field set to what NewConn uses: the
// one source of a connection's defaults, which experiment files validate
// against.
func (c ConnConfig) WithDefaults() ConnConfig {
	c.defaults()
	return c
}

// Validate checks the configuration; errors name the field.
func (c ConnConfig) Validate() error {
	switch {
	case c.PacketBytes < 200 || c.PacketBytes > 65535:
		return fmt.Errorf("packet_bytes: %d is outside [200, 65535]", c.PacketBytes)
	case c.Overhead < 0 || c.Overhead >= c.PacketBytes:
		return fmt.Errorf("overhead_bytes: %d must be in [0, packet_bytes)", c.Overhead)
	case c.AckEvery < 1 || c.AckEvery > 64:
		return fmt.Errorf("ack_every: %d is outside [1, 64]", c.AckEvery)
	case c.RecvWindow < int64(c.PacketBytes):
		return fmt.Errorf("recv_window_bytes: %d is smaller than a packet", c.RecvWindow)
	case c.StreamWindow < int64(c.PacketBytes):
		return fmt.Errorf("stream_window_bytes: %d is smaller than a packet", c.StreamWindow)
	case c.AutoTune && c.MaxStreamWindow < c.StreamWindow:
		return fmt.Errorf("max_stream_window_bytes: %d is below stream_window_bytes %d", c.MaxStreamWindow, c.StreamWindow)
	case c.AutoTune && c.MaxRecvWindow < c.RecvWindow:
		return fmt.Errorf("max_recv_window_bytes: %d is below recv_window_bytes %d", c.MaxRecvWindow, c.RecvWindow)
	}
	if _, err := cc.New(c.CC, cc.Config{MSS: c.PacketBytes}); err != nil {
		return fmt.Errorf("cc: %w", err)
	}
	if _, err := sched.New(c.Scheduler, 1); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	return nil
}

// sentPacket is what the sender remembers of a packet in flight.
type sentPacket struct {
	pn     uint64
	chunk  int
	size   int
	sentAt time.Duration
	done   bool // acknowledged or declared lost
}

// PathStats counts one path's sender-side events.
type PathStats struct {
	Sent, Acked, Lost, Retransmitted, PTOs uint64
}

// sendPath is the sender's state for one path (RFC 9002, per packet number space).
type sendPath struct {
	id   int
	spec PathSpec
	cc   cc.Controller
	// rate and pace are set when cc paces (implements cc.Pacer); paceTimer
	// then wakes the sender when the bucket refills.
	rate      cc.Pacer
	pace      *pacer
	paceTimer *Timer

	nextPN        uint64
	sent          []*sentPacket // ascending pn; done entries are compacted away
	bytesInFlight int
	largestAcked  int64 // -1: none

	rtt       cc.RTT
	hasRTT    bool
	lossTime  time.Duration // 0: none
	lastAckEl time.Duration // time of the last ack-eliciting packet
	ptoCount  int
	timer     *Timer
	lossRate  float64
	lossAt    time.Duration // when lossRate was last updated
	// lossMemo is loss's last answer: the view is refilled for every
	// packet sent, mostly at the same instant, and the decay's Exp2 per
	// path was a third of the cost at 64 paths (BenchmarkPaths).
	lossMemo struct {
		rate    float64
		at, now time.Duration
		decayed float64
	}
	bdp   [3]float64
	Stats PathStats
}

// chunkState is what the sender keeps of one numbered chunk.
type chunkState struct {
	firstSent   time.Duration // −1: never sent
	stream, off int32         // the chunk's stream and position in it
	copies      uint8         // copies in flight
	acked       bool
	inRetx      bool // in retx or pinRetx
}

// Conn is the sending side of an MPQUIC connection and, through its peer,
// the receiving side. The application writes streams (stream.go); the
// sender cuts them into chunks of one packet's payload and numbers the
// chunks in the order it first sends them (connection chunk numbers), so
// that stream priorities decide at send time which data goes next.
type Conn struct {
	sim   *Sim
	cfg   ConnConfig
	paths []*sendPath
	sch   sched.Scheduler
	recv  *ConnReceiver
	view  sched.View

	payload int
	// streams are all streams opened (index = id); def is stream 0 when
	// Conn.Write opened it. active lists the unpinned streams with chunks
	// not yet numbered, by (priority, id); pinned the same per path.
	streams []*Stream
	def     *Stream
	active  []*Stream
	pinned  [][]*Stream
	pinRetx [][]int // per path: pinned chunks to send again, ascending
	// chunks is the per-chunk state of chunks base, base+1, …, nChunks−1:
	// the chunks below base are acknowledged with no copy in flight and
	// nothing refers to them again, so they are forgotten (forget) and
	// memory follows the chunks in play, not the transfer.
	chunks  []chunkState
	base    int
	written int // chunks written by the application, all streams
	// LateDrops counts DropLate streams whose deadline passed before they
	// were delivered (their remaining new data was not sent).
	LateDrops uint64

	nChunks    int // chunks numbered (allocated from the streams)
	nextNew    int // lowest chunk never sent (not counting sentAhead)
	sentAhead  map[int]bool
	retx       []int    // ascending chunks to send again
	sentOn     [][]bool // per path, for redundant: chunk base+i sent on path
	redCursor  []int
	ackedN     int
	peerMax    int64 // MAX_DATA from the receiver (bytes)
	sending    bool
	paced      bool // some path's controller paces
	pool       packetPool
	OnAllAcked func(now time.Duration)
	// OnChunkAcked, when set, is called when a chunk is acknowledged for
	// the first time, with the path of the acknowledged copy: delayed
	// rewards (Peekaboo's MSS / time from decision to ACK) hang on it.
	OnChunkAcked func(chunk, path int, now time.Duration)
}

// NewConn builds a connection over paths (at least one).
func NewConn(s *Sim, cfg ConnConfig, paths []PathSpec) (*Conn, error) {
	cfg.defaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("paths: a connection needs at least one path")
	}
	sch, err := sched.New(cfg.Scheduler, len(paths))
	if err != nil {
		return nil, fmt.Errorf("scheduler: %w", err)
	}
	c := &Conn{sim: s, cfg: cfg, sch: sch, payload: cfg.PacketBytes - cfg.Overhead, sentAhead: map[int]bool{}}
	c.peerMax = cfg.RecvWindow
	c.pinned, c.pinRetx = make([][]*Stream, len(paths)), make([][]int, len(paths))
	group := cc.NewGroup() // the coupled controllers' shared state
	for i, ps := range paths {
		ctl, err := cc.New(cfg.CC, cc.Config{MSS: cfg.PacketBytes, Group: group, Access: ps.access()})
		if err != nil {
			return nil, fmt.Errorf("cc: %w", err)
		}
		p := &sendPath{id: i, spec: ps, largestAcked: -1,
			rtt: cc.RTT{Smoothed: kInitialRTT, Var: kInitialRTT / 2}}
		p.timer = s.NewTimer(func() { c.onTimer(p) })
		c.setController(p, ctl)
		c.paths = append(c.paths, p)
	}
	if cfg.Scheduler == "redundant" {
		c.sentOn = make([][]bool, len(paths))
		c.redCursor = make([]int, len(paths))
	}
	c.view = sched.View{Paths: make([]sched.PathView, len(paths)), PacketBytes: cfg.PacketBytes, Queue: c}
	c.recv = newConnReceiver(s, c, paths)
	return c, nil
}

// setController makes ctl path p's controller, with a pacer when ctl paces.
func (c *Conn) setController(p *sendPath, ctl cc.Controller) {
	p.cc = ctl
	if r, ok := ctl.(cc.Pacer); ok {
		p.rate, p.pace = r, &pacer{packet: c.cfg.PacketBytes}
		p.paceTimer = c.sim.NewTimer(c.trySend)
		c.paced = true
	}
}

// Receiver is the connection's receiving side.
func (c *Conn) Receiver() *ConnReceiver { return c.recv }

// Payload is the application bytes one chunk carries.
func (c *Conn) Payload() int { return c.payload }

// Paths returns the per-path sender statistics.
func (c *Conn) PathStats() []PathStats {
	out := make([]PathStats, len(c.paths))
	for i, p := range c.paths {
		out[i] = p.Stats
	}
	return out
}

// Controller returns path i's congestion controller (for window traces and
// signal counts; do not call its event methods).
func (c *Conn) Controller(i int) cc.Controller { return c.paths[i].cc }

// InFlight is path i's bytes in flight.
func (c *Conn) InFlight(i int) int { return c.paths[i].bytesInFlight }

// Written is the number of chunks the application has written (all streams).
func (c *Conn) Written() int { return c.written }

// Write queues bytes of application data (rounded up to whole chunks) on
// stream 0 and returns the number of chunks written to it.
func (c *Conn) Write(bytes int64) int { return c.defaultStream().Write(bytes) }

// SetScheduler replaces the connection's scheduler: the per-packet hook for
// an external decision (an RL agent, a bandit). Next gets the View with
// every path's state and, through View.Queue.StreamOf, the stream of each
// pending chunk.
func (c *Conn) SetScheduler(s sched.Scheduler) { c.sch = s }

// PathView is path i's state as schedulers see it: congestion window,
// bytes in flight, smoothed/min/latest RTT, RTT variance, loss estimate,
// PTO count (PathStats has the loss counts).
func (c *Conn) PathView(i int) sched.PathView {
	c.fillView()
	return c.view.Paths[i]
}

// chunk is the state of numbered chunk ch ≥ base.
func (c *Conn) chunk(ch int) *chunkState { return &c.chunks[ch-c.base] }

// number gives the next connection chunk number to position off of
// stream id and returns it.
func (c *Conn) number(id, off int) int {
	c.chunks = append(c.chunks, chunkState{firstSent: -1, stream: int32(id), off: int32(off)})
	for i := range c.sentOn {
		c.sentOn[i] = append(c.sentOn[i], false)
	}
	c.nChunks++
	return c.nChunks - 1
}

// isAcked reports whether numbered chunk ch is acknowledged (the forgotten
// ones are).
func (c *Conn) isAcked(ch int) bool { return ch < c.base || c.chunk(ch).acked }

// forget drops the state of the chunks at the front that are acknowledged
// with no copy in flight. Re-slicing keeps the old array only until append
// next grows the slice to twice the chunks then in play.
func (c *Conn) forget() {
	k := 0
	for k < len(c.chunks) && c.chunks[k].acked && c.chunks[k].copies == 0 {
		k++
	}
	if k == 0 {
		return
	}
	c.chunks = c.chunks[k:]
	for i := range c.sentOn {
		c.sentOn[i] = c.sentOn[i][k:]
	}
	c.base += k
}

// fcLimit is the number of chunks connection flow control allows (each
// chunk counts as a full payload, a padded last chunk included).
func (c *Conn) fcLimit() int { return int(c.peerMax / int64(c.payload)) }

// sendWindow is BLEST's send window: flow-control room left in bytes. With
// one stream it is that stream's and the connection's, the lower.
func (c *Conn) sendWindow() int64 {
	w := c.peerMax - int64(c.ackedN)*int64(c.payload)
	if len(c.streams) == 1 {
		st := c.streams[0]
		w = min(w, st.peerMax-int64(st.acked)*int64(c.payload))
	}
	return w
}

// PendingAt implements sched.Queue.
func (c *Conn) PendingAt(i int) int {
	for ch := range c.pendingChunks() {
		if i == 0 {
			return ch
		}
		i--
	}
	panic("sim: pendingChunks ended") // it panics itself past the last chunk
}

// AppendPending implements sched.Queue: the first n pending chunks in one
// walk, where n calls of PendingAt walk from the start each time (a
// MAMS plan over a long queue was quadratic in it: 93 % of sim-urban's CPU).
func (c *Conn) AppendPending(dst []int, n int) []int {
	if n <= 0 {
		return dst
	}
	for ch := range c.pendingChunks() {
		dst = append(dst, ch)
		if n--; n == 0 {
			break // before the walk numbers another chunk
		}
	}
	return dst
}

// pendingChunks yields the pending chunks in PendingAt's order:
// retransmissions, then new chunks not sent ahead, numbering chunks as it
// goes. Numbering past the streams' data is a bug in the caller (it asked
// beyond View.Pending): a panic.
func (c *Conn) pendingChunks() iter.Seq[int] {
	return func(yield func(int) bool) {
		for _, ch := range c.retx {
			if !yield(ch) {
				return
			}
		}
		for ch := c.nextNew; ; ch++ {
			if ch >= c.nChunks && c.allocate(&c.active) < 0 {
				panic(fmt.Sprintf("sim: PendingAt beyond the pending chunks (chunk %d)", ch))
			}
			if !c.sentAhead[ch] && !yield(ch) {
				return
			}
		}
	}
}

// IsPending implements sched.Queue: chunks of pinned streams are never
// the scheduler's.
func (c *Conn) IsPending(ch int) bool { return c.queued(ch) && c.pinnedPath(ch) < 0 }

// queued reports whether chunk ch waits to be sent (numbered, not in
// flight, not acknowledged).
func (c *Conn) queued(ch int) bool {
	if ch < 0 || ch >= c.nChunks {
		return false
	}
	if ch < c.base {
		return false
	}
	if cs := c.chunk(ch); cs.acked {
		return false
	} else if cs.inRetx {
		return true
	}
	return ch >= c.nextNew && !c.sentAhead[ch]
}

// NotSentOn implements sched.Queue.
func (c *Conn) NotSentOn(path int) (int, bool) {
	if c.sentOn == nil {
		return 0, false
	}
	for _, ch := range c.retx {
		if !c.sentOn[path][ch-c.base] || c.chunk(ch).copies == 0 {
			return ch, true
		}
	}
	ch := max(c.redCursor[path], c.base)
	for ; ch < c.nChunks || c.allocate(&c.active) >= 0; ch++ {
		if !c.sentOn[path][ch-c.base] && !c.chunk(ch).acked && c.pinnedPath(ch) < 0 {
			c.redCursor[path] = ch
			return ch, true
		}
	}
	c.redCursor[path] = ch
	return 0, false
}

// pending is the number of chunks the scheduler may send now:
// retransmissions, numbered chunks not yet sent, and what the unpinned
// streams may still number.
func (c *Conn) pending() int {
	n := len(c.retx) + c.allocatable()
	if c.nChunks > c.nextNew {
		n += c.nChunks - c.nextNew - len(c.sentAhead)
	}
	return n
}

// fillView refreshes the scheduler's view.
func (c *Conn) fillView() {
	v := &c.view
	v.Now = c.sim.now
	v.Pending = c.pending()
	v.SendWindow = int(min(c.sendWindow(), math.MaxInt32))
	for i, p := range c.paths {
		pv := &v.Paths[i]
		*pv = sched.PathView{
			ID: i, SRTT: p.rtt.Smoothed, RTTVar: p.rtt.Var, MinRTT: p.rtt.Min, LatestRTT: p.rtt.Latest,
			HasRTT: p.hasRTT, Cwnd: p.cc.Window(), InFlight: p.bytesInFlight, Ssthresh: p.cc.Ssthresh(),
			InSlowStart: p.cc.InSlowStart(), PTOCount: p.ptoCount, RTO: c.pto(p), LossRate: p.loss(c.sim.now),
			BDP: p.bdp, Weight: p.spec.Weight,
		}
		// A sender that sends while any window is left (quic-go) sees the
		// window one packet less a byte larger: InFlight + size ≤ Cwnd
		// then holds exactly when InFlight < window.
		if o, ok := p.cc.(cc.WindowOvershoot); ok && o.OvershootsWindow() {
			pv.Cwnd += c.cfg.PacketBytes - 1
		}
		if p.pace != nil {
			pv.PacingHeld = p.pace.held(v.Now, p.rate.PacingRate(v.Now))
		}
		// A path whose probe timeout fired and that has not answered since
		// is "potentially failed" (as in MPTCP): only PTO probes use it, so
		// a dead path does not swallow fresh data between backed-off PTOs.
		if len(c.paths) > 1 && p.ptoCount > 0 {
			pv.Cwnd = min(pv.Cwnd, pv.InFlight)
		}
	}
}

// trySend sends while the scheduler picks a path, then arms the pacing
// wake-ups.
func (c *Conn) trySend() {
	if c.sending { // re-entrancy from callbacks
		return
	}
	c.sending = true
	c.sendPinned()
	c.sendLoop()
	if c.paced {
		c.armPacers()
	}
	c.sending = false
}

// armPacers wakes the sender when a paced path that only its pacer holds
// back (window room, data waiting) may send again; a path held by its
// window needs no wake-up, the next ACK brings one.
func (c *Conn) armPacers() {
	c.fillView()
	waiting := c.view.Pending > 0 || c.sentOn != nil
	for i, p := range c.paths {
		if p.pace == nil {
			continue
		}
		pv := &c.view.Paths[i]
		if (waiting || len(c.pinRetx[i]) > 0 || len(c.pinned[i]) > 0) && pv.PacingHeld && pv.InFlight+c.cfg.PacketBytes <= pv.Cwnd {
			p.paceTimer.Set(p.pace.releaseAt(p.rate.PacingRate(c.sim.now)))
		} else {
			p.paceTimer.Stop()
		}
	}
}

// sendLoop sends while the scheduler picks a path.
func (c *Conn) sendLoop() {
	for guard := 0; guard < 1<<20; guard++ {
		c.fillView()
		if c.view.Pending == 0 && c.sentOn == nil {
			return
		}
		d := c.sch.Next(&c.view)
		if d.Path < 0 || d.Path >= len(c.paths) {
			return
		}
		p := c.paths[d.Path]
		if pv := &c.view.Paths[d.Path]; !pv.CanSend(c.cfg.PacketBytes) {
			return // a scheduler bug; do not overrun the window
		}
		ch := d.Chunk
		if ch == sched.Head {
			if c.view.Pending == 0 {
				return
			}
			ch = c.PendingAt(0)
			if !c.IsPending(ch) {
				panic(fmt.Sprintf("sim: pending queue holds chunk %d that is not pending", ch))
			}
		} else if !c.IsPending(ch) && (c.sentOn == nil || ch >= c.nChunks || c.isAcked(ch)) {
			return
		}
		c.sendChunk(p, ch, false)
	}
}

// take removes ch from the pending structures.
func (c *Conn) take(ch int) {
	if cs := c.chunk(ch); cs.inRetx {
		cs.inRetx = false
		q := &c.retx
		if k := c.pinnedPath(ch); k >= 0 {
			q = &c.pinRetx[k]
		}
		if i := slices.Index(*q, ch); i >= 0 {
			*q = slices.Delete(*q, i, i+1)
		}
		return
	}
	switch {
	case ch == c.nextNew:
		c.nextNew++
		for c.sentAhead[c.nextNew] {
			delete(c.sentAhead, c.nextNew)
			c.nextNew++
		}
	case ch > c.nextNew:
		c.sentAhead[ch] = true
	}
}

// sendChunk sends chunk ch on path p. A probe (PTO) ignores the window and
// leaves the chunk pending: it is an extra copy.
func (c *Conn) sendChunk(p *sendPath, ch int, probe bool) {
	now := c.sim.now
	if !probe && c.queued(ch) {
		c.take(ch)
	}
	cs := c.chunk(ch)
	if cs.firstSent < 0 {
		cs.firstSent = now
	} else {
		p.Stats.Retransmitted++
	}
	if c.sentOn != nil {
		c.sentOn[p.id][ch-c.base] = true
	}
	cs.copies++
	sp := &sentPacket{pn: p.nextPN, chunk: ch, size: c.cfg.PacketBytes, sentAt: now}
	p.nextPN++
	p.sent = append(p.sent, sp)
	p.bytesInFlight += sp.size
	p.lastAckEl = now
	p.Stats.Sent++
	if p.pace != nil {
		p.pace.onSent(now, sp.size, p.rate.PacingRate(now))
	}
	p.cc.OnPacketSent(now, sp.size, p.bytesInFlight)
	pkt := c.pool.packet()
	*pkt = Packet{Size: sp.size, Flow: c.cfg.Flow, Path: p.id, PN: sp.pn, Chunk: ch, SentAt: cs.firstSent,
		Stream: cs.stream, Off: cs.off}
	Send(pkt, p.spec.Fwd, c.recv)
	c.setTimer(p)
}

// Receive takes ACK packets from the network.
func (c *Conn) Receive(pkt *Packet) {
	if pkt.Ack != nil {
		c.onAck(pkt.Ack)
		c.pool.putAck(pkt.Ack)
	}
	c.pool.putPacket(pkt)
}

// onAck processes one MMQUIC ACK frame (RFC 9002 §6, A.7).
func (c *Conn) onAck(f *AckFrame) {
	now := c.sim.now
	grew := f.MaxData > c.peerMax
	c.peerMax = max(c.peerMax, f.MaxData)
	for _, m := range f.Streams {
		if st := c.streams[m.ID]; m.Max > st.peerMax {
			st.peerMax, grew = m.Max, true
		}
	}
	p := c.paths[f.Path]
	p.bdp = f.BDP
	largest := f.Ranges[0].hi
	newLargest := int64(largest) > p.largestAcked
	if newLargest {
		p.largestAcked = int64(largest)
	}
	var largestNew *sentPacket
	acked := false
	// Walk outstanding packets up to the largest acknowledged against the
	// descending ranges (both sorted): O(newly acked + holes).
	ri := len(f.Ranges) - 1
	for _, sp := range p.sent {
		if sp.pn > largest {
			break
		}
		for ri >= 0 && f.Ranges[ri].hi < sp.pn {
			ri--
		}
		if ri < 0 {
			break
		}
		if sp.done || sp.pn < f.Ranges[ri].lo {
			continue
		}
		sp.done = true
		acked = true
		if largestNew == nil || sp.pn > largestNew.pn {
			largestNew = sp
		}
		c.onPacketAcked(p, sp)
	}
	if !acked {
		c.compact(p)
		if grew { // flow control opened: there may be something to send
			c.trySend()
		}
		return
	}
	if ae, ok := p.cc.(cc.AckEventer); ok {
		ae.OnAckEvent(now)
	}
	// RFC 9002 §5.1: an RTT sample when the largest acknowledged is newly acked.
	if largestNew != nil && largestNew.pn == largest {
		c.updateRTT(p, now-largestNew.sentAt, f.AckDelay)
	}
	p.ptoCount = 0
	c.detectLosses(p)
	c.compact(p)
	c.forget()
	c.setTimer(p)
	c.trySend()
}

func (c *Conn) onPacketAcked(p *sendPath, sp *sentPacket) {
	p.bytesInFlight -= sp.size
	p.Stats.Acked++
	p.lossRate, p.lossAt = p.loss(c.sim.now)*(1-lossEWMA), c.sim.now
	cs := c.chunk(sp.chunk)
	cs.copies--
	p.cc.OnAck(c.sim.now, sp.size, sp.sentAt, p.rtt)
	if !cs.acked {
		cs.acked = true
		c.ackedN++
		c.streams[cs.stream].acked++
		if c.OnChunkAcked != nil {
			c.OnChunkAcked(sp.chunk, p.id, c.sim.now)
		}
		// Take it off the queue if it is still there: a spurious loss (the
		// first copy made it), or a PTO probe's copy of a pending chunk.
		if ch := sp.chunk; cs.inRetx || (ch >= c.nextNew && !c.sentAhead[ch]) {
			c.take(ch)
		}
		if c.ackedN == c.written && c.OnAllAcked != nil {
			c.OnAllAcked(c.sim.now)
		}
	}
}

// updateRTT is RFC 9002 §5.3.
func (c *Conn) updateRTT(p *sendPath, latest, ackDelay time.Duration) {
	r := &p.rtt
	r.Latest = latest
	if !p.hasRTT {
		p.hasRTT = true
		r.Min, r.Smoothed, r.Var = latest, latest, latest/2
		p.cc.OnRTTSample(c.sim.now, *r)
		return
	}
	r.Min = min(r.Min, latest)
	ackDelay = min(ackDelay, MaxAckDelay)
	adj := latest
	if latest >= r.Min+ackDelay {
		adj = latest - ackDelay
	}
	d := r.Smoothed - adj
	if d < 0 {
		d = -d
	}
	r.Var = (3*r.Var + d) / 4
	r.Smoothed = (7*r.Smoothed + adj) / 8
	p.cc.OnRTTSample(c.sim.now, *r)
}

// detectLosses is RFC 9002 §6.1 (packet and time thresholds).
func (c *Conn) detectLosses(p *sendPath) {
	now := c.sim.now
	p.lossTime = 0
	if p.largestAcked < 0 {
		return
	}
	delay := time.Duration(kTimeThreshold * float64(max(p.rtt.Latest, p.rtt.Smoothed)))
	delay = max(delay, kGranularity)
	var lost []*sentPacket
	for _, sp := range p.sent {
		if int64(sp.pn) > p.largestAcked {
			break
		}
		if sp.done {
			continue
		}
		if sp.sentAt+delay <= now || p.largestAcked >= int64(sp.pn)+kPacketThreshold {
			lost = append(lost, sp)
			continue
		}
		if t := sp.sentAt + delay; p.lossTime == 0 || t < p.lossTime {
			p.lossTime = t
		}
	}
	c.onLost(p, lost, false)
}

// onLost declares packets lost: their chunks wait for retransmission unless
// a copy is still in flight or acknowledged.
func (c *Conn) onLost(p *sendPath, lost []*sentPacket, persistent bool) {
	for _, sp := range lost {
		sp.done = true
		p.bytesInFlight -= sp.size
		p.Stats.Lost++
		p.lossRate, p.lossAt = p.loss(c.sim.now)*(1-lossEWMA)+lossEWMA, c.sim.now
		cs := c.chunk(sp.chunk)
		cs.copies--
		p.cc.OnLoss(c.sim.now, sp.size, sp.sentAt)
		if ch := sp.chunk; cs.copies == 0 {
			c.queueRetx(ch)
		}
	}
	if persistent && len(lost) > 0 {
		p.cc.OnPersistentCongestion(c.sim.now)
	}
}

// queueRetx puts chunk ch in the retransmission queue (in stream order)
// unless it is acknowledged or already there.
func (c *Conn) queueRetx(ch int) {
	cs := c.chunk(ch)
	if cs.acked || cs.inRetx || (ch >= c.nextNew && !c.sentAhead[ch]) {
		return // done, queued, or still waiting as new data
	}
	cs.inRetx = true
	q := &c.retx
	if k := c.pinnedPath(ch); k >= 0 {
		q = &c.pinRetx[k]
	}
	i, _ := slices.BinarySearch(*q, ch)
	*q = slices.Insert(*q, i, ch)
}

// compact drops acknowledged and lost packets from the front of p.sent
// (and from the middle when they pile up).
func (c *Conn) compact(p *sendPath) {
	i := 0
	for i < len(p.sent) && p.sent[i].done {
		i++
	}
	if i > 0 {
		p.sent = p.sent[i:]
	}
	if len(p.sent) > 64 && cap(p.sent) > 4*len(p.sent) {
		s := make([]*sentPacket, 0, 2*len(p.sent))
		for _, sp := range p.sent {
			if !sp.done {
				s = append(s, sp)
			}
		}
		p.sent = s
	}
}

// pto is RFC 9002 §6.2.1's probe timeout with backoff.
func (c *Conn) pto(p *sendPath) time.Duration {
	d := p.rtt.Smoothed + max(4*p.rtt.Var, kGranularity) + MaxAckDelay
	return d << min(p.ptoCount, 16)
}

// setTimer arms the loss detection timer (RFC 9002 A.8).
func (c *Conn) setTimer(p *sendPath) {
	if p.lossTime != 0 {
		p.timer.Set(p.lossTime)
		return
	}
	if p.bytesInFlight <= 0 {
		p.timer.Stop()
		return
	}
	p.timer.Set(p.lastAckEl + c.pto(p))
}

// onTimer is RFC 9002 A.9: time-threshold loss, or a PTO that sends a probe.
func (c *Conn) onTimer(p *sendPath) {
	if p.lossTime != 0 {
		c.detectLosses(p)
		c.compact(p)
		c.setTimer(p)
		c.trySend()
		return
	}
	p.ptoCount++
	p.Stats.PTOs++
	// Persistent congestion (RFC 9002 §7.6), approximated: from the third
	// consecutive PTO, everything outstanding is declared lost and the
	// window collapses, so the path restarts once it works again.
	if p.ptoCount >= 3 {
		var lost []*sentPacket
		for _, sp := range p.sent {
			if !sp.done {
				lost = append(lost, sp)
			}
		}
		c.onLost(p, lost, true)
		c.compact(p)
	}
	// Reinjection: what is outstanding on a path that stopped answering may
	// go again on the others (as MPTCP and multipath QUIC stacks do); the
	// copies on this path still count until acknowledged or lost.
	if len(c.paths) > 1 {
		for _, sp := range p.sent {
			if !sp.done {
				c.queueRetx(sp.chunk)
			}
		}
	}
	// Probe (RFC 9002 §6.2.4): one packet on this path regardless of the
	// window — a copy of its oldest outstanding chunk, so that the most
	// urgent pending data is not held hostage by a path that may be down;
	// new data only when nothing is outstanding.
	probed := false
	for _, sp := range p.sent {
		if !sp.done && !c.chunk(sp.chunk).acked {
			c.sendChunk(p, sp.chunk, true)
			probed = true
			break
		}
	}
	if !probed {
		// Nothing outstanding: a copy of the first pending chunk, left in
		// the queue so that another path still sends it at once.
		c.fillView()
		if c.view.Pending > 0 {
			c.sendChunk(p, c.PendingAt(0), true)
		}
	}
	c.setTimer(p)
	c.trySend()
}

// Done reports whether every written chunk is acknowledged.
func (c *Conn) Done() bool { return c.ackedN == c.written }

// loss is the path's loss estimate at now: an EWMA over packet outcomes
// that halves every lossHalfLife without news.
func (p *sendPath) loss(now time.Duration) float64 {
	if p.lossRate == 0 || now <= p.lossAt {
		return p.lossRate
	}
	m := &p.lossMemo
	if m.rate != p.lossRate || m.at != p.lossAt || m.now != now {
		m.rate, m.at, m.now = p.lossRate, p.lossAt, now
		m.decayed = p.lossRate * math.Exp2(-float64(now-p.lossAt)/float64(lossHalfLife))
	}
	return m.decayed
}
