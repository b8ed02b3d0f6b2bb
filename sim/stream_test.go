package sim

import (
	"testing"
	"time"
)

// streamsConn is a connection over n paths of dumbbell(mbps, delay, loss).
func streamsConn(t *testing.T, cfg ConnConfig, n int, mbps float64, delay time.Duration, loss float64) (*Sim, *Conn) {
	t.Helper()
	s := New(1)
	c, err := NewConn(s, cfg, dumbbell(s, n, mbps, delay, loss, 100))
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

// doneAt records when each stream was delivered in full.
func doneAt(c *Conn) map[int]time.Duration {
	m := map[int]time.Duration{}
	c.Receiver().OnStream = func(e StreamEvent) {
		if e.Kind == StreamDelivered {
			m[e.Stream] = e.At
		}
	}
	return m
}

// TestStreamPriority: two streams written at the same instant share one
// bottleneck; the more urgent one (lower Priority) gets all of it first and
// finishes in about its own size's transfer time, whatever the order they
// were opened in.
func TestStreamPriority(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{}, 1, 10, 10*time.Millisecond, 0)
	done := doneAt(c)
	const size = 1_000_000
	if _, err := c.OpenStream(size, StreamOpts{Priority: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenStream(size, StreamOpts{Priority: 1}); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Minute, 0, nil)
	lo, hi := done[0], done[1]
	if hi == 0 || lo == 0 {
		t.Fatalf("streams not both delivered: %v", done)
	}
	if hi >= lo || float64(hi) > 0.6*float64(lo) {
		t.Errorf("urgent stream done at %v, the other at %v: want the urgent one first, in about half the time", hi, lo)
	}
}

// TestStreamNoCrossHoL: a packet lost on stream 0 holds back only stream
// 0's later chunks; stream 1's chunks sent after it are delivered at once
// (one reordering buffer per stream, RFC 9000 §2.2).
func TestStreamNoCrossHoL(t *testing.T) {
	s := New(1)
	fwd := NewLink(s, "fwd", LinkParams{Delay: 20 * time.Millisecond, RateBps: 10e6, LossTrace: append([]bool{true}, make([]bool, 10000)...)})
	rev := NewLink(s, "rev", LinkParams{Delay: 20 * time.Millisecond, RateBps: 10e6})
	c, err := NewConn(s, ConnConfig{}, []PathSpec{{Name: "a", Fwd: []*Link{fwd}, Rev: []*Link{rev}}})
	if err != nil {
		t.Fatal(err)
	}
	var maxReorder [2]time.Duration
	c.Receiver().OnDeliver = func(d Delivery) { maxReorder[d.Stream] = max(maxReorder[d.Stream], d.Reorder) }
	if _, err := c.OpenStream(1448, StreamOpts{}); err != nil { // its one chunk is lost
		t.Fatal(err)
	}
	if _, err := c.OpenStream(20*1448, StreamOpts{}); err != nil {
		t.Fatal(err)
	}
	s.Run(time.Minute, 0, nil)
	if !c.Done() {
		t.Fatal("not all acknowledged")
	}
	if maxReorder[1] != 0 {
		t.Errorf("stream 1 waited %v in the reordering buffer behind stream 0's loss", maxReorder[1])
	}
	if c.paths[0].Stats.Lost == 0 {
		t.Error("the loss trace dropped nothing")
	}
}

// TestStreamPinned: a pinned stream's packets, retransmissions included, go
// only on its path; the unpinned stream uses both (path 1 once the pinned
// stream is done: pinned data goes first on its path).
func TestStreamPinned(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{Scheduler: "rr"}, 2, 10, 10*time.Millisecond, 0.02)
	var on [2][2]int // stream, path
	c.Receiver().OnDeliver = func(d Delivery) { on[d.Stream][d.ArrivedOn]++ }
	if _, err := c.OpenStream(500_000, StreamOpts{Pinned: true, Path: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.OpenStream(2_000_000, StreamOpts{}); err != nil { // outlasts the pinned one
		t.Fatal(err)
	}
	s.Run(time.Minute, 0, nil)
	if !c.Done() {
		t.Fatal("not all acknowledged")
	}
	if on[0][0] != 0 || on[0][1] == 0 {
		t.Errorf("pinned stream arrived on paths %v, want only path 1", on[0])
	}
	if on[1][0] == 0 || on[1][1] == 0 {
		t.Errorf("unpinned stream arrived on paths %v, want both", on[1])
	}
	if c.paths[1].Stats.Retransmitted == 0 {
		t.Error("no retransmission on path 1: the test does not cover pinned retransmissions")
	}
}

// TestStreamOptsErrors: bad options are refused with the field named.
func TestStreamOptsErrors(t *testing.T) {
	_, c := streamsConn(t, ConnConfig{}, 2, 10, time.Millisecond, 0)
	for _, o := range []StreamOpts{{Pinned: true, Path: 2}, {Pinned: true, Path: -1}, {Window: 100}, {Deadline: -1}} {
		if _, err := c.OpenStream(1, o); err == nil {
			t.Errorf("%+v accepted", o)
		}
	}
	if _, err := c.OpenStream(-1, StreamOpts{}); err == nil {
		t.Error("negative size accepted")
	}
}

// TestStreamDeadline: a frame that cannot make its deadline is reported
// missed at the deadline and, delivered later, Late; with DropLate the
// sender stops sending it and it is never delivered.
func TestStreamDeadline(t *testing.T) {
	for _, drop := range []bool{false, true} {
		s, c := streamsConn(t, ConnConfig{}, 1, 1, 10*time.Millisecond, 0)
		var log WorkloadLog
		log.Attach(c.Receiver())
		var events []StreamEvent
		st, err := c.OpenStream(200_000, StreamOpts{Deadline: 100 * time.Millisecond, DropLate: drop}) // 1.6 s at 1 Mbit/s
		if err != nil {
			t.Fatal(err)
		}
		st.OnDone = func(e StreamEvent) { events = append(events, e) }
		s.Run(time.Minute, 0, nil)
		if len(events) == 0 || events[0].Kind != StreamMissed || events[0].At != 100*time.Millisecond {
			t.Fatalf("drop %v: events %+v, want a miss at 100ms first", drop, events)
		}
		if log.Missed != 1 || log.Deadlines != 1 || log.MissRatio() != 1 {
			t.Errorf("drop %v: log missed %d of %d", drop, log.Missed, log.Deadlines)
		}
		switch {
		case !drop && (len(events) != 2 || !events[1].Late || events[1].Kind != StreamDelivered):
			t.Errorf("events %+v, want a late delivery after the miss", events)
		case drop && (len(events) != 1 || c.LateDrops != 1 || c.Receiver().Delivered() >= st.Written()):
			t.Errorf("DropLate: events %+v, late drops %d, delivered %d of %d", events, c.LateDrops, c.Receiver().Delivered(), st.Written())
		}
	}
}

// TestOpenStreamClose: an open-ended stream completes when closed after
// all its data was delivered.
func TestOpenStreamClose(t *testing.T) {
	s, c := streamsConn(t, ConnConfig{}, 1, 10, 10*time.Millisecond, 0)
	done := doneAt(c)
	st, err := c.OpenStream(0, StreamOpts{})
	if err != nil {
		t.Fatal(err)
	}
	st.Write(10_000)
	s.At(time.Second, st.Close)
	s.Run(time.Minute, 0, nil)
	if done[0] != time.Second {
		t.Errorf("stream done at %v, want at its close (1s)", done[0])
	}
}
