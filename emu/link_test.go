package emu

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/linkmodel"
	"github.com/hetquic/hetquic/scenario"
)

type mapTraces struct {
	rate map[string]*scenario.RateTrace
	loss map[string][]bool
}

func (m mapTraces) RateTrace(n string) (*scenario.RateTrace, error) { return m.rate[n], nil }
func (m mapTraces) LossTrace(n string) ([]bool, error)              { return m.loss[n], nil }

func newTestCore(t *testing.T, cfg scenario.Link, tr linkmodel.Traces) *linkCore {
	t.Helper()
	c := newLinkCore("p", Up, rand.New(rand.NewPCG(1, 2)), DefaultMaxPacket, nil)
	if tr == nil {
		tr = mapTraces{}
	}
	if err := c.configure(cfg, tr, 0); err != nil {
		t.Fatal(err)
	}
	return c
}

func pkt(size int) *Packet { return &Packet{Data: make([]byte, size)} }

// drain pops every packet and returns their release times.
func drain(c *linkCore) []time.Duration {
	var out []time.Duration
	for _, p := range c.popDue(math.MaxInt64, nil, func(*Packet) {}) {
		out = append(out, p.release)
	}
	return out
}

func TestDelay(t *testing.T) {
	c := newTestCore(t, scenario.Link{DelayMs: 20}, nil)
	for i := range 10 {
		if cause := c.input(pkt(100), time.Duration(i)*time.Millisecond); cause != CauseNone {
			t.Fatalf("dropped: %v", cause)
		}
	}
	if got := c.popDue(19*time.Millisecond, nil, func(*Packet) {}); len(got) != 0 {
		t.Fatalf("released %d packets before the delay", len(got))
	}
	for i, r := range drain(c) {
		if want := time.Duration(20+i) * time.Millisecond; r != want {
			t.Errorf("packet %d released at %v, want %v", i, r, want)
		}
	}
}

func TestJitter(t *testing.T) {
	const n = 20000
	for _, dist := range []string{"normal", "uniform", "pareto"} {
		for _, reorder := range []bool{false, true} {
			t.Run(dist, func(t *testing.T) {
				c := newTestCore(t, scenario.Link{DelayMs: 10, JitterMs: 2, JitterDist: dist, Reorder: reorder}, nil)
				c.maxHeld = n
				var sum, sum2 float64
				for i := range n {
					c.input(pkt(100), time.Duration(i)*time.Millisecond) // far apart: order rarely binds
				}
				var prev time.Duration
				inversions := 0
				ps := c.popDue(math.MaxInt64, nil, func(*Packet) {})
				for _, p := range ps {
					extra := p.release - p.arrive - 10*time.Millisecond
					if extra < 0 {
						t.Fatalf("delay %v below base", p.release-p.arrive)
					}
					if p.seq < uint64(len(ps)) && p.release < prev {
						t.Fatal("heap released out of order")
					}
					prev = p.release
					x := float64(extra) / 1e6
					sum += x
					sum2 += x * x
				}
				for i := 1; i < len(ps); i++ {
					if ps[i].seq < ps[i-1].seq {
						inversions++
					}
				}
				if !reorder && inversions > 0 {
					t.Errorf("reorder off: %d packets overtook an earlier one", inversions)
				}
				if !reorder {
					return
				}
				if inversions == 0 {
					t.Errorf("reorder on: no packet overtook another")
				}
				mean := sum / n
				std := math.Sqrt(sum2/n - mean*mean)
				tol := 0.05
				if dist == "pareto" {
					tol = 0.15 // heavy tail: the sample std dev converges slowly
				}
				if math.Abs(std-2) > 2*tol {
					t.Errorf("%s: jitter std dev %.3f ms, want 2 ± %.0f%%", dist, std, tol*100)
				}
			})
		}
	}
}

// binomialOK reports whether k losses in n packets is inside the 99 % normal
// approximation interval of Binomial(n, p).
func binomialOK(k, n int, p float64) bool {
	mu, sd := float64(n)*p, math.Sqrt(float64(n)*p*(1-p))
	return math.Abs(float64(k)-mu) <= 2.576*sd
}

func countLoss(c *linkCore, n int) int {
	lost := 0
	for i := range n {
		if c.input(pkt(100), time.Duration(i)) == CauseLoss {
			lost++
		}
		c.popDue(math.MaxInt64, nil, func(*Packet) {})
	}
	return lost
}

func TestBernoulliLoss(t *testing.T) {
	for _, p := range []float64{0.001, 0.01, 0.1, 0.5} {
		c := newTestCore(t, scenario.Link{Loss: p}, nil)
		const n = 100000
		if k := countLoss(c, n); !binomialOK(k, n, p) {
			t.Errorf("loss %v: %d of %d lost, outside the 99%% interval", p, k, n)
		}
		if c.st.Dropped[CauseLoss] != uint64(countLossStat(c)) {
			t.Errorf("counter mismatch")
		}
	}
}

func countLossStat(c *linkCore) uint64 { return c.st.Dropped[CauseLoss] }

