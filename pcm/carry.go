package pcm

import (
	"net"
	"net/netip"
	"sync"

	"github.com/quic-go/quic-go"
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
// network tuple from quic-go's qlog events (moveWatch); rebind mode counts
// the datagram bytes each socket received (multiConn). Both are counted
// per connection, not per request: a request compares two snapshots, and
// as no switch happens while a request is in flight (Client.begin), the
// bytes of requests running beside it arrived on the same paths. That
// fails when the server re-sends an earlier response on another path (a
// stale copy that ties with the request's own bytes), so Get and GetOn,
// which know their stream, count its bytes alone instead
// (Client.carrierOf); Transport, whose stream http3 does not name, and
// rebind mode, which sees no streams, use the ledger.
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

// streamRx counts one request stream's received bytes per path
// (moveWatch.own): inline for the paths a host usually has, so that
// watching a request allocates nothing.
type streamRx struct {
	id    quic.StreamID
	bytes [inlinePaths]int64
	more  []int64 // paths from inlinePaths on
}

func (s *streamRx) add(path int, n int64) {
	if path < inlinePaths {
		s.bytes[path] += n
		return
	}
	for path-inlinePaths >= len(s.more) {
		s.more = append(s.more, 0)
	}
	s.more[path-inlinePaths] += n
}

// carrier is the path that received most of the stream's bytes (the
// lowest of a tie), or -1 when none came.
func (s *streamRx) carrier() int {
	best, most := carrier(nil, s.bytes[:]), int64(0)
	if best >= 0 {
		most = s.bytes[best]
	}
	for i, n := range s.more {
		if n > most {
			best, most = inlinePaths+i, n
		}
	}
	return best
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
