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
// stream's ID (http3 hides it). Rebind mode, which sees datagrams and not
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

// streamEnds keeps, per request stream, the highest offset received, and
// the ledger counts only the bytes past it: each offset of a response
// once, on the path of the frame that first reached past it (a gap left
// by a lost packet goes with the frame after it, and its retransmission
// adds nothing). A copy of bytes already received (a retransmission that
// crossed the ACK, a packet delayed on its path) adds nothing. quic-go's server re-sends an earlier response on the
// path it moves to while the next request is in flight (issue 29:
// chosen37's trace); counted again, that stale copy outweighed or tied
// the next response's own bytes and named its path the carrier.
//
// The streams are a window from below on, one entry per client-initiated
// bidirectional stream ID (every fourth), which HTTP/3 gives requests in
// order: a stream that has ended (FIN or RESET_STREAM received) leaves it
// once every earlier one has, and any later copy of it counts nothing.
type streamEnds struct {
	mu    sync.Mutex
	below quic.StreamID // the stream of win[0]: every request stream before it has ended
	win   []streamEnd
}

type streamEnd struct {
	end   int64 // the highest offset received
	ended bool  // FIN or RESET_STREAM received
}

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
		n = max(0, f.Offset+f.Length-e.end)
		e.end += n
		e.ended = e.ended || f.Fin
	case *qlog.ResetStreamFrame:
		e.ended = true
	}
	s.trim()
	return n
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
	for k < len(s.win) && s.win[k].ended {
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
