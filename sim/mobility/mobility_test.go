package mobility

import (
	"math"
	"testing"
)

func TestBERAndLoss(t *testing.T) {
	// QPSK (M = 4): Eq. 2.6 reduces to Q(√SNR).
	for _, snr := range []float64{1, 4, 10} {
		if got, want := BER(snr, 4), q(math.Sqrt(snr)); math.Abs(got-want) > 1e-12 {
			t.Errorf("BER(%v, 4) = %v, want Q(√SNR) = %v", snr, got, want)
		}
	}
	if got := PacketLoss(1e-5, 12000, 0); math.Abs(got-(1-math.Pow(1-1e-5, 12000))) > 1e-9 {
		t.Errorf("Eq. 2.8 without FEC: %v", got)
	}
	if PacketLoss(1e-4, 12000, 4) >= PacketLoss(1e-4, 12000, 0) {
		t.Error("FEC bits do not lower the loss")
	}
	if got := (Radio{Eta: 0.5, BandwidthMHz: 10, MaxRateMbps: 1000}).Capacity(3); got != 10 {
		t.Errorf("Eq. 2.15: %v, want 0.5·10·log2(4) = 10", got)
	}
}

func testHighway() *Drive {
	wifi := Radio{Name: "wifi", SpacingM: 4000, OffsetM: 0, TxPowerDBm: 30, PathLossExp: 3.5, NoiseDBm: -94,
		BandwidthMHz: 5, Eta: 0.5, MaxRateMbps: 10, QAM: 4, FECBits: 8, HandoverDBm: -80, HysteresisDB: 3, HandoverMs: 500, DelayMs: 75}
	return &Drive{SpeedKmh: 108, StartM: 1000, DurationS: 60, Networks: []Radio{wifi}}
}

func TestHighwayTrace(t *testing.T) {
	h := testHighway()
	tr, err := h.Trace()
	if err != nil {
		t.Fatal(err)
	}
	s := tr[0]
	// 30 m/s from 1 km for 60 s: past the cell edge at 2 km, handing over once.
	hos := 0
	minRate, maxLoss := math.Inf(1), 0.0
	for _, x := range s {
		if x.HandoverStartsNow {
			hos++
		}
		minRate, maxLoss = math.Min(minRate, x.RateMbps), math.Max(maxLoss, x.Loss)
	}
	if hos != 1 || s[len(s)-1].Station != 1 {
		t.Errorf("%d handovers, ending at station %d; want 1 and station 1", hos, s[len(s)-1].Station)
	}
	if s[0].RateMbps != 10 || s[0].Loss > 1e-6 {
		t.Errorf("near the AP: %+v, want full rate and no loss", s[0])
	}
	if maxLoss < 0.01 || minRate > 8 {
		t.Errorf("at the cell edge: min rate %v, max loss %v; want a visible dip", minRate, maxLoss)
	}
	sc, err := h.Scenario("hw")
	if err != nil {
		t.Fatal(err)
	}
	if len(sc.Events) < 3 {
		t.Errorf("%d events", len(sc.Events))
	}
}

func TestBadHighway(t *testing.T) {
	h := testHighway()
	h.Networks[0].QAM = 8
	if err := h.Validate(); err == nil {
		t.Error("qam 8 accepted")
	}
	h = testHighway()
	h.Networks[0].SpacingM = 0
	if err := h.Validate(); err == nil {
		t.Error("spacing 0 accepted")
	}
}

// TestPerNetworkSpeed: a network with speed 0 keeps its state while the
// host drives.
func TestPerNetworkSpeed(t *testing.T) {
	h := testHighway()
	zero := 0.0
	h.Networks[0].SpeedKmh = &zero
	tr, err := h.Trace()
	if err != nil {
		t.Fatal(err)
	}
	first, last := tr[0][0], tr[0][len(tr[0])-1]
	if first.RSSdBm != last.RSSdBm || first.PosM != last.PosM {
		t.Fatalf("static network changed: %+v → %+v", first, last)
	}
}

// TestUrban: the seeded grid walk is reproducible, turns, and hands over
// between hexagonal cells.
func TestUrban(t *testing.T) {
	wifi := Radio{Name: "wifi", Layout: "hex", SpacingM: 200, TxPowerDBm: 15, PathLossExp: 4, NoiseDBm: -94,
		InterferenceDBm: -80, BandwidthMHz: 40, Eta: 0.5, MaxRateMbps: 200, HandoverDBm: -65, HysteresisDB: 3, HandoverMs: 300}
	mk := func(seed uint64) *Drive {
		return &Drive{Kind: "urban", SpeedKmh: 40, BlockM: 100, Seed: seed, DurationS: 120, Networks: []Radio{wifi}}
	}
	a, err := mk(1).Trace()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := mk(1).Trace()
	c, _ := mk(2).Trace()
	turned, hos, differ := false, 0, false
	for i, s := range a[0] {
		if s != b[0][i] {
			t.Fatal("same seed, different walk")
		}
		if s.PosYM != 0 {
			turned = true
		}
		if s.HandoverStartsNow {
			hos++
		}
		if s.PosM != c[0][i].PosM || s.PosYM != c[0][i].PosYM {
			differ = true
		}
	}
	if !turned || hos == 0 || !differ {
		t.Fatalf("turned %v, %d handovers, seeds differ %v", turned, hos, differ)
	}
	// Nearest station on the lattice is the true nearest.
	for _, p := range []point{{0, 0}, {150, 90}, {-333, 271}, {1000, -1000}} {
		st := wifi.nearest(p)
		for j := -20; j <= 20; j++ {
			for i := -20; i <= 20; i++ {
				if wifi.dist(p, station{i, j}) < wifi.dist(p, st)-1e-9 {
					t.Fatalf("nearest(%v) = %v, but %v is closer", p, st, station{i, j})
				}
			}
		}
	}
}
