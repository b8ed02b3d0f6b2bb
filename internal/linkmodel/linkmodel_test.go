package linkmodel

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/hetquic/hetquic/scenario"
)

const ms = time.Millisecond

// countingSource counts the draws made from it.
type countingSource struct {
	rand.Source
	n int
}

func (c *countingSource) Uint64() uint64 { c.n++; return c.Source.Uint64() }

// offer is one packet of a table case: its time and size, and what the link
// must do with it.
type offer struct {
	at      time.Duration
	size    int
	want    Verdict
	release time.Duration // when want is Pass
}

func TestAdmitTable(t *testing.T) {
	trace := &scenario.RateTrace{Ms: []uint64{1, 1, 5, 10}} // period 10 ms
	tests := []struct {
		name   string
		p      Params
		offers []offer
	}{
		{"unlimited: delay only, no queue", Params{Delay: 10 * ms},
			[]offer{{0, 1000, Pass, 10 * ms}, {0, 1000, Pass, 10 * ms}, {ms, 1500, Pass, 11 * ms}}},
		// 8 Mbit/s = 1 byte/µs: 1000 bytes take 1 ms.
		{"serialisation", Params{RateBps: 8e6, Delay: 5 * ms},
			[]offer{{0, 1000, Pass, 6 * ms}, {0, 1000, Pass, 7 * ms}, {10 * ms, 500, Pass, 15*ms + 500*time.Microsecond}}},
		{"queue packets", Params{RateBps: 8e6, QueuePkts: 2},
			[]offer{{0, 1000, Pass, ms}, {0, 1000, Pass, 2 * ms}, {0, 1000, DropQueue, 0}, {ms, 1000, Pass, 3 * ms}}},
		{"queue bytes", Params{RateBps: 8e6, QueueBytes: 2500},
			[]offer{{0, 1000, Pass, ms}, {0, 1000, Pass, 2 * ms}, {0, 1000, DropQueue, 0}, {0, 500, Pass, 2*ms + 500*time.Microsecond}}},
		// Each line of the trace sends 1500 bytes; a packet leaves at the
		// opportunity that sends its last byte; bytes left over serve the next.
		{"rate trace", Params{Trace: trace},
			[]offer{{0, 1500, Pass, ms}, {0, 750, Pass, ms}, {0, 750, Pass, ms}, {0, 1500, Pass, 5 * ms}, {0, 1500, Pass, 10 * ms}, {0, 1500, Pass, 11 * ms},
				{1002 * ms, 1500, Pass, 1005 * ms}}},
		{"loss trace cycles", Params{LossTrace: []bool{false, true}},
			[]offer{{0, 10, Pass, 0}, {0, 10, DropLoss, 0}, {0, 10, Pass, 0}, {0, 10, DropLoss, 0}}},
		{"FIFO without reorder", Params{Delay: 10 * ms, RateBps: 8e6},
			[]offer{{0, 1000, Pass, 11 * ms}, {0, 1, Pass, 11*ms + time.Microsecond}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := New(tt.p, nil, 0)
			for i, o := range tt.offers {
				v, _, rel := l.Admit(o.at, o.size, true)
				if v != o.want || (v == Pass && rel != o.release) {
					t.Errorf("offer %d: verdict %d release %v, want %d %v", i, v, rel, o.want, o.release)
				}
			}
		})
	}
}

func TestDefaultQueue(t *testing.T) {
	l := New(Params{RateBps: 8e6}, nil, 0)
	drops := 0
	for range DefaultQueuePackets + 10 {
		if v, _, _ := l.Admit(0, 1000, true); v == DropQueue {
			drops++
		}
	}
	if drops != 10 {
		t.Errorf("%d drops past the default queue, want 10", drops)
	}
	if n, b := l.Queued(0); n != DefaultQueuePackets || b != DefaultQueuePackets*1000 {
		t.Errorf("queued %d packets %d bytes", n, b)
	}
	if n, _ := l.Queued(time.Hour); n != 0 {
		t.Errorf("%d packets still queued an hour later", n)
	}
}

