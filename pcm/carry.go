package pcm

import (
	"net"
	"net/netip"
	"slices"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

// rxLedger counts, per local path, the bytes the client received there:
// what tells which path really carried a response. A switch moves the
// client's sending; whether the server's answers follow is the server's
// decision (RFC 9000 §9.3 lets it keep sending to the old address until it
// has validated the new one, and some servers never move back to an
// address they have seen: picoquic and qh3, pcm/README.md), so the path a
// request was sent on is not evidence of the path that carried its
// response.
//
// The default mode counts the STREAM frame bytes of requests' streams per
// network tuple from quic-go's qlog events (moveWatch), each byte once
// (streamEnds); rebind mode counts the datagram bytes each socket
// received (multiConn). Both are counted per connection, not per
// request: a request compares two snapshots, and as no switch happens
// while a request awaits its response (Client.begin), the new bytes of
// requests running beside it arrived on the same paths. One ledger serves
// Get, GetOn and RoundTrip (Transport) alike: RoundTrip cannot learn its
// stream's ID (http3 hides it). Get does use its stream's ID for one
// thing: at its body's end it waits until the ledger has counted that
// stream's last packet (moveWatch.awaitCounted), which quic-go logs only
// after handling it; RoundTrip cannot, and such a packet, rarely, counts
// in the next request's window. Rebind mode, which sees datagrams and not
// streams, cannot tell a re-sent copy from new bytes.
type rxLedger struct {
	mu    sync.Mutex
	bytes []int64 // indexed by path
	last  int     // the path that received the latest bytes; -1 before any
}

func newRxLedger(paths int) *rxLedger { return &rxLedger{bytes: make([]int64, paths), last: -1} }

func (l *rxLedger) add(path int, n int64) {
	if path < 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for path >= len(l.bytes) { // AddPath grew the client
		l.bytes = append(l.bytes, 0)
	}
	l.bytes[path] += n
	l.last = path
}

// lastPath is the path that received the latest bytes, or -1.
func (l *rxLedger) lastPath() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last
}

// of is the bytes path p received so far.
func (l *rxLedger) of(p int) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p < 0 || p >= len(l.bytes) {
		return 0
	}
	return l.bytes[p]
}

func (l *rxLedger) snapshot() []int64 { return l.snapshotTo(nil) }

// snapshotTo appends the ledger to buf: a request's own buffer, so that
// taking the snapshot allocates nothing when the paths fit.
func (l *rxLedger) snapshotTo(buf []int64) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append(buf, l.bytes...)
}

// carrierSince is carrier(before, a snapshot taken now), without taking
// the snapshot.
func (l *rxLedger) carrierSince(before []int64) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return carrier(before, l.bytes)
}

// carrier is the path that received the most bytes between two snapshots
// of the ledger, or -1 when none received any (no evidence either way).
func carrier(before, after []int64) int {
	best, most := -1, int64(0)
	for i, n := range after {
		if i < len(before) {
			n -= before[i]
		}
		if n > most {
			best, most = i, n
		}
	}
	return best
}

// streamEnds keeps, per request stream, which offsets have been received,
// and the ledger counts only the bytes no frame brought before: each
// offset of a response once, on the path of the frame that first brought
// it. A copy of bytes already received (a retransmission that crossed the
// ACK, a packet delayed on its path) adds nothing. quic-go's server
// re-sends an earlier response on the path it moves to while the next
// request is in flight (issue 29: chosen37's trace); counted again, that
// stale copy outweighed or tied the next response's own bytes and named
// its path the carrier.
//
// A frame past a gap counts only its own bytes, and the gap's bytes count
// for the frame that brings them. The ledger first gave a gap's bytes to
// the frame past it; then a response split across two paths was credited
// to whichever path's packets the client happened to handle first: qh3,
// amplification-limited on the path a request was sent on, sent the
// last 271 bytes of a 5122-byte response there and the rest on the old
// path, and when that last packet reached the client before the old
// path's, the bytes still in flight on the old path counted for the new
// one (issue 29, CI 2026-12-02; TestCarrierSplitResponse).
//
// The streams are a window from below on, one entry per client-initiated
// bidirectional stream ID (every fourth), which HTTP/3 gives requests in
// order: a stream that has ended (all bytes up to its FIN, or
// RESET_STREAM, received) leaves it once every earlier one has, and any
// later copy of it counts nothing.
type streamEnds struct {
	mu    sync.Mutex
	below quic.StreamID // the stream of win[0]: every request stream before it has ended
	win   []streamEnd
	// gaps holds, for the streams in the window that have any, the
	// offsets below end not received yet, in order. They live beside the
	// window, not in its entries, so that an entry holds no pointer and
	// moving the window stays a plain copy, and the in-order path stays
	// as small as it was (BenchmarkMoveWatchRecord).
	gaps map[quic.StreamID][]span
	// endCh is closed, and cleared, when a stream ends; made only by a
	// waiter (endedCh).
	endCh chan struct{}
}

