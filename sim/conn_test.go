package sim

import (
	"slices"
	"testing"
	"time"
)

// dumbbell builds n symmetric paths of rate Mbit/s, one-way delay and
// loss, with a queue of q packets, returning their specs.
func dumbbell(s *Sim, n int, mbps float64, delay time.Duration, loss float64, q int) []PathSpec {
	var out []PathSpec
	for i := 0; i < n; i++ {
		name := string(rune('a' + i))
		fwd := NewLink(s, name+"/fwd", LinkParams{Delay: delay, RateBps: mbps * 1e6, Loss: loss, QueuePkts: q})
		rev := NewLink(s, name+"/rev", LinkParams{Delay: delay, RateBps: mbps * 1e6, QueuePkts: q})
		out = append(out, PathSpec{Name: name, Fwd: []*Link{fwd}, Rev: []*Link{rev}})
	}
	return out
}

func transfer(t testing.TB, seed uint64, paths int, bytes int64, cfg ConnConfig, loss float64) (fct time.Duration, s *Sim, c *Conn) {
	s = New(seed)
	c, err := NewConn(s, cfg, dumbbell(s, paths, 10, 20*time.Millisecond, loss, 100))
	if err != nil {
		t.Fatal(err)
	}
	return complete(t, s, c, bytes, 10*time.Minute, 0, nil), s, c
}

// complete writes bytes on c and runs s until the last chunk is delivered,
// failing t if that does not happen by until (0: no limit); it returns the
// completion time. sample, when not nil, is called every `every` of
// virtual time.
func complete(t testing.TB, s *Sim, c *Conn, bytes int64, until, every time.Duration, sample func()) time.Duration {
	var fct time.Duration
	done := false
	c.Receiver().OnDeliver = func(d Delivery) {
		if d.Chunk == c.Written()-1 {
			fct, done = s.Now(), true
			s.Stop()
		}
	}
	c.Write(bytes)
	var progress func(time.Duration)
	if sample != nil {
		progress = func(time.Duration) { sample() }
	}
	s.Run(until, every, progress)
	if !done {
		t.Fatalf("%d B over %d paths did not complete: delivered %d of %d chunks", bytes, len(c.paths), c.Receiver().Delivered(), c.Written())
	}
	return fct
}

func TestTransferSinglePath(t *testing.T) {
	fct, s, c := transfer(t, 1, 1, 10<<20, ConnConfig{}, 0)
	ideal := time.Duration(float64(10<<20) / float64(c.Payload()) * 1500 * 8 / 10e6 * float64(time.Second))
	t.Logf("fct %v (ideal %v), events %d, stats %+v", fct, ideal, s.Events(), c.PathStats())
	if fct < ideal || fct > ideal*13/10 {
		t.Errorf("fct %v, want within [1, 1.3]× %v", fct, ideal)
	}
}

// TestTransferTwoPaths: over two equal 10 Mbit/s paths with 1 % loss, every
// scheduler that spreads data finishes 5 MiB clearly faster than the same
// transfer over one such path; redundant, which sends everything on both,
// gains nothing in throughput but must not be slower.
func TestTransferTwoPaths(t *testing.T) {
	const size = 5 << 20
	one, _, _ := transfer(t, 1, 1, size, ConnConfig{}, 0.01)
	for _, tc := range []struct {
		sched  string
		atMost float64 // two-path FCT / one-path FCT
	}{
		{"rr", 0.7}, {"minrtt", 0.7}, {"blest", 0.7}, {"ecf", 0.7}, {"late", 0.7}, {"mams", 0.7},
		{"redundant", 1.0},
	} {
		fct, s, c := transfer(t, 1, 2, size, ConnConfig{Scheduler: tc.sched}, 0.01)
		ratio := float64(fct) / float64(one)
		t.Logf("%s: fct %v (%.2f× one path's %v), events %d, stats %+v", tc.sched, fct, ratio, one, s.Events(), c.PathStats())
		if ratio > tc.atMost {
			t.Errorf("%s: two paths took %.2f× one path's time (%v vs %v), want ≤ %.2f×", tc.sched, ratio, fct, one, tc.atMost)
		}
	}
}

// TestProbeCopyAcked: a PTO probe carries a copy of a pending chunk; when
// that copy is acknowledged first, the chunk must leave the queue (a
// regression: it stayed at its head and was resent forever).
func TestProbeCopyAcked(t *testing.T) {
	s := New(1)
	c, err := NewConn(s, ConnConfig{RecvWindow: 1500}, dumbbell(s, 1, 10, 10*time.Millisecond, 0, 100))
	if err != nil {
		t.Fatal(err)
	}
	c.Write(5 * 1448) // flow control lets chunk 0 go; 1–4 wait
	c.peerMax = 2 * 1448
	if ch := c.PendingAt(0); ch != 1 { // numbers chunk 1, queued
		t.Fatalf("first pending chunk %d, want 1", ch)
	}
	c.sendChunk(c.paths[0], 1, true)
	// One ACK acknowledges both (every second packet): chunk 1's probe copy
	// is acknowledged while chunk 1 is still queued.
	done := false
	c.Receiver().OnDeliver = func(d Delivery) {
		if d.Chunk == 4 {
			done = true
		}
	}
	s.Run(10*time.Second, 0, nil)
	if !done || c.paths[0].Stats.Sent > 8 {
		t.Fatalf("delivered all: %v; sent %d packets for 5 chunks", done, c.paths[0].Stats.Sent)
	}
}