// TestDriverBound: a driver at its memory bound gets queue drops, after the
// loss draw (so its bound does not shift the random sequence).
func TestDriverBound(t *testing.T) {
	src := &countingSource{Source: rand.NewPCG(1, 2)}
	l := New(Params{Loss: 0.5}, rand.New(src), 0)
	v, _, _ := l.Admit(0, 10, false)
	if src.n != 1 || (v != DropQueue && v != DropLoss) {
		t.Errorf("verdict %d after %d draws, want a queue (or loss) drop after 1", v, src.n)
	}
}

// TestDraws pins the documented number of draws per packet.
func TestDraws(t *testing.T) {
	ge := &scenario.GilbertElliott{PGoodBad: 0.1, PBadGood: 0.5, LossGood: 0, LossBad: 1}
	tests := []struct {
		name string
		p    Params
		want int
	}{
		{"nothing random", Params{Delay: ms}, 0},
		{"Bernoulli", Params{Loss: 0.01}, 1},
		{"Gilbert–Elliott with loss_good 0: still two", Params{GE: ge}, 2},
		{"loss trace", Params{LossTrace: []bool{false}}, 0},
		{"uniform jitter", Params{Jitter: ms, JitterDist: "uniform"}, 1},
		{"Bernoulli and jitter", Params{Loss: 0.01, Jitter: ms, JitterDist: "uniform"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &countingSource{Source: rand.NewPCG(3, 4)}
			l := New(tt.p, rand.New(src), 0)
			for i := range 100 {
				before := src.n
				if v, _, _ := l.Admit(time.Duration(i)*time.Second, 100, true); v == Pass || tt.p.Jitter == 0 {
					if got := src.n - before; got != tt.want {
						t.Fatalf("packet %d: %d draws, want %d", i, got, tt.want)
					}
				}
			}
		})
	}
}

// TestGilbertElliottOrder: the drop is decided in the current state, then
// the state changes. With loss_good 0 and loss_bad 1, a packet is lost
// exactly when the state before it was bad.
func TestGilbertElliottOrder(t *testing.T) {
	ge := &scenario.GilbertElliott{PGoodBad: 0.2, PBadGood: 0.4, LossGood: 0, LossBad: 1}
	l := New(Params{GE: ge}, rand.New(rand.NewPCG(5, 6)), 0)
	const n = 200_000
	lost, bursts, prev := 0, 0, false
	for i := range n {
		bad := l.geBad
		v, _, _ := l.Admit(time.Duration(i), 100, true)
		if (v == DropLoss) != bad {
			t.Fatalf("packet %d: lost %v in state bad=%v", i, v == DropLoss, bad)
		}
		if v == DropLoss {
			lost++
			if !prev {
				bursts++
			}
		}
		prev = v == DropLoss
	}
	if got, want := float64(lost)/n, ge.MeanLoss(); math.Abs(got-want)/want > 0.05 {
		t.Errorf("mean loss %.4f, want %.4f", got, want)
	}
	if burst := float64(lost) / float64(bursts); math.Abs(burst-1/ge.PBadGood) > 0.1 {
		t.Errorf("mean burst %.2f, want %.2f", burst, 1/ge.PBadGood)
	}
}

