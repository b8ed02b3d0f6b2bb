package leo

import (
	"math"
	"testing"
	"time"

	"github.com/hetquic/hetquic/sim"
)

func thesis() *Constellation {
	c := &Constellation{}
	c.Defaults()
	return c
}

func TestCapacityTable32(t *testing.T) {
	c := thesis()
	// §3.6.2: P_t = 35.12 dBm makes Eq. 3.3 give 200 Mbit/s at 550 km.
	if got := c.CapacityBps(550e3) / 1e6; math.Abs(got-200) > 2 {
		t.Fatalf("C^A(550 km) = %.2f Mbit/s, want ≈ 200", got)
	}
	// Hand-computed SNR at 550 km: P_t g1 g2 / ((4πd/λ)² N W)
	// = 3.251 W · 5.888e3 · 5.129e3 / (6.459e15 · 2e-13) ≈ 7.6e4.
	if got := c.SNR(550e3); math.Abs(got-7.6e4)/7.6e4 > 0.02 {
		t.Errorf("SNR(550 km) = %.4g, want ≈ 7.6e4", got)
	}
	// Farther is slower (free-space loss): at the footprint edge (230 km
	// along-track, d ≈ 596 km) a little below.
	edge := c.CapacityBps(math.Hypot(550, 230) * 1e3)
	if !(edge < c.CapacityBps(550e3) && edge > 190e6) {
		t.Errorf("C^A at the edge = %.1f Mbit/s, want in (190, 200)", edge/1e6)
	}
	// Eq. 3.3 is linear in W at fixed SNR·W: 25 MHz more than 12.5 MHz.
	w := *c
	w.BandwidthMHz = 25
	if w.CapacityBps(550e3) <= c.CapacityBps(550e3) {
		t.Error("doubling W did not raise the capacity")
	}
}

func TestHandoverTiming(t *testing.T) {
	for _, r1 := range []float64{80, 100, 120, 150} {
		c := &Constellation{SpacingKm: r1}
		c.Defaults()
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		period := time.Duration(r1 / 7 * float64(time.Second))
		for i := range 2 {
			h := c.Handovers(i, 120*time.Second)
			for j := 1; j < len(h); j++ {
				if d := h[j] - h[j-1]; d < period-time.Millisecond || d > period+time.Millisecond {
					t.Fatalf("R1 %v iface %d: handover gap %v, want R1/v = %v", r1, i, d, period)
				}
			}
			// The serving satellite changes exactly at the handovers and
			// always stays inside the footprint.
			for ms := 0; ms < 120000; ms += 10 {
				now := time.Duration(ms) * time.Millisecond
				k := c.Satellite(i, now)
				if x := math.Abs(c.AlongKm(k, now)); x > c.FootprintKm/2 {
					t.Fatalf("R1 %v iface %d at %v: satellite %d is %.0f km off, outside the footprint", r1, i, now, k, x)
				}
			}
		}
		// Interface 1 hands over half a period after interface 0 (m = R1).
		h0, h1 := c.Handovers(0, time.Minute), c.Handovers(1, time.Minute)
		if d := h1[0] - h0[0]; d < period/2-time.Millisecond || d > period/2+time.Millisecond {
			t.Errorf("R1 %v: interface offset %v, want %v", r1, d, period/2)
		}
		// Shared (s3) half the time, disjoint (s2) the other half.
		shared := 0
		const n = 100000
		for j := 0; j < n; j++ {
			if c.Shared(time.Duration(j) * 10 * time.Millisecond) {
				shared++
			}
		}
		if f := float64(shared) / n; math.Abs(f-0.5) > 0.01 {
			t.Errorf("R1 %v: shared %.3f of the time, want 0.5", r1, f)
		}
	}
	// The thesis's spacing (150 km): one handover every 150/7/2 ≈ 10.7 s
	// on one interface or the other.
	c := thesis()
	all := append(c.Handovers(0, time.Minute), c.Handovers(1, time.Minute)...)
	if len(all) != 5 {
		t.Errorf("handovers in the first minute at R1 150: %d (%v), want 5", len(all), all)
	}
}

func TestPropRTT(t *testing.T) {
	c := thesis()
	// Eq. 3.11 overhead: 2·(2·550 km/c + 45 ms) = 97.34 ms.
	want := 2 * (2*550e3/SpeedOfLight + 0.045)
	if got := c.PropRTT(0, 0).Seconds(); math.Abs(got-want) > 1e-6 {
		t.Fatalf("D = %.5f s, want %.5f", got, want)
	}
}

func TestValidate(t *testing.T) {
	c := &Constellation{SpacingKm: 300}
	c.Defaults()
	if err := c.Validate(); err == nil {
		t.Error("spacing 300 km with a 460 km footprint and m = R1 should not validate")
	}
	c = &Constellation{Eta: 2}
	c.Defaults()
	if err := c.Validate(); err == nil {
		t.Error("η = 2 validated")
	}
}

// TestNetworkShares: a handover moves the route; in state s3 both paths
// share one satellite link.
func TestNetworkShares(t *testing.T) {
	s := sim.New(1)
	c := thesis()
	n := Build(s, c, time.Minute)
	ps := n.Paths()
	s.Run(time.Second, 0, nil)
	if !c.Shared(time.Second) || ps[0].Fwd[1] != ps[1].Fwd[1] {
		t.Fatalf("at 1 s: shared %v, links %v / %v", c.Shared(time.Second), ps[0].Fwd[1], ps[1].Fwd[1])
	}
	h := c.Handovers(0, time.Minute)[0] // interface 0 moves: disjoint
	at := h + time.Millisecond
	s.Run(at, 0, nil)
	if c.Shared(at) || ps[0].Fwd[1] == ps[1].Fwd[1] {
		t.Fatalf("after interface 0's handover at %v: still shared", h)
	}
	if !n.Iface[0].Down.Down() {
		t.Fatal("no outage during the handover")
	}
	if capBps, _ := ps[0].Access(at); capBps != 0 {
		t.Fatalf("Access during the outage: %v, want 0", capBps)
	}
	s.Run(h+100*time.Millisecond, 0, nil)
	if n.Iface[0].Down.Down() {
		t.Fatal("outage longer than handover_ms")
	}
	if r := n.Sat[0].Down.Params().RateBps; r < 190e6 || r > 201e6 {
		t.Fatalf("satellite link rate %.1f Mbit/s", r/1e6)
	}
	// AccessBDP: at 1 s both interfaces on satellite 0 (C·D ≈ 200 Mbit/s ·
	// 97.4 ms ≈ 2.4 MB, the same slot); after the handover, other slots.
	b0, s0 := n.AccessBDP(0, time.Second)
	b1, s1 := n.AccessBDP(1, time.Second)
	k := c.Satellite(0, time.Second)
	want := c.CapacityBps(c.DistanceM(k, time.Second)) / 8 * c.PropRTT(k, time.Second).Seconds()
	if s0 != s1 || b0 != b1 || math.Abs(b0-want) > 1 || b0 < 2.3e6 || b0 > 2.5e6 {
		t.Fatalf("AccessBDP at 1 s: %.0f B slot %d, %.0f B slot %d; want %.0f B on one slot", b0, s0, b1, s1, want)
	}
	if _, s0 := n.AccessBDP(0, at); s0 == s1 {
		t.Fatalf("AccessBDP after the handover: interface 0 still on slot %d", s0)
	}
}
