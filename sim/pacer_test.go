package sim

import (
	"math"
	"testing"
	"time"

	"github.com/hetquic/hetquic/sim/cc"
)

// TestPacerBucket checks the token bucket against quic-go's rules: a full
// bucket of ten packets at first, a wake-up when the missing bytes are
// earned but never sooner than 1 ms after the last send, and a bucket no
// larger than max(10 packets, 2 ms at the rate).
func TestPacerBucket(t *testing.T) {
	const ms = time.Millisecond
	p := &pacer{packet: 1500}
	const slow = 150e3 // one packet per 10 ms
	if got := p.budgetAt(0, slow); got != 15000 {
		t.Fatalf("initial budget %d, want 10 packets", got)
	}
	for i := range 10 {
		if p.held(0, slow) {
			t.Fatalf("held after %d packets of the initial burst", i)
		}
		p.onSent(0, 1500, slow)
	}
	if !p.held(0, slow) || !p.held(9*ms, slow) || p.held(10*ms, slow) {
		t.Fatal("after the burst the next packet should wait exactly 10 ms")
	}
	if got := p.releaseAt(slow); got != 10*ms {
		t.Fatalf("releaseAt %v, want 10 ms", got)
	}
	// A fast rate earns a packet in 0.1 ms, but a wake-up comes 1 ms after
	// the last send (and then finds 10 packets' worth).
	const fast = 15e6
	if got := p.releaseAt(fast); got != ms {
		t.Fatalf("releaseAt %v at 15 MB/s, want the 1 ms minimum", got)
	}
	if got := p.budgetAt(ms, fast); got != 15000 {
		t.Fatalf("budget after 1 ms at 15 MB/s: %d, want 15000", got)
	}
	// Idle for a second: the bucket holds max(10 packets, 2 ms of rate).
	if got := p.budgetAt(time.Second, slow); got != 15000 {
		t.Fatalf("budget after idling at 150 kB/s: %d, want 10 packets", got)
	}
	if got := p.budgetAt(time.Second, 100e6); got != 200000 {
		t.Fatalf("budget after idling at 100 MB/s: %d, want 2 ms = 200000 B", got)
	}
	// A wake-up at releaseAt never finds the bucket a byte short, for
	// rates that do not divide the packet evenly.
	for _, rate := range []float64{1, 999.7, 123457.9, 3.3e6, 7e9} {
		q := &pacer{packet: 1441}
		q.onSent(0, 20000, rate)
		if at := q.releaseAt(rate); q.held(at, rate) || at < ms {
			t.Fatalf("rate %g: held at releaseAt %v", rate, at)
		}
	}
}

// fixedWindow is a controller with a constant window that records its
// send times; pacedWindow adds a constant pacing rate.
type fixedWindow struct {
	w    int
	sent []time.Duration
}

func (f *fixedWindow) Name() string                                    { return "fixed" }
func (f *fixedWindow) Window() int                                     { return f.w }
func (f *fixedWindow) OnPacketSent(now time.Duration, _, _ int)        { f.sent = append(f.sent, now) }
func (f *fixedWindow) OnAck(time.Duration, int, time.Duration, cc.RTT) {}
func (f *fixedWindow) OnLoss(time.Duration, int, time.Duration)        {}
func (f *fixedWindow) OnRTTSample(time.Duration, cc.RTT)               {}
func (f *fixedWindow) OnPersistentCongestion(time.Duration)            {}
func (f *fixedWindow) InSlowStart() bool                               { return false }
func (f *fixedWindow) Ssthresh() int                                   { return math.MaxInt }

type pacedWindow struct {
	fixedWindow
	rate float64
}

func (p *pacedWindow) PacingRate(time.Duration) float64 { return p.rate }

// sendTimes runs ctl on one fast (1 Gbit/s, 10 ms) path for one second of
// a bulk transfer and returns its send times.
func sendTimes(t *testing.T, ctl interface {
	cc.Controller
	times() []time.Duration
}) []time.Duration {
	t.Helper()
	s := New(1)
	c, err := NewConn(s, ConnConfig{Scheduler: "single"}, dumbbell(s, 1, 1000, 10*time.Millisecond, 0, 10000))
	if err != nil {
		t.Fatal(err)
	}
	c.setController(c.paths[0], ctl)
	c.Write(1 << 30)
	s.Run(time.Second, 0, nil)
	return ctl.times()
}

func (f *fixedWindow) times() []time.Duration { return f.sent }

// TestPacedSendGaps: a paced path sends at the controller's rate (one
// packet per 10 ms at 150 kB/s after the first ten-packet burst), in
// bursts no larger than the bucket at high rates, and the window still
// bounds what is in flight.
func TestPacedSendGaps(t *testing.T) {
	const ms = time.Millisecond
	slow := &pacedWindow{fixedWindow{w: 1000 * 1500}, 150e3}
	st := sendTimes(t, slow)
	for i, at := range st {
		want := time.Duration(0)
		if i >= 10 {
			want = time.Duration(i-9) * 10 * ms
		}
		if at != want {
			t.Fatalf("packet %d sent at %v, want %v", i, at, want)
		}
	}
	if len(st) != 10+100 {
		t.Fatalf("%d packets in 1 s at 150 kB/s, want 110", len(st))
	}

	// 30 MB/s: 20 packets per ms, bucket 2 ms = 40 packets; the sender
	// wakes every 1 ms and sends what it earned.
	fast := &pacedWindow{fixedWindow{w: 100000 * 1500}, 30e6}
	st = sendTimes(t, fast)
	burst := map[time.Duration]int{}
	for _, at := range st {
		burst[at]++
	}
	for at, n := range burst {
		if n > 40 {
			t.Fatalf("%d packets at %v, more than the 2 ms bucket (40)", n, at)
		}
	}
	if rate := float64(len(st)) * 1500 / 1.0; math.Abs(rate-30e6)/30e6 > 0.01 {
		t.Fatalf("mean rate %.0f B/s over 1 s, want 30e6 within 1 %%", rate)
	}

	// The window caps a pacer that would allow more: 50 packets in flight
	// over a 20 ms RTT is at most 2500 packets per second.
	capped := &pacedWindow{fixedWindow{w: 50 * 1500}, 30e6}
	if n := len(sendTimes(t, capped)); n > 50*1000/20+50 {
		t.Fatalf("%d packets in 1 s with a 50-packet window over 20 ms, want ≤ 2550", n)
	}
}

// TestUnpacedControllers: controllers without cc.Pacer are ACK-clocked as
// before: a 100-packet window goes out at once, and no built-in controller
// but quicgo and bbr gets a pacer.
func TestUnpacedControllers(t *testing.T) {
	st := sendTimes(t, &fixedWindow{w: 100 * 1500})
	for i := range 100 {
		if st[i] != 0 {
			t.Fatalf("packet %d of the first window sent at %v, want 0", i, st[i])
		}
	}
	for _, name := range cc.Names() {
		s := New(1)
		c, err := NewConn(s, ConnConfig{CC: name}, dumbbell(s, 2, 10, 10*time.Millisecond, 0, 100))
		if err != nil {
			t.Fatal(err)
		}
		want := name == "quicgo" || name == "bbr"
		if c.paced != want || (c.paths[0].pace != nil) != want {
			t.Errorf("%s: paced %v, want %v", name, c.paced, want)
		}
	}
}