func TestOutage(t *testing.T) {
	l := New(Params{Delay: 100 * ms}, nil, 0)
	l.Admit(0, 10, true) // released at 100 ms
	l.Outage(50*ms, 100*ms)
	l.Outage(60*ms, 20*ms) // inside: does not shorten it
	if v, _, _ := l.Admit(60*ms, 10, true); v != DropOutage {
		t.Errorf("offered during the outage: %d", v)
	}
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{49 * ms, false}, {50 * ms, true}, {100 * ms, true}, {149 * ms, true}, {150 * ms, false}} {
		if l.InOutage(c.at) != c.want {
			t.Errorf("InOutage(%v) = %v", c.at, !c.want)
		}
	}
	l.SetDown(200*ms, true)
	if !l.InOutage(time.Hour) {
		t.Error("SetDown(true) is not open-ended")
	}
	l.SetDown(300*ms, false)
	if l.InOutage(300*ms) || !l.InOutage(299*ms) {
		t.Error("SetDown(false) does not end the outage at now")
	}
}

// TestConfigure: new parameters apply to packets offered after the change;
// a trace keeps its position when it is unchanged and restarts when it
// changes.
func TestConfigure(t *testing.T) {
	l := New(Params{RateBps: 8e6}, nil, 0)
	l.Admit(0, 1000, true) // leaves at 1 ms
	l.Configure(Params{RateBps: 4e6}, 0)
	if _, dep, _ := l.Admit(0, 1000, true); dep != 3*ms {
		t.Errorf("after a rate change: departs %v, want 3ms", dep)
	}
	lt := []bool{false, true, false}
	l.Configure(Params{LossTrace: lt}, 0)
	l.Admit(0, 10, true)
	l.Configure(Params{LossTrace: lt, Delay: ms}, 0) // same trace: position kept
	if v, _, _ := l.Admit(0, 10, true); v != DropLoss {
		t.Error("an unchanged loss trace restarted")
	}
	l.Configure(Params{LossTrace: []bool{true}}, 0)
	if v, _, _ := l.Admit(0, 10, true); v != DropLoss {
		t.Error("a new loss trace did not apply")
	}
	tr := &scenario.RateTrace{Ms: []uint64{2, 4}}
	l.Configure(Params{Trace: tr}, 10*ms) // starts at 10 ms
	if _, dep, _ := l.Admit(10*ms, 1500, true); dep != 12*ms {
		t.Errorf("trace from 10 ms: departs %v, want 12ms", dep)
	}
	l.Configure(Params{Trace: tr, Delay: ms}, 13*ms) // same trace: phase kept
	if _, dep, _ := l.Admit(13*ms, 1500, true); dep != 14*ms {
		t.Errorf("same trace after a change: departs %v, want 14ms", dep)
	}
}

func TestFromScenario(t *testing.T) {
	if _, err := FromScenario(scenario.Link{JitterDist: "cauchy"}, nil); err == nil {
		t.Error("unknown jitter distribution accepted")
	}
	p, err := FromScenario(scenario.Link{DelayMs: 1.5, JitterMs: 0.25, RateMbps: 8, QueuePackets: 7, Loss: 0.1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Params{Delay: 1500 * time.Microsecond, Jitter: 250 * time.Microsecond, RateBps: 8e6, QueuePkts: 7, Loss: 0.1}
	if p.Delay != want.Delay || p.Jitter != want.Jitter || p.RateBps != want.RateBps || p.QueuePkts != want.QueuePkts || p.Loss != want.Loss {
		t.Errorf("got %+v, want %+v", p, want)
	}
	if got := (Params{Trace: &scenario.RateTrace{Ms: []uint64{1, 1, 5, 10}}}).MeanRateBps(); got != 4*1500*8/0.010 {
		t.Errorf("trace mean rate %v", got)
	}
}

// TestRandStreams: a path direction's stream depends on the seed, the path
// and the direction only.
func TestRandStreams(t *testing.T) {
	a, b := Rand(1, "p", true).Uint64(), Rand(1, "p", true).Uint64()
	if a != b {
		t.Error("one seed, path and direction gave two streams")
	}
	for _, o := range []uint64{Rand(2, "p", true).Uint64(), Rand(1, "q", true).Uint64(), Rand(1, "p", false).Uint64()} {
		if o == a {
			t.Error("different seed, path or direction gave the same stream")
		}
	}
}