type streamEnd struct {
	end    int64 // the highest offset received
	fin    bool  // the FIN arrived
	reset  bool  // RESET_STREAM arrived
	gapped bool  // some offsets below end have not arrived (gaps)
}

// span is the offsets [from, to).
type span struct{ from, to int64 }

// ended says that the stream brings no new bytes any more.
func (e *streamEnd) ended() bool { return e.reset || e.fin && !e.gapped }

// maxHoles bounds a stream's gaps: a peer that scatters a response into
// more fragments than that has its lowest gaps' bytes count for no path.
const maxHoles = 64

// maxStreamEnds bounds the window: ten times the 100 request streams
// quic-go's server lets a client have open at once. Only a stream that
// stays open while a thousand later ones end (a long poll, a long
// download) reaches it; that stream is then taken as ended, and its later
// bytes count for no path.
const maxStreamEnds = 1024

// fresh is the number of request-stream bytes in frames that no earlier
// frame brought. It locks only for a packet with request-stream frames.
func (s *streamEnds) fresh(frames []qlog.Frame) int64 {
	first := slices.IndexFunc(frames, func(f qlog.Frame) bool { _, ok := requestStream(f.Frame); return ok })
	if first < 0 {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for _, f := range frames[first:] {
		n += s.add(f.Frame)
	}
	return n
}

// requestStream is the stream of a STREAM or RESET_STREAM frame, if it
// is a client-initiated bidirectional one: in HTTP/3, a request's.
func requestStream(f any) (quic.StreamID, bool) {
	var id quic.StreamID
	switch f := f.(type) {
	case *qlog.StreamFrame:
		id = f.StreamID
	case *qlog.ResetStreamFrame:
		id = f.StreamID
	default:
		return 0, false
	}
	return id, id%4 == 0
}

// add counts one frame and returns its new bytes of a request's stream.
func (s *streamEnds) add(f any) int64 {
	id, ok := requestStream(f)
	if !ok {
		return 0
	}
	e := s.at(id)
	if e == nil {
		return 0
	}
	var n int64
	switch f := f.(type) {
	case *qlog.StreamFrame:
		if to := f.Offset + f.Length; f.Offset <= e.end && !e.gapped { // in order: nearly every frame
			n = max(0, to-e.end)
			e.end += n
		} else {
			n = s.receive(id, e, f.Offset, to)
		}
		e.fin = e.fin || f.Fin
	case *qlog.ResetStreamFrame:
		e.reset, e.gapped = true, false
		delete(s.gaps, id)
	}
	if s.endCh != nil && e.ended() {
		close(s.endCh)
		s.endCh = nil
	}
	s.trim()
	return n
}

// endedCh returns nil once stream id has ended (every byte up to its FIN
// counted, or reset), else a channel closed when some stream ends.
func (s *streamEnds) endedCh(id quic.StreamID) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if id < s.below {
		return nil
	}
	if k := int((id - s.below) / 4); k < len(s.win) && s.win[k].ended() {
		return nil
	}
	if s.endCh == nil {
		s.endCh = make(chan struct{})
	}
	return s.endCh
}

