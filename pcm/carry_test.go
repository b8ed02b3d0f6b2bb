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
// slow path, and stream 8's response came on the fast one. Counted again,
// the stale copy tied with stream 8's bytes and the tie named the slow
// path, which would give the 100 ms path a sample of the fast one; counted
// once (streamEnds), it adds nothing, and the carrier is the fast path.
func TestCarrierIgnoresOtherStreams(t *testing.T) {
	slow, fast := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.1.1:2")
	local := &localIndex{}
	local.set(net.UDPAddrFromAddrPort(slow), 0)
	local.set(net.UDPAddrFromAddrPort(fast), 1)
	rx := newRxLedger(2)
	w := newMoveWatch(nil, rx, local, fast)
	w.record(qlog.TupleAssigned{TupleID: "1", Local: qlog.TupleEndpointInfo{IPv4: fast}})
	w.record(qlog.TupleAssigned{TupleID: "", Local: qlog.TupleEndpointInfo{IPv4: slow}})
	response := func(tuple string, id quic.StreamID) qlog.PacketReceived {
		e := qlog.PacketReceived{Tuple: tuple, Frames: []qlog.Frame{{Frame: &qlog.StreamFrame{StreamID: id, Length: 1057, Fin: true}}}}
		e.Header.PacketType = qlog.PacketType1RTT
		return e
	}
	before := rx.snapshot()
	w.record(response("1", 4))
	if got := rx.carrierSince(before); got != 1 {
		t.Fatalf("request 1: carrier %d, want 1 (fast)", got)
	}
	before = rx.snapshot()
	w.record(response("", 4)) // the stale copy, on slow
	w.record(response("1", 8))
	if got := rx.carrierSince(before); got != 1 {
		t.Errorf("request 2: carrier %d, want 1 (fast): its own bytes came on fast", got)
	}
	if got := rx.snapshot(); got[0] != 0 || got[1] != 2*1057 {
		t.Errorf("ledger %v, want [0 %d]: each response's bytes once", got, 2*1057)
	}
}

// TestStreamEnds: a request stream's bytes count once, on their first
// copy, whatever order the copies come in; a stream that ended counts
// nothing more, and leaves the window once every earlier one has; other
// streams than requests' count nothing; the window never outgrows its
// bound; and counting allocates nothing once the window has its array.
func TestStreamEnds(t *testing.T) {
	type frame struct {
		id         quic.StreamID
		off, n     int64
		fin, reset bool
	}
	tests := []struct {
		name   string
		frames []frame
		fresh  []int64 // what each frame adds
		below  quic.StreamID
	}{
		{"in order", []frame{{id: 0, n: 100}, {id: 0, off: 100, n: 50, fin: true}}, []int64{100, 50}, 4},
		{"a copy after the end", []frame{{id: 0, n: 100, fin: true}, {id: 0, n: 100, fin: true}}, []int64{100, 0}, 4},
		{"a copy of part", []frame{{id: 4, n: 1200}, {id: 4, off: 600, n: 1200}, {id: 4, n: 600}}, []int64{1200, 600, 0}, 0},
		{"a gap filled late", []frame{{id: 0, off: 1000, n: 200}, {id: 0, n: 1000}}, []int64{1200, 0}, 0},
		{"ended out of order", []frame{{id: 4, n: 10, fin: true}, {id: 0, n: 10}, {id: 0, off: 10, n: 0, fin: true}, {id: 4, n: 10}}, []int64{10, 10, 0, 0}, 8},
		{"reset", []frame{{id: 0, n: 10}, {id: 0, reset: true}, {id: 0, off: 10, n: 10}}, []int64{10, 0, 0}, 4},
		{"not a request's stream", []frame{{id: 2, n: 10}, {id: 3, n: 10}, {id: 1, n: 10}}, []int64{0, 0, 0}, 0},
		{"past the bound", []frame{{id: 0, n: 10}, {id: 4 * maxStreamEnds, n: 10}, {id: 0, n: 20}}, []int64{10, 10, 0}, 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s streamEnds
			for i, f := range tt.frames {
				var q qlog.Frame
				if f.reset {
					q.Frame = &qlog.ResetStreamFrame{StreamID: f.id}
				} else {
					q.Frame = &qlog.StreamFrame{StreamID: f.id, Offset: f.off, Length: f.n, Fin: f.fin}
				}
				if got := s.fresh([]qlog.Frame{q}); got != tt.fresh[i] {
					t.Errorf("frame %d %+v: %d new bytes, want %d", i, f, got, tt.fresh[i])
				}
			}
			if s.below != tt.below || len(s.win) > maxStreamEnds {
				t.Errorf("window from %d, %d long: want from %d, at most %d", s.below, len(s.win), tt.below, maxStreamEnds)
			}
		})
	}
	if raceEnabled {
		return // the race detector's instrumentation allocates
	}
	var s streamEnds
	frames := []qlog.Frame{{Frame: &qlog.StreamFrame{Length: 1000, Fin: true}}}
	sf := frames[0].Frame.(*qlog.StreamFrame)
	if n := testing.AllocsPerRun(100, func() { s.fresh(frames); sf.StreamID += 4 }); n != 0 {
		t.Errorf("a request's response: %v allocations, want 0", n)
	}
}
