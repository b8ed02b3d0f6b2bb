package pcm

import (
	"context"
	"net"
	"net/netip"
	"testing"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"
	"github.com/quic-go/quic-go/qlogwriter"
)

// sent is a qlog packet_sent event carrying the first bytes of streams ids.
func sent(ids ...quic.StreamID) qlog.PacketSent {
	var e qlog.PacketSent
	for _, id := range ids {
		e.Frames = append(e.Frames, qlog.Frame{Frame: &qlog.StreamFrame{StreamID: id}})
	}
	return e
}

// TestMoveWatch pins which requests the watch reports as carried on the
// old path: those whose first packet left after Switch and before quic-go
// logged the move.
func TestMoveWatch(t *testing.T) {
	moved := qlog.TupleAssigned{TupleID: ""}
	tests := []struct {
		name   string
		run    func(w *moveWatch)
		stream quic.StreamID
		early  bool // leftEarly(stream)
		path   int
		any    bool // sentEarly: some request's data left on the old path
	}{
		{"no switch", func(w *moveWatch) { w.watch(0); w.record(sent(0)) }, 0, false, 0, false},
		{"left before the move", func(w *moveWatch) {
			w.switching(2)
			w.watch(4)
			w.record(sent(4))
			w.record(moved)
		}, 4, true, 2, true},
		{"left after the move", func(w *moveWatch) {
			w.switching(2)
			w.watch(4)
			w.record(moved)
			w.record(sent(4))
		}, 4, false, 0, false},
		{"only the first packet counts", func(w *moveWatch) {
			w.switching(1)
			w.watch(8)
			w.record(moved)
			w.record(sent(8))
			w.switching(0)
			w.record(sent(8)) // a later packet of the same request
		}, 8, false, 0, true},
		{"another stream's packet", func(w *moveWatch) {
			w.switching(1)
			w.watch(8)
			w.record(sent(0, 12))
			w.record(moved)
			w.record(sent(8))
		}, 8, false, 0, true},
		{"the old path's tuple is not the move", func(w *moveWatch) {
			w.switching(3)
			w.watch(8)
			w.record(qlog.TupleAssigned{TupleID: "1"})
			w.record(sent(8))
		}, 8, true, 3, true},
		{"a failed switch settles", func(w *moveWatch) {
			w.switching(3)
			w.settled()
			w.watch(8)
			w.record(sent(8))
		}, 8, false, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newMoveWatch(nil, newRxLedger(2), &localIndex{}, netip.AddrPort{})
			tt.run(w)
			path, early := w.leftEarly(tt.stream)
			if early != tt.early || (early && path != tt.path) {
				t.Errorf("leftEarly = %d, %v; want %d, %v", path, early, tt.path, tt.early)
			}
			if w.sentEarly() != tt.any {
				t.Errorf("sentEarly = %v, want %v", w.sentEarly(), tt.any)
			}
			if len(w.streams) != 0 || w.unsent != 0 {
				t.Errorf("%d streams still watched, %d unsent", len(w.streams), w.unsent)
			}
			if w.sendWatched.Load() != w.pending {
				t.Errorf("sent packets watched: %v with a switch pending: %v", w.sendWatched.Load(), w.pending)
			}
		})
	}
}

// recording is a qlog trace that keeps the names of its events.
type recording struct{ names *[]string }

func (r recording) AddProducer() qlogwriter.Recorder { return r }
func (r recording) RecordEvent(e qlogwriter.Event)   { *r.names = append(*r.names, e.Name()) }
func (r recording) Close() error                     { return nil }

// TestMoveWatchPassesEventsOn: a caller's own tracer still sees every event.
func TestMoveWatchPassesEventsOn(t *testing.T) {
	var names []string
	w := newMoveWatch(func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return recording{&names} }, newRxLedger(2), &localIndex{}, netip.AddrPort{})
	r := w.tracer(context.Background(), true, quic.ConnectionID{}).AddProducer()
	r.RecordEvent(sent(0))
	r.RecordEvent(qlog.TupleAssigned{})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if len(names) != 2 || names[0] != "transport:packet_sent" {
		t.Errorf("caller's tracer saw %q", names)
	}
}