// receive notes the offsets [from, to) of stream id, whose entry is e,
// and returns how many of them are new: those past end, and those in a
// gap below it.
func (s *streamEnds) receive(id quic.StreamID, e *streamEnd, from, to int64) int64 {
	for old := range s.gaps { // streams the window's bound passed with gaps (an ended one has none)
		if old < s.below {
			delete(s.gaps, old)
		}
	}
	holes := s.gaps[id]
	var n int64
	if from < e.end {
		holes, n = fill(holes, from, min(to, e.end))
	}
	if to > e.end {
		if from > e.end {
			holes = append(holes, span{e.end, from})
		}
		n += to - max(from, e.end)
		e.end = to
	}
	if k := len(holes) - maxHoles; k > 0 { // a frame inside a gap splits it
		holes = slices.Delete(holes, 0, k)
	}
	e.gapped = len(holes) > 0
	switch {
	case e.gapped && s.gaps == nil:
		s.gaps = map[quic.StreamID][]span{id: holes}
	case e.gapped:
		s.gaps[id] = holes
	default:
		delete(s.gaps, id)
	}
	return n
}

// fill takes the offsets [from, to) out of the gaps holes, and returns
// the gaps left and how many of the offsets were in one.
func fill(holes []span, from, to int64) ([]span, int64) {
	var n int64
	for i := 0; i < len(holes) && holes[i].from < to; {
		h := holes[i]
		lo, hi := max(from, h.from), min(to, h.to)
		if lo >= hi {
			i++
			continue
		}
		n += hi - lo
		switch {
		case lo > h.from && hi < h.to: // inside the gap: it splits
			holes[i].to = lo
			holes = slices.Insert(holes, i+1, span{hi, h.to})
			i += 2
		case lo > h.from:
			holes[i].to = lo
			i++
		case hi < h.to:
			holes[i].from = hi
			i++
		default:
			holes = slices.Delete(holes, i, i+1)
		}
	}
	return holes, n
}

// at is the entry of stream id, nil for one before the window.
func (s *streamEnds) at(id quic.StreamID) *streamEnd {
	if id < s.below {
		return nil
	}
	k := int((id - s.below) / 4)
	if k >= maxStreamEnds {
		s.drop(k - maxStreamEnds + 1)
		k = maxStreamEnds - 1
	}
	for k >= len(s.win) {
		s.win = append(s.win, streamEnd{})
	}
	return &s.win[k]
}

// trim moves the window past the ended streams at its start.
func (s *streamEnds) trim() {
	k := 0
	for k < len(s.win) && s.win[k].ended() {
		k++
	}
	if k > 0 {
		s.drop(k)
	}
}

// drop moves the window k streams on, in its array (no allocation).
func (s *streamEnds) drop(k int) {
	n := copy(s.win, s.win[min(k, len(s.win)):])
	s.win = s.win[:n]
	s.below += quic.StreamID(4 * k)
}

// localIndex maps the local addresses of the client's sockets to their
// paths: how a qlog tuple (which names the local address) becomes a path.
type localIndex struct {
	mu sync.Mutex
	m  map[netip.AddrPort]int
}

func (x *localIndex) set(a net.Addr, path int) {
	ap, ok := addrPort(a)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.m == nil {
		x.m = map[netip.AddrPort]int{}
	}
	x.m[ap] = path
}

// path returns the path of local address a, or -1 for an unknown one.
func (x *localIndex) path(a netip.AddrPort) int {
	x.mu.Lock()
	defer x.mu.Unlock()
	if p, ok := x.m[netip.AddrPortFrom(a.Addr().Unmap(), a.Port())]; ok {
		return p
	}
	return -1
}

func addrPort(a net.Addr) (netip.AddrPort, bool) {
	u, ok := a.(*net.UDPAddr)
	if !ok {
		return netip.AddrPort{}, false
	}
	ap := u.AddrPort()
	return netip.AddrPortFrom(ap.Addr().Unmap(), ap.Port()), true
}
