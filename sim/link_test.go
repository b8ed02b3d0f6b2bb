package sim

import (
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

// TestLinkRateTrace: a mahimahi trace gives one 1500-byte opportunity per
// line and repeats with the period of its last timestamp.
func TestLinkRateTrace(t *testing.T) {
	s := New(1)
	tr := scenario.RateTrace{Ms: []uint64{1, 1, 5, 10}} // period 10 ms
	l := NewLink(s, "l", LinkParams{Trace: &tr, QueuePkts: 100})
	var at []time.Duration
	sink := receiverFunc(func(*Packet) { at = append(at, s.Now()) })
	for i := 0; i < 6; i++ {
		Send(&Packet{Size: 1500}, []*Link{l}, sink)
	}
	s.Run(0, 0, nil)
	want := []time.Duration{1, 1, 5, 10, 11, 11}
	if len(at) != len(want) {
		t.Fatalf("delivered %d packets, want %d", len(at), len(want))
	}
	for i := range want {
		if at[i] != want[i]*time.Millisecond {
			t.Errorf("packet %d left at %v, want %v ms", i, at[i], want[i])
		}
	}
	// An idle link skips whole periods: a packet at 1 s takes the next opportunity.
	at = nil
	s.At(time.Second+2*time.Millisecond, func() { Send(&Packet{Size: 1500}, []*Link{l}, sink) })
	s.Run(0, 0, nil)
	if len(at) != 1 || at[0] != time.Second+5*time.Millisecond {
		t.Fatalf("after idling: %v, want [1.005s]", at)
	}
	if got := (LinkParams{Trace: &tr}).MeanRateBps(); got != 4*1500*8/0.010 {
		t.Errorf("trace mean rate %v", got)
	}
}

func TestLinkLossTraceAndOutage(t *testing.T) {
	s := New(1)
	l := NewLink(s, "l", LinkParams{LossTrace: []bool{false, true, true}})
	n := 0
	sink := receiverFunc(func(*Packet) { n++ })
	for i := 0; i < 9; i++ {
		Send(&Packet{Size: 100}, []*Link{l}, sink)
	}
	s.Run(0, 0, nil)
	if n != 3 || l.Stats.LossDrops != 6 {
		t.Fatalf("loss trace 0,1,1 over 9 packets: %d delivered, %d dropped", n, l.Stats.LossDrops)
	}
	// An outage drops what is offered during it and what it finds in the
	// queue or in the air (the link model's outage); the link works after.
	r := NewLink(s, "r", LinkParams{RateBps: 1.2e6, QueuePkts: 10}) // 10 ms per 1500 B
	n = 0
	var at []time.Duration
	sink = receiverFunc(func(*Packet) { n++; at = append(at, s.Now()) })
	Send(&Packet{Size: 1500}, []*Link{r}, sink) // leaves at 10 ms: inside the outage
	Send(&Packet{Size: 1500}, []*Link{r}, sink) // leaves at 20 ms: inside
	s.After(5*time.Millisecond, func() { r.SetDown(true); Send(&Packet{Size: 1500}, []*Link{r}, sink) })
	s.After(50*time.Millisecond, func() { r.SetDown(false) })
	s.After(60*time.Millisecond, func() { Send(&Packet{Size: 1500}, []*Link{r}, sink) })
	s.Run(0, 0, nil)
	if n != 1 || r.Stats.OutageDrops != 3 || at[0] != 70*time.Millisecond {
		t.Fatalf("outage: %d delivered (at %v), %d outage drops; want 1 at 70ms and 3", n, at, r.Stats.OutageDrops)
	}
}

// TestLinkSetParams: a rate change applies to packets offered after it;
// packets already offered keep their times.
func TestLinkSetParams(t *testing.T) {
	s := New(1)
	l := NewLink(s, "l", LinkParams{RateBps: 12e6, QueuePkts: 10}) // 1 ms per packet
	var at []time.Duration
	sink := receiverFunc(func(*Packet) { at = append(at, s.Now()) })
	for i := 0; i < 3; i++ {
		Send(&Packet{Size: 1500}, []*Link{l}, sink)
	}
	s.After(500*time.Microsecond, func() {
		l.SetParams(LinkParams{RateBps: 1.2e6, QueuePkts: 10}) // 10 ms per packet
		Send(&Packet{Size: 1500}, []*Link{l}, sink)
	})
	s.Run(0, 0, nil)
	want := []time.Duration{time.Millisecond, 2 * time.Millisecond, 3 * time.Millisecond, 13 * time.Millisecond}
	if len(at) != len(want) {
		t.Fatalf("delivered at %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] {
			t.Errorf("packet %d at %v, want %v", i, at[i], want[i])
		}
	}
}
