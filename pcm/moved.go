package pcm

import (
	"context"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// moveWatch tells when a switch took effect, and which requests left
// before it did.
//
// Path.Switch only records the wish; quic-go's connection run loop applies
// it at the top of its next pass, and nothing wakes the loop for it. A
// request written while a pass that began before the Switch is still
// running leaves in that pass, on the old path, and its completion time
// belongs to the old path (on loopback under load, several in 50 requests:
// pcm/RESULTS.md, "Why every switch probes"). quic-go offers no way to wait for the move, but it
// logs what matters as qlog events from the run loop: the move as
// tuple_assigned for the default tuple (ID ""), and each packet with its
// frames. The watch is a qlog Trace that follows
// both and passes every event on to the caller's own tracer. The client
// wakes the loop after a Switch and waits for the move (Client.awaitMove);
// a request that still leaves early is reported on the path that carried
// it. The cost is quic-go building its qlog events, which it skips without
// a tracer: about 40 of the 300 allocations of a small GET through
// Transport (measured with the tracer removed). It cannot be narrowed:
// quic-go (v0.65) builds every event for a connection that has a
// recorder, with no filter, and fixes the recorder when it dials, so the
// watch cannot take only the events it reads, nor attach only around a
// switch; and no other API shows the ACK frames (the stall detector's
// evidence), the peer's transport parameters, or which stream a packet
// carried (ConnectionStats has whole-connection counters and RTTs, and an
// RTT sample can repeat its value, exactly so in fake time; a socket sees
// only encrypted datagrams).
type moveWatch struct {
	next func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace

	mu      sync.Mutex
	pending bool          // a Switch that quic-go has not applied yet
	from    int           // the path the connection is on until then
	moved   chan struct{} // closed when the pending switch settles
	// early says that stream data left while the latest switch was
	// pending: some request went on the old path (RoundTrip cannot tell
	// which stream is its own, so it drops its sample on this). Written
	// under mu, read without it: every response's end reads it.
	early atomic.Bool
	// streams are the requests whose first packet is awaited; a request
	// whose first packet left while a switch was pending maps to the path
	// it left on, one whose first packet left after the move is deleted.
	streams map[quic.StreamID]int
	// unsent counts the streams still notSent; sendWatched says that a
	// sent packet's frames matter (a switch pending or a stream unsent),
	// so that the packets of a request's response and its ACKs, which
	// leave with neither, cost the watch an atomic load (mu guards both
	// writes).
	unsent      int
	sendWatched atomic.Bool

	// The receive side (rxLedger): the bytes of requests' streams are
	// counted per local path; a packet's qlog tuple names its network
	// tuple ("" the active one), tuples maps a tuple to its local address
	// as quic-go assigned it, and local maps that address to a path.
	rx     *rxLedger
	local  *localIndex
	tuples map[string]netip.AddrPort
	// activePath caches the path of the active tuple (""), which nearly
	// every received packet names, or is unresolved (-1): a tuple's
	// addresses hash slowly, and the lookup was a third of the watch's CPU
	// (BenchmarkMoveWatchRecord).
	activePath atomic.Int32
	// ends drops the bytes of requests' streams that arrived before:
	// the ledger counts only new ones.
	ends streamEnds

	// The stall detector's evidence (Client.heard): acks counts the
	// server's 1-RTT ACK frames that acknowledged a packet newer than any
	// before (largestAcked). Only those show that the server hears the
	// client now; a received packet does not, since a server that has
	// not followed a switch keeps retransmitting down the old path to a
	// client whose new path is dead.
	acks         atomic.Uint64
	largestAcked atomic.Int64 // -1 before any
	// lastSent is the number of the latest 1-RTT packet sent (-1 before
	// any). answer is a failover's question to the path it gives up
	// (awaitAnswer), asked while awaiting is set.
	lastSent atomic.Int64
	awaiting atomic.Bool
	answer   pathAnswer // under mu
	// maxAckDelay is the server's max_ack_delay transport parameter
	// (0 until it arrives): the detector's waits include it.
	maxAckDelay atomic.Int64
	// maxStreams is the server's initial_max_streams_bidi transport
	// parameter (0 until it arrives): how many requests it lets the
	// client have open at once (failoverLocked).
	maxStreams atomic.Int64
}

// notSent marks a watched stream whose first packet has not left yet.
const notSent = -1

// newMoveWatch watches a connection dialled from the local address dial;
// the received bytes go to rx, by path as local maps them.
func newMoveWatch(next func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace, rx *rxLedger, local *localIndex, dial netip.AddrPort) *moveWatch {
	settled := make(chan struct{})
	close(settled) // no switch is pending yet
	w := &moveWatch{next: next, streams: map[quic.StreamID]int{}, moved: settled,
		rx: rx, local: local, tuples: map[string]netip.AddrPort{"": dial}}
	w.largestAcked.Store(-1)
	w.lastSent.Store(-1)
	w.activePath.Store(unresolved)
	return w
}

// unresolved marks activePath before its tuple's path is known.
const unresolved = -1

// watchSendsLocked updates sendWatched after pending or unsent changed.
func (w *moveWatch) watchSendsLocked() { w.sendWatched.Store(w.pending || w.unsent > 0) }

// switching records a Switch away from path from; call it before Switch.
// Nil-safe (rebind mode moves at once and needs no watch).
func (w *moveWatch) switching(from int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pending, w.from = true, from
	w.early.Store(false)
	w.moved = make(chan struct{})
	w.watchSendsLocked()
}

// settledCh returns a channel closed once the latest switch has settled.
func (w *moveWatch) settledCh() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.moved
}