func TestGilbertElliottLoss(t *testing.T) {
	ge := &scenario.GilbertElliott{PGoodBad: 0.01, PBadGood: 0.25, LossGood: 0, LossBad: 1}
	c := newTestCore(t, scenario.Link{GilbertElliott: ge}, nil)
	const n = 200000
	lost, bursts, prevLost := 0, 0, false
	for i := range n {
		l := c.input(pkt(100), time.Duration(i)) == CauseLoss
		if l {
			lost++
			if !prevLost {
				bursts++
			}
		}
		prevLost = l
		c.popDue(math.MaxInt64, nil, func(*Packet) {})
	}
	want := ge.MeanLoss()
	if got := float64(lost) / n; math.Abs(got-want)/want > 0.1 {
		t.Errorf("mean loss %.4f, want %.4f ± 10%%", got, want)
	}
	if burst := float64(lost) / float64(bursts); math.Abs(burst-1/ge.PBadGood) > 0.4 {
		t.Errorf("mean burst %.2f packets, want %.2f (1/p_bad_good)", burst, 1/ge.PBadGood)
	}
}

func TestLossTrace(t *testing.T) {
	tr := mapTraces{loss: map[string][]bool{"l": {false, true, false, false}}}
	c := newTestCore(t, scenario.Link{LossTrace: "l"}, tr)
	var got []bool
	for i := range 9 {
		got = append(got, c.input(pkt(10), time.Duration(i)) == CauseLoss)
	}
	want := []bool{false, true, false, false, false, true, false, false, false}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("loss pattern %v, want %v", got, want)
		}
	}
}

func TestRate(t *testing.T) {
	tests := []struct {
		name      string
		link      scenario.Link
		sizes     int // packets arriving at t=0, all 1000 bytes
		wantDrops int
		wantLast  time.Duration
	}{
		// 8 Mbit/s = 1 byte/µs: 1000 bytes take 1 ms.
		{"serialisation", scenario.Link{RateMbps: 8}, 5, 0, 5 * time.Millisecond},
		{"serialisation+delay", scenario.Link{RateMbps: 8, DelayMs: 10}, 5, 0, 15 * time.Millisecond},
		{"queue packets", scenario.Link{RateMbps: 8, QueuePackets: 3}, 5, 2, 3 * time.Millisecond},
		{"queue bytes", scenario.Link{RateMbps: 8, QueueBytes: 2500}, 5, 3, 2 * time.Millisecond},
		{"default queue", scenario.Link{RateMbps: 8}, DefaultQueuePackets + 10, 10, DefaultQueuePackets * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCore(t, tt.link, nil)
			drops := 0
			for range tt.sizes {
				if c.input(pkt(1000), 0) == CauseQueue {
					drops++
				}
			}
			rel := drain(c)
			if drops != tt.wantDrops {
				t.Errorf("%d queue drops, want %d", drops, tt.wantDrops)
			}
			if last := rel[len(rel)-1]; last != tt.wantLast {
				t.Errorf("last release %v, want %v", last, tt.wantLast)
			}
			for i := 1; i < len(rel); i++ {
				if d := rel[i] - rel[i-1]; d != time.Millisecond {
					t.Fatalf("gap %v between packets %d and %d, want 1ms", d, i-1, i)
				}
			}
		})
	}
}

// TestRateLongRun checks the delivered rate of a saturated link over many
// packets (the fractional ns per byte must not drift).
func TestRateLongRun(t *testing.T) {
	for _, mbps := range []float64{1, 2.5, 10, 100, 200} {
		c := newTestCore(t, scenario.Link{RateMbps: mbps, QueuePackets: 100}, nil)
		var bytes int
		var last time.Duration
		gap := time.Duration(1200 * 8 * 1e3 / mbps / 2) // offered load: twice the rate
		for i := range 20000 {
			now := time.Duration(i) * gap
			if c.input(pkt(1200), now) == CauseNone {
				bytes += 1200
			}
			for _, p := range c.popDue(now, nil, func(*Packet) {}) {
				last = p.release
			}
		}
		for _, r := range drain(c) {
			last = r
		}
		got := float64(bytes) * 8 / last.Seconds() / 1e6
		if math.Abs(got-mbps)/mbps > 0.01 {
			t.Errorf("%v Mbit/s: delivered %.3f Mbit/s", mbps, got)
		}
	}
}

