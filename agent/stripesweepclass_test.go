//go:build stripesweep

package agent

import (
	"flag"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

var (
	stripeClass     = flag.Int("stripe.class", 0, "TestStripeSweepLossyFar: how many mixes of the class to draw")
	stripeClassRuns = flag.Int("stripe.classruns", 5, "TestStripeSweepLossyFar: striped runs per mix")
	stripeClassSeed = flag.Uint64("stripe.classseed", 1, "TestStripeSweepLossyFar: the generator's seed")
	stripeClassMix  = flag.String("stripe.classmix", "", "TestStripeSweepLossyFar: run this mix only, fast Mbit/s,ms,slow Mbit/s,ms,loss %,MB (e.g. 120,200,10,50,1,20)")
)

// genLossyFarMix draws a mix of issue 30's last failing class: a far
// fast path (100–160 Mbit/s, 150–300 ms) beside a near slow one
// (5–15 Mbit/s, 20–60 ms) that loses 0.5–2 % of its packets, 8–32 MB.
func genLossyFarMix(r *rand.Rand) sweepMix {
	ms := func(lo, hi float64) time.Duration {
		return time.Duration((lo+r.Float64()*(hi-lo))*float64(time.Millisecond)) - mixServerDelay
	}
	fast := mixPath{rate: (100 + r.Float64()*60) * 1e6 / 8, delay: ms(150, 300)}
	slow := mixPath{rate: (5 + r.Float64()*10) * 1e6 / 8, delay: ms(20, 60), loss: 0.005 + r.Float64()*0.015}
	return sweepMix{class: "lossy-far", mix: []mixPath{fast, slow}, size: int64(8+r.IntN(25)) << 20}
}

// TestStripeSweepLossyFar draws -stripe.class mixes of genLossyFarMix's
// class and runs each on its fast path alone once and striped
// -stripe.classruns times (the runs differ by the order in which
// goroutines run, not by the loss's draws), logging striped / alone per
// run: the class's spread, which the sweep's one run per mix does not
// show; with -stripe.sweeptrace it traces each mix once, alone and
// striped, instead. It asserts nothing (the build tag keeps it out of CI).
func TestStripeSweepLossyFar(t *testing.T) {
	r := rand.New(rand.NewPCG(*stripeClassSeed, 0))
	n, pick := *stripeClass, genLossyFarMix
	if *stripeClassMix != "" {
		var f [6]float64
		if _, err := fmt.Sscanf(*stripeClassMix, "%g,%g,%g,%g,%g,%g", &f[0], &f[1], &f[2], &f[3], &f[4], &f[5]); err != nil {
			t.Fatalf("-stripe.classmix: %v", err)
		}
		ms := func(x float64) time.Duration { return time.Duration(x*float64(time.Millisecond)) - mixServerDelay }
		n, pick = 1, func(*rand.Rand) sweepMix {
			return sweepMix{class: "given", size: int64(f[5]) << 20, mix: []mixPath{
				{rate: f[0] * 1e6 / 8, delay: ms(f[1])}, {rate: f[2] * 1e6 / 8, delay: ms(f[3]), loss: f[4] / 100}}}
		}
	}
	for i := range n {
		s := pick(r)
		if *stripeSweepOnly >= 0 && i != *stripeSweepOnly {
			continue
		}
		if *stripeSweepTrace > 0 {
			sweepTimes(t, s, 0)
			continue
		}
		alone := stripeMixTime(t, s.mix[:1], s.size, false, 0)
		low, worst := 0, 10.0
		var ratios []string
		for range *stripeClassRuns {
			striped := stripeMixTime(t, s.mix, s.size, true, 0)
			x := alone.Seconds() / striped.Seconds()
			worst = min(worst, x)
			if x < 1 {
				low++
			}
			ratios = append(ratios, fmt.Sprintf("%.3f", x))
		}
		fmt.Printf("CLASS %3d %-40s %3d MB alone %6.2fs  low %d/%d min %.3f  %v\n",
			i, s.describe(), s.size>>20, alone.Seconds(), low, *stripeClassRuns, worst, ratios)
	}
}