// TestMoveWatchSkipsHTTP3Producer: the connection's producer (the first)
// gets the watch; a later one (http3's) gets only the caller's recorder,
// or none without a caller's tracer, so that http3 builds no events for
// nobody — while a caller's tracer still sees http3's events.
func TestMoveWatchSkipsHTTP3Producer(t *testing.T) {
	w := newMoveWatch(nil, newRxLedger(2), &localIndex{}, netip.AddrPort{})
	tr := w.tracer(context.Background(), true, quic.ConnectionID{})
	if r := tr.AddProducer(); r == nil {
		t.Fatal("the connection's producer got no recorder")
	}
	if r := tr.AddProducer(); r != nil {
		t.Errorf("http3's producer got a recorder (%T) with no tracer of the caller's", r)
	}
	var names []string
	w = newMoveWatch(func(context.Context, bool, quic.ConnectionID) qlogwriter.Trace { return recording{&names} }, newRxLedger(2), &localIndex{}, netip.AddrPort{})
	tr = w.tracer(context.Background(), true, quic.ConnectionID{})
	tr.AddProducer()
	r := tr.AddProducer()
	if r == nil {
		t.Fatal("http3's producer got no recorder although the caller traces")
	}
	r.RecordEvent(sent(0))
	if len(names) != 1 {
		t.Errorf("caller's tracer saw %q from http3's producer", names)
	}
}

// acked is a received qlog packet of type pt carrying an ACK of r.
func acked(pt qlog.PacketType, r qlog.AckRange) qlog.PacketReceived {
	var e qlog.PacketReceived
	e.Header.PacketType = pt
	ack := &qlog.AckFrame{AckRanges: []qlog.AckRange{r}}
	e.Frames = []qlog.Frame{{Frame: ack}}
	return e
}

// TestMoveWatchCountsNewAcks: the stall detector's evidence counts only
// 1-RTT ACKs that acknowledge a newer packet than any before: a server's
// retransmissions repeat old ACKs, and handshake packet numbers are
// another space.
func TestMoveWatchCountsNewAcks(t *testing.T) {
	w := newMoveWatch(nil, newRxLedger(2), &localIndex{}, netip.MustParseAddrPort("10.0.0.1:1"))
	for _, step := range []struct {
		e    qlog.PacketReceived
		want uint64
	}{
		{acked(qlog.PacketTypeHandshake, qlog.AckRange{Largest: 7}), 0},
		{acked(qlog.PacketType1RTT, qlog.AckRange{Largest: 3}), 1},
		{acked(qlog.PacketType1RTT, qlog.AckRange{Largest: 3}), 1}, // repeated
		{acked(qlog.PacketType1RTT, qlog.AckRange{Largest: 2}), 1}, // older
		{acked(qlog.PacketType1RTT, qlog.AckRange{Largest: 9}), 2},
	} {
		w.record(step.e)
		if got := w.acks.Load(); got != step.want {
			t.Fatalf("after an ACK up to %d (%v): %d counted, want %d", step.e.Frames[0].Frame.(*qlog.AckFrame).LargestAcked(), step.e.Header.PacketType, got, step.want)
		}
	}
}

// got is a received 1-RTT qlog packet on tuple carrying n bytes of
// request stream id, from its start.
func got(tuple string, id quic.StreamID, n int64) qlog.PacketReceived {
	e := qlog.PacketReceived{Tuple: tuple, Frames: []qlog.Frame{{Frame: &qlog.StreamFrame{StreamID: id, Length: n}}}}
	e.Header.PacketType = qlog.PacketType1RTT
	return e
}

