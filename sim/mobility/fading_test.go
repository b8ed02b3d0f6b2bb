package mobility

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// draws is how many gains the distribution tests draw: the sampled mean's
// standard error is then at most 1/√(0.5·draws) ≈ 0.0045 (m = 0.5) and an
// outage rate's at most 0.5/√draws ≈ 0.0016.
const draws = 100_000

// TestNakagamiGain: the power gain has mean 1 and variance 1/m, for a
// fixed seed within 5 standard errors of each.
func TestNakagamiGain(t *testing.T) {
	for _, m := range []float64{0.5, 1, 2, 4, 20} {
		rng := rand.New(rand.NewPCG(1, 2))
		sum, sq := 0.0, 0.0
		for i := 0; i < draws; i++ {
			g := NakagamiGain(rng, m)
			if !(g >= 0) {
				t.Fatalf("m %v: gain %v", m, g)
			}
			sum += g
			sq += g * g
		}
		mean := sum / draws
		variance := sq/draws - mean*mean
		if se := math.Sqrt(1 / m / draws); math.Abs(mean-1) > 5*se {
			t.Errorf("m %v: mean gain %v, want 1 ± %v", m, mean, 5*se)
		}
		if math.Abs(variance*m-1) > 0.05 {
			t.Errorf("m %v: variance %v, want 1/m = %v within 5 %%", m, variance, 1/m)
		}
	}
}

// TestOutage: the sampled outage rate of NakagamiGain, P(γ̄·g < γ_th),
// against the closed forms for m = 1 (Rayleigh: 1 − exp(−γ_th/γ̄)) and
// m = 2 (1 − e^−x (1 + x), x = 2γ_th/γ̄), within 0.01 (over 6 standard
// errors) for a fixed seed.
func TestOutage(t *testing.T) {
	closed := map[float64]func(r float64) float64{
		1: func(r float64) float64 { return 1 - math.Exp(-r) },
		2: func(r float64) float64 { x := 2 * r; return 1 - math.Exp(-x)*(1+x) },
	}
	for _, tc := range []struct{ m, meanDB float64 }{{1, 0}, {1, 3}, {1, 10}, {1, 20}, {2, 3}, {2, 10}} {
		const threshold = 1.0 // 0 dB: the ratio γ_th/γ̄ is what matters
		mean := dBToLin(tc.meanDB)
		want := closed[tc.m](threshold / mean)
		rng := rand.New(rand.NewPCG(7, 8))
		out := 0
		for i := 0; i < draws; i++ {
			if mean*NakagamiGain(rng, tc.m) < threshold {
				out++
			}
		}
		if got := float64(out) / draws; math.Abs(got-want) > 0.01 {
			t.Errorf("m %v, γ̄ %v dB: sampled outage %v, closed form %v", tc.m, tc.meanDB, got, want)
		}
	}
}

// TestDecodingThreshold: Eq. 2.8 loses half the packets there, and the
// threshold rises with the modulation and falls with FEC.
func TestDecodingThreshold(t *testing.T) {
	th := DecodingThreshold(4, 8)
	if got := PacketLoss(BER(th, 4), packetBits, 8); math.Abs(got-0.5) > 1e-6 {
		t.Errorf("Eq. 2.8 at the threshold: %v, want 0.5", got)
	}
	if DecodingThreshold(16, 8) <= th || DecodingThreshold(4, 100) >= th {
		t.Error("threshold does not follow qam and fec_bits")
	}
}

func fadingHighway(m float64) *Drive {
	h := testHighway()
	h.Networks[0].Fading = &Fading{Model: "nakagami", M: m}
	return h
}

// TestFadingTrace: the same drive and run give the same trace, other runs
// other fades; without fading the gain is 1; with it, steps below the
// decoding threshold lose every packet, steps above lose Eq. 2.8's share,
// the handovers stay where the mean RSS puts them, and the loss over the
// drive rises.
func TestFadingTrace(t *testing.T) {
	plain, err := testHighway().Trace()
	if err != nil {
		t.Fatal(err)
	}
	a, err := fadingHighway(1).Trace()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := fadingHighway(1).Trace()
	c, _ := fadingHighway(1).ForRun(2).Trace()
	th := DecodingThreshold(4, 8)
	differ, outages := false, 0
	lossPlain, lossFaded := 0.0, 0.0
	for i, s := range a[0] {
		if s != b[0][i] {
			t.Fatal("same drive, different fades")
		}
		differ = differ || s.Gain != c[0][i].Gain
		if p := plain[0][i]; p.Gain != 1 || p.Outage || s.HandoverStartsNow != p.HandoverStartsNow {
			t.Fatalf("step %d: plain %+v, faded %+v", i, p, s)
		}
		if lin := dBToLin(s.SINRdB); s.Outage != (lin < th) || (s.Outage && s.Loss != 1) {
			t.Fatalf("step %d: %+v, threshold %v", i, s, th)
		}
		if s.Outage {
			outages++
		}
		lossPlain += plain[0][i].Loss
		lossFaded += s.Loss
	}
	if !differ || outages == 0 || lossFaded <= lossPlain {
		t.Errorf("runs differ %v, %d outages, loss %v faded vs %v plain", differ, outages, lossFaded, lossPlain)
	}
	sc, err := fadingHighway(1).Scenario("hw")
	if err != nil {
		t.Fatal(err)
	}
	hos := 0
	for _, e := range sc.Events {
		if e.OutageS > 0 {
			hos++
		}
	}
	if got := hos; got != 1 {
		t.Errorf("%d handover outages in the faded scenario, want 1", got)
	}
}

// TestBadFading: each bad field gets one error naming it.
func TestBadFading(t *testing.T) {
	hi, lo := 61.0, -21.0
	for _, tc := range []struct {
		f    Fading
		want string
	}{
		{Fading{Model: "rician", M: 1}, "networks[0].fading.model: unknown fading"},
		{Fading{Model: "nakagami", M: 0.3}, "networks[0].fading.m: 0.3 is outside"},
		{Fading{Model: "nakagami", M: math.NaN()}, "networks[0].fading.m: NaN"},
		{Fading{Model: "nakagami", M: 101}, "networks[0].fading.m: 101"},
		{Fading{Model: "nakagami", M: 1, ThresholdDB: &hi}, "networks[0].fading.threshold_db: 61"},
		{Fading{Model: "nakagami", M: 1, ThresholdDB: &lo}, "networks[0].fading.threshold_db: -21"},
	} {
		h := testHighway()
		h.Networks[0].Fading = &tc.f
		err := h.Validate()
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%+v: %v, want %q…", tc.f, err, tc.want)
		}
	}
}