// TestStreamWindow: a stream window smaller than the path's BDP caps the
// transfer at about window/RTT (MAX_STREAM_DATA returns with the ACKs, one
// round trip after the data), and the sender never has more than the
// window beyond what the receiver delivered in order. The connection
// window (16 MiB) is not what binds.
func TestStreamWindow(t *testing.T) {
	const window = 100_000
	s := New(1)
	// 100 Mbit/s, 40 ms RTT: BDP 500 kB, five times the window.
	c, err := NewConn(s, ConnConfig{StreamWindow: window}, dumbbell(s, 1, 100, 20*time.Millisecond, 0, 1000))
	if err != nil {
		t.Fatal(err)
	}
	const size = 10_000_000
	var fct time.Duration
	c.Receiver().OnDeliver = func(d Delivery) {
		if d.Chunk == c.Written()-1 {
			fct = s.Now()
			s.Stop()
		}
	}
	var check *Timer
	check = s.NewTimer(func() {
		ahead := int64(c.nextNew-c.Receiver().Delivered()) * int64(c.Payload())
		if ahead > window {
			t.Fatalf("%v: %d bytes sent beyond in-order delivery, window %d", s.Now(), ahead, window)
		}
		check.Set(s.Now() + time.Millisecond)
	})
	check.Set(0)
	c.Write(size)
	s.Run(time.Minute, 0, nil)
	if fct == 0 {
		t.Fatal("transfer did not complete")
	}
	goodput := float64(size) / fct.Seconds()
	bound := window / (40 * time.Millisecond).Seconds() // 2.5 MB/s
	t.Logf("fct %v, goodput %.0f B/s, window/RTT %.0f B/s", fct, goodput, bound)
	if goodput < 0.8*bound || goodput > 1.05*bound {
		t.Errorf("goodput %.0f B/s, want within [0.8, 1.05]× window/RTT = %.0f", goodput, bound)
	}
}

// overshootWindow is a fixed window whose sender, like quic-go's, sends while
// any of the window is unused (cc.WindowOvershoot).
type overshootWindow struct{ fixedWindow }

func (*overshootWindow) OvershootsWindow() bool { return true }

// TestWindowOvershoot: by default a packet is sent only if it fits in the
// window; a controller with cc.WindowOvershoot sends while bytes in flight
// are below the window (quic-go's CanSend), so a window one byte over ten
// packets lets eleven go, and a window of exactly ten packets still ten.
func TestWindowOvershoot(t *testing.T) {
	atZero := func(st []time.Duration) int {
		n := 0
		for _, at := range st {
			if at == 0 {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		w         int
		overshoot bool
		want      int
	}{
		{10*1500 + 1, false, 10},
		{10*1500 + 1, true, 11},
		{10 * 1500, true, 10},
		{10*1500 - 1, true, 10},
	} {
		var got int
		if tc.overshoot {
			got = atZero(sendTimes(t, &overshootWindow{fixedWindow{w: tc.w}}))
		} else {
			got = atZero(sendTimes(t, &fixedWindow{w: tc.w}))
		}
		if got != tc.want {
			t.Errorf("window %d B, overshoot %v: %d packets sent at once, want %d", tc.w, tc.overshoot, got, tc.want)
		}
	}
}

// AppendPending lists what PendingAt gives position by position —
// retransmissions first, chunks sent ahead skipped — and numbers no more
// chunks than the last PendingAt would.
func TestAppendPendingMatchesPendingAt(t *testing.T) {
	s := New(1)
	c, err := NewConn(s, ConnConfig{}, dumbbell(s, 1, 10, 10*time.Millisecond, 0, 100))
	if err != nil {
		t.Fatal(err)
	}
	c.Write(40 * 1448)
	c.PendingAt(9) // numbers chunks 0–9
	c.retx = []int{2, 5}
	c.sentAhead[c.nextNew+1], c.sentAhead[c.nextNew+4] = true, true
	for n := range 20 {
		var want []int
		for i := range n {
			want = append(want, c.PendingAt(i))
		}
		numbered := c.nChunks
		if got := c.AppendPending(nil, n); !slices.Equal(got, want) || c.nChunks != numbered {
			t.Fatalf("AppendPending(%d) = %v (%d chunks numbered), want %v (%d)", n, got, c.nChunks, want, numbered)
		}
	}
}