// TestMoveWatchCountsByTuple: received bytes go to the path of the tuple
// they arrived on, and the active tuple's cached path follows a move
// (quic-go renames the old tuple and assigns "" the new local address).
// An address no path has yet stays unknown until one does.
func TestMoveWatchCountsByTuple(t *testing.T) {
	a, b := netip.MustParseAddrPort("10.0.0.1:1"), netip.MustParseAddrPort("10.0.1.1:2")
	local := &localIndex{}
	local.set(net.UDPAddrFromAddrPort(a), 0)
	rx := newRxLedger(2)
	w := newMoveWatch(nil, rx, local, a)
	w.record(got("", 0, 100))
	w.record(qlog.TupleAssigned{TupleID: "1", Local: qlog.TupleEndpointInfo{IPv4: a}})
	w.record(qlog.TupleAssigned{TupleID: "", Local: qlog.TupleEndpointInfo{IPv4: b}})
	w.record(got("", 4, 10)) // b has no path yet: counted nowhere
	local.set(net.UDPAddrFromAddrPort(b), 1)
	w.record(got("", 8, 20))
	w.record(got("1", 12, 1))
	if s := rx.snapshot(); s[0] != 101 || s[1] != 20 {
		t.Errorf("ledger %v, want [101 20]", s)
	}
}

// TestRxLedgerLastPath: the ledger names the path of the latest bytes
// (the failover's first choice when it is not the path that failed).
func TestRxLedgerLastPath(t *testing.T) {
	l := newRxLedger(3)
	if p := l.lastPath(); p != -1 {
		t.Fatalf("before any bytes: %d, want -1", p)
	}
	l.add(2, 10)
	l.add(0, 5)
	l.add(-1, 5) // an unknown tuple changes nothing
	if p := l.lastPath(); p != 0 {
		t.Errorf("last path %d, want 0", p)
	}
}

// BenchmarkMoveWatchRecord is the watch's own share of a small GET's CPU:
// the qlog events of one request as quic-go hands them to the recorder
// (already built, boxed in the Event interface), from the request's
// watch to its leftEarly; each request on a stream of its own, its
// response's bytes counted once (streamEnds). quic-go's cost of building
// them is not in it.
func BenchmarkMoveWatchRecord(b *testing.B) {
	dial := netip.MustParseAddrPort("10.0.0.1:4000")
	local := &localIndex{}
	local.m = map[netip.AddrPort]int{dial: 0}
	w := newMoveWatch(nil, newRxLedger(3), local, dial)
	r := w.tracer(context.Background(), true, quic.ConnectionID{}).AddProducer()
	req := sent(0)
	frames := []*qlog.StreamFrame{req.Frames[0].Frame.(*qlog.StreamFrame)}
	stream := func(off, n int64) qlog.Frame {
		f := &qlog.StreamFrame{Offset: off, Length: n, Fin: n < 1200}
		frames = append(frames, f)
		return qlog.Frame{Frame: f}
	}
	ack := qlog.Frame{Frame: &qlog.AckFrame{AckRanges: []qlog.AckRange{{Largest: 5}}}}
	rcvd := func(frames ...qlog.Frame) qlogwriter.Event {
		e := qlog.PacketReceived{Frames: frames}
		e.Header.PacketType = qlog.PacketType1RTT
		return e
	}
	events := []qlogwriter.Event{
		req,
		qlog.MetricsUpdated{},
		rcvd(ack, stream(0, 1200)),
		rcvd(stream(1200, 1200)),
		rcvd(stream(2400, 1200)),
		rcvd(stream(3600, 1200)),
		rcvd(stream(4800, 400)),
		sent(),
		qlog.MetricsUpdated{},
	}
	b.ReportAllocs()
	for id := quic.StreamID(0); b.Loop(); id += 4 {
		for _, f := range frames {
			f.StreamID = id
		}
		w.watch(id)
		for _, e := range events {
			r.RecordEvent(e)
		}
		w.leftEarly(id)
	}
}