func TestRateTrace(t *testing.T) {
	// Opportunities at 1, 2, 2, 5 ms; period 5 ms: 4 × 1500 B per 5 ms.
	tr := mapTraces{rate: map[string]*scenario.RateTrace{"r": {Ms: []uint64{1, 2, 2, 5}}}}
	tests := []struct {
		name    string
		arrive  []time.Duration
		size    int
		wantRel []time.Duration
	}{
		{"one per opportunity", []time.Duration{0, 0, 0, 0, 0}, 1500,
			[]time.Duration{1, 2, 2, 5, 6}},
		{"two small per opportunity", []time.Duration{0, 0, 0, 0}, 750,
			[]time.Duration{1, 1, 2, 2}},
		{"unused opportunities are lost", []time.Duration{0, 3 * time.Millisecond}, 1500,
			[]time.Duration{1, 5}},
		{"wraps to the next period", []time.Duration{5500 * time.Microsecond}, 1500,
			[]time.Duration{6}},
		{"big packet spans opportunities", []time.Duration{0}, 2000 - 1, []time.Duration{2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestCore(t, scenario.Link{RateTrace: "r"}, tr)
			c.maxPkt = 4000
			for _, a := range tt.arrive {
				if cause := c.input(pkt(tt.size), a); cause != CauseNone {
					t.Fatal(cause)
				}
			}
			rel := drain(c)
			for i := range tt.wantRel {
				if rel[i] != tt.wantRel[i]*time.Millisecond {
					t.Fatalf("releases %v, want %v ms", rel, tt.wantRel)
				}
			}
		})
	}
}

func TestRateTraceMean(t *testing.T) {
	rt := scenario.RateTrace{Ms: []uint64{1, 1, 3, 4, 4, 4, 7, 9, 10}}
	c := newTestCore(t, scenario.Link{RateTrace: "r", QueuePackets: 50},
		mapTraces{rate: map[string]*scenario.RateTrace{"r": &rt}})
	var bytes int
	var last time.Duration
	for i := range 20000 {
		now := time.Duration(i) * 500 * time.Microsecond // 24 Mbit/s offered
		if c.input(pkt(1500), now) == CauseNone {
			bytes += 1500
		}
		for _, p := range c.popDue(now, nil, func(*Packet) {}) {
			last = p.release
		}
	}
	for _, r := range drain(c) {
		last = r
	}
	got := float64(bytes) * 8 / last.Seconds() / 1e6
	if want := rt.MeanMbps(); math.Abs(got-want)/want > 0.01 {
		t.Errorf("trace rate %.3f Mbit/s, want %.3f", got, want)
	}
}

func TestOutage(t *testing.T) {
	c := newTestCore(t, scenario.Link{DelayMs: 100}, nil)
	c.input(pkt(10), 0)                                 // released at 100 ms: inside the outage
	c.input(pkt(10), 20*time.Millisecond)               // released at 120 ms: inside
	c.outage(50*time.Millisecond, 100*time.Millisecond) // [50, 150)
	if cause := c.input(pkt(10), 60*time.Millisecond); cause != CauseOutage {
		t.Errorf("arrival during outage: %v, want outage", cause)
	}
	c.input(pkt(10), 40*time.Millisecond)  // released at 140: inside
	c.input(pkt(10), 150*time.Millisecond) // after: delivered at 250
	rel := drain(c)
	if len(rel) != 1 || rel[0] != 250*time.Millisecond {
		t.Errorf("released %v, want [250ms]", rel)
	}
	if got := c.st.Dropped[CauseOutage]; got != 4 {
		t.Errorf("%d outage drops, want 4", got)
	}
}

func TestMalformed(t *testing.T) {
	c := newTestCore(t, scenario.Link{}, nil)
	for _, size := range []int{0, DefaultMaxPacket + 1} {
		if cause := c.input(pkt(size), 0); cause != CauseMalformed {
			t.Errorf("size %d: %v, want malformed", size, cause)
		}
	}
	if cause := c.input(pkt(DefaultMaxPacket), 0); cause != CauseNone {
		t.Errorf("max size: %v", cause)
	}
}

func TestMaxHeld(t *testing.T) {
	c := newTestCore(t, scenario.Link{DelayMs: 1000}, nil)
	c.maxHeld = 10
	drops := 0
	for range 15 {
		if c.input(pkt(10), 0) == CauseQueue {
			drops++
		}
	}
	if drops != 5 {
		t.Errorf("%d drops, want 5", drops)
	}
}

// TestCountersAddUp checks that every packet that entered is out, dropped
// by exactly one cause, or still held, through loss, a queue, an outage and
// malformed packets.
func TestCountersAddUp(t *testing.T) {
	c := newTestCore(t, scenario.Link{DelayMs: 5, JitterMs: 1, Loss: 0.05, RateMbps: 8, QueuePackets: 20}, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 5000 {
		now := time.Duration(i) * 200 * time.Microsecond
		if i == 2000 {
			c.outage(now, 50*time.Millisecond)
		}
		size := 1 + rng.IntN(DefaultMaxPacket+100)
		if i%500 == 0 {
			size = 0
		}
		c.input(pkt(size), now)
		c.popDue(now, nil, func(*Packet) {})
		s := c.stats(now)
		if got := s.PacketsOut + s.Dropped.Total() + uint64(s.Held); got != s.PacketsIn {
			t.Fatalf("after %d packets: out %d + dropped %d + held %d != in %d", i+1, s.PacketsOut, s.Dropped.Total(), s.Held, s.PacketsIn)
		}
	}
	s := c.stats(time.Hour)
	for cause := CauseLoss; cause < numCauses; cause++ {
		if s.Dropped[cause] == 0 {
			t.Errorf("no %v drops: the test does not exercise every cause", cause)
		}
	}
}
