package pcm

import (
	"net"
	"net/netip"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
)

// TestLedgerCarrierSince: the carrier read off the ledger without a second
// snapshot is the one two snapshots give, paths added since included, and
// a request's snapshot into its own buffer allocates nothing.
func TestLedgerCarrierSince(t *testing.T) {
	l := newRxLedger(2)
	var buf [inlinePaths]int64
	before := l.snapshotTo(buf[:0])
	if got := l.carrierSince(before); got != -1 {
		t.Errorf("nothing received: carrier %d, want -1", got)
	}
	l.add(1, 100)
	l.add(0, 10)
	if got, want := l.carrierSince(before), carrier(before, l.snapshot()); got != 1 || want != 1 {
		t.Errorf("carrier %d (from two snapshots %d), want 1", got, want)
	}
	l.add(3, 500) // a path added after the snapshot
	if got := l.carrierSince(before); got != 3 {
		t.Errorf("carrier %d, want 3", got)
	}
	if raceEnabled {
		return // the race detector's instrumentation allocates
	}
	if n := testing.AllocsPerRun(100, func() { l.snapshotTo(buf[:0]) }); n != 0 {
		t.Errorf("snapshotTo into a buffer that fits: %v allocations, want 0", n)
	}
}

// TestCarrierIgnoresOtherStreams is issue 29's mis-credit, replayed as
// the qlog events of a trace (chosen37): request 1 (stream 4) was
// answered on the fast path, unfollowed; while request 2 (stream 8, sent
// on the slow path) was in flight, the server re-sent stream 4 on the
// slow path, and stream 8's response came on the fast one. The ledger
// ties the stale copy with stream 8's bytes and names the slow path,
// which would give the 100 ms path a sample of the fast one; the carrier
// is the path of the request's own stream.
func TestCarrierIgnoresOtherStreams(t *testing.T) {
	slow, fast := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.1.1:2")
	local := &localIndex{}
	local.set(net.UDPAddrFromAddrPort(slow), 0)
	local.set(net.UDPAddrFromAddrPort(fast), 1)
	c := &Client{rx: newRxLedger(2)}
	w := newMoveWatch(nil, c.rx, local, fast)
	sess := &session{moves: w}
	w.record(qlog.TupleAssigned{TupleID: "1", Local: qlog.TupleEndpointInfo{IPv4: fast}})
	w.record(qlog.TupleAssigned{TupleID: "", Local: qlog.TupleEndpointInfo{IPv4: slow}})
	response := func(tuple string, id quic.StreamID) qlog.PacketReceived {
		e := qlog.PacketReceived{Tuple: tuple, Frames: []qlog.Frame{{Frame: &qlog.StreamFrame{StreamID: id, Length: 1057, Fin: true}}}}
		e.Header.PacketType = qlog.PacketType1RTT
		return e
	}
	w.watch(4)
	before := c.rx.snapshot() // what fetch keeps in rebind mode
	w.record(response("1", 4))
	if got := c.carrierOf(sess, 4, before); got != 1 {
		t.Fatalf("request 1: carrier %d, want 1 (fast)", got)
	}
	w.watch(8)
	before = c.rx.snapshot()
	w.record(response("", 4)) // the stale copy, on slow
	w.record(response("1", 8))
	if got := c.rx.carrierSince(before); got != 0 {
		t.Fatalf("the ledger names path %d: want the tie it breaks to 0 (slow), or this test replays nothing", got)
	}
	if got := c.carrierOf(sess, 8, before); got != 1 {
		t.Errorf("request 2: carrier %d, want 1 (fast): its own bytes came on fast", got)
	}
	if n := w.owned.Load(); n != 0 {
		t.Errorf("%d streams still counted after their requests ended", n)
	}
}

// TestStreamRxPathsBeyondInline: a stream's own count covers paths past
// the inline ones, ties to the lowest path.
func TestStreamRxPathsBeyondInline(t *testing.T) {
	var s streamRx
	if got := s.carrier(); got != -1 {
		t.Errorf("nothing received: carrier %d, want -1", got)
	}
	s.add(1, 10)
	s.add(inlinePaths+1, 30)
	s.add(inlinePaths, 30)
	if got := s.carrier(); got != inlinePaths {
		t.Errorf("carrier %d, want %d", got, inlinePaths)
	}
	s.add(2, 40)
	if got := s.carrier(); got != 2 {
		t.Errorf("carrier %d, want 2", got)
	}
}
