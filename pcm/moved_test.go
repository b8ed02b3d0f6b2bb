package pcm

import (
	"context"
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
			if len(w.streams) != 0 {
				t.Errorf("%d streams still watched", len(w.streams))
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