// sentEarly reports whether any request's data left on the old path
// while the latest switch was pending.
func (w *moveWatch) sentEarly() bool {
	if w == nil {
		return false
	}
	return w.early.Load()
}

// settled ends a pending switch: quic-go applied it, or Switch failed.
func (w *moveWatch) settled() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.pending {
		w.pending = false
		close(w.moved)
		w.watchSendsLocked()
	}
}

// watch starts following a request's stream; call it before the request's
// first write.
func (w *moveWatch) watch(id quic.StreamID) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if p, ok := w.streams[id]; !ok || p != notSent {
		w.unsent++
	}
	w.streams[id] = notSent
	w.watchSendsLocked()
}

// leftEarly ends following a stream and reports whether its first packet
// left before a pending switch took effect, and on which path.
func (w *moveWatch) leftEarly(id quic.StreamID) (path int, early bool) {
	if w == nil {
		return 0, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p, ok := w.streams[id]
	if ok && p == notSent {
		w.unsent--
		w.watchSendsLocked()
	}
	delete(w.streams, id)
	return p, ok && p != notSent
}

// record follows one qlog event. It runs for every packet the connection
// sends or receives, on quic-go's run loop: the common cases (a received
// packet on the active tuple, a sent one while nothing is watched) take
// no lock.
func (w *moveWatch) record(e qlogwriter.Event) {
	switch e := e.(type) {
	case qlog.PacketReceived:
		w.received(&e)
	case qlog.PacketSent:
		if e.Header.PacketType == qlog.PacketType1RTT {
			w.lastSent.Store(int64(e.Header.PacketNumber))
		}
		if w.sendWatched.Load() {
			w.sent(&e)
		}
	case qlog.TupleAssigned:
		w.mu.Lock()
		w.tuples[e.TupleID] = cmpAddr(e.Local.IPv4, e.Local.IPv6)
		if e.TupleID == "" {
			w.activePath.Store(unresolved)
		}
		w.mu.Unlock()
		if e.TupleID == "" {
			w.settled()
		}
	case qlog.ParametersSet:
		if e.Initiator == qlog.InitiatorRemote {
			w.maxAckDelay.Store(int64(e.MaxAckDelay))
			w.maxStreams.Store(e.InitialMaxStreamsBidi)
		}
	}
}

// sent notes the requests whose data a sent packet carries: while a
// switch is pending, that some request left early, and which unsent
// streams left on which path.
func (w *moveWatch) sent(e *qlog.PacketSent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, f := range e.Frames {
		sf, ok := f.Frame.(*qlog.StreamFrame)
		if !ok {
			continue
		}
		if w.pending && sf.StreamID%4 == 0 { // a client-initiated bidirectional stream: a request
			w.early.Store(true)
		}
		if p, ok := w.streams[sf.StreamID]; ok && p == notSent {
			w.unsent--
			if w.pending {
				w.streams[sf.StreamID] = w.from
			} else {
				delete(w.streams, sf.StreamID)
			}
		}
	}
	w.watchSendsLocked()
}

// received counts the new bytes of requests' streams in a received
// packet (streamEnds) for the path it arrived on, and an ACK that
// acknowledged something new.
func (w *moveWatch) received(e *qlog.PacketReceived) {
	largest := int64(-1)
	for _, f := range e.Frames {
		if a, ok := f.Frame.(*qlog.AckFrame); ok && e.Header.PacketType == qlog.PacketType1RTT {
			largest = max(largest, int64(a.LargestAcked()))
			if w.awaiting.Load() {
				w.answered(a, e.Tuple)
			}
		}
	}
	if largest >= 0 {
		w.ackedUpTo(largest)
	}
	if n := w.ends.fresh(e.Frames); n > 0 {
		w.rx.add(w.tuplePath(e.Tuple), n)
	}
}

// awaitCounted waits until the ledger has counted every byte of stream
// id, or done or stop closes. quic-go logs a received packet (qlog
// packet_received, which the ledger counts) after it has handled the
// packet's frames, so a response's reader can see the FIN, and take its
// carrier, before the ledger has counted the packet that brought it;
// that packet then counts in the next request's window. Get waits here
// for its stream, whose body it has read to the end: the event follows
// within the same run-loop step, or the connection ends. Nil-safe.
func (w *moveWatch) awaitCounted(id quic.StreamID, done, stop <-chan struct{}) {
	if w == nil {
		return
	}
	for {
		ch := w.ends.endedCh(id)
		if ch == nil {
			return
		}
		select {
		case <-ch:
		case <-done:
			return
		case <-stop:
			return
		}
	}
}

// tuplePath is the path of a qlog tuple, or -1 for an unknown one.
func (w *moveWatch) tuplePath(tuple string) int {
	if tuple == "" {
		if p := w.activePath.Load(); p != unresolved {
			return int(p)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	p := w.local.path(w.tuples[tuple])
	if tuple == "" && p >= 0 { // an unknown address stays unresolved: its path may be added later
		w.activePath.Store(int32(p))
	}
	return p
}

// ackedUpTo counts an ACK whose largest acknowledged packet is newer
// than any acknowledged before.
func (w *moveWatch) ackedUpTo(largest int64) {
	for {
		cur := w.largestAcked.Load()
		if largest <= cur {
			return
		}
		if w.largestAcked.CompareAndSwap(cur, largest) {
			w.acks.Add(1)
			return
		}
	}
}

// pathAnswer is what answers a failover's question to the path it gives
// up: an ACK that arrives on path, of a packet numbered in (after, upTo]
// — one the client sent there, the poke among them, since the last ACK
// before the verdict, and before the failover sent anything on another
// path. Such an ACK shows that the server hears the client on that path
// and is heard there. Any other ACK does not: a path probe's packet
// carries none, but the server acknowledges it on the path it sends on,
// so an ACK of a probe's packet arriving on the old path shows only that
// the old path carries the server's packets (a path cut in one direction
// does).
type pathAnswer struct {
	path        int
	after, upTo int64
	got         bool
}

// awaitAnswer asks path p, which a failover is about to give up, for its
// answer (pathAnswer): from now until the next awaitAnswer. Nil-safe
// (rebind mode has no watch: no answer ever comes).
func (w *moveWatch) awaitAnswer(p int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.answer = pathAnswer{path: p, after: w.largestAcked.Load(), upTo: w.lastSent.Load()}
	w.mu.Unlock()
	w.awaiting.Store(true)
}

// answered notes an ACK frame that arrived on tuple, if it answers the
// question (pathAnswer).
func (w *moveWatch) answered(a *qlog.AckFrame, tuple string) {
	p := w.tuplePath(tuple)
	w.mu.Lock()
	defer w.mu.Unlock()
	q := &w.answer
	if q.got || p != q.path {
		return
	}
	for _, r := range a.AckRanges {
		if int64(r.Largest) > q.after && int64(r.Smallest) <= q.upTo {
			q.got = true
			return
		}
	}
}

// pathAnswered says whether path p, asked by the latest awaitAnswer, has
// answered. Nil-safe.
func (w *moveWatch) pathAnswered(p int) bool {
	if w == nil || !w.awaiting.Load() {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answer.path == p && w.answer.got
}

// peerMaxAckDelay is the server's max_ack_delay, or the default when it
// is not known (nil-safe: rebind mode has no watch).
func (w *moveWatch) peerMaxAckDelay() time.Duration {
	if w == nil || w.maxAckDelay.Load() == 0 {
		return defaultMaxAckDelay
	}
	return time.Duration(w.maxAckDelay.Load())
}

// peerMaxStreams is the server's initial_max_streams_bidi, or 0 when it
// is not known (nil-safe: rebind mode has no watch).
func (w *moveWatch) peerMaxStreams() int64 {
	if w == nil {
		return 0
	}
	return w.maxStreams.Load()
}

// cmpAddr is the first valid of an IPv4 and an IPv6 address.
func cmpAddr(v4, v6 netip.AddrPort) netip.AddrPort {
	if v4.IsValid() {
		return v4
	}
	return v6
}

// tracer is the quic.Config.Tracer of the client's connection.
func (w *moveWatch) tracer(ctx context.Context, isClient bool, id quic.ConnectionID) qlogwriter.Trace {
	var next qlogwriter.Trace
	if w.next != nil {
		next = w.next(ctx, isClient, id)
	}
	return &watchTrace{w: w, next: next}
}

type watchTrace struct {
	w    *moveWatch
	next qlogwriter.Trace // nil when the caller traces nothing
	// watched is set once the connection's own producer (the first:
	// quic-go adds it as it creates the connection) has its recorder.
	watched atomic.Bool
}

// AddProducer gives the connection's producer the watch's recorder. A
// later one is HTTP/3's (http3.ClientConn): its events (header frames)
// say nothing about paths, so it gets only the caller's recorder — none
// without a tracer of the caller's, and http3 then builds no events
// (measured: 10 of about 300 allocations and 1.3 of 26 kB per small GET
// through Transport; the CPU ratio to http3.Transport did not change
// beyond its noise).
func (t *watchTrace) AddProducer() qlogwriter.Recorder {
	var next qlogwriter.Recorder
	if t.next != nil {
		next = t.next.AddProducer()
	}
	if t.watched.Swap(true) {
		return next
	}
	return watchRecorder{w: t.w, next: next}
}

type watchRecorder struct {
	w    *moveWatch
	next qlogwriter.Recorder
}

func (r watchRecorder) RecordEvent(e qlogwriter.Event) {
	r.w.record(e)
	if r.next != nil {
		r.next.RecordEvent(e)
	}
}

func (r watchRecorder) Close() error {
	if r.next != nil {
		return r.next.Close()
	}
	return nil
}
