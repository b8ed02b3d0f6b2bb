//go:build stripesweep

package agent

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// stripeSweep is the number of generated mixes TestStripeSweep runs.
var (
	stripeSweep      = flag.Int("stripe.sweep", 40, "TestStripeSweep: how many generated mixes to run")
	stripeSweepSeed  = flag.Uint64("stripe.sweepseed", 1, "TestStripeSweep: the generator's seed")
	stripeSweepOnly  = flag.Int("stripe.sweeponly", -1, "TestStripeSweep: run only the mix of this index (-1: all)")
	stripeSweepWarm  = flag.Bool("stripe.sweepwarm", false, "TestStripeSweep: time each download after a warm-up on the same agent (warmStripeTime), not cold")
	stripeSweepSize  = flag.Int("stripe.sweepsize", 0, "TestStripeSweep: download this many MiB on every mix in place of the drawn 4–64 (0: drawn); the draws stay the same")
	stripeSweepBound = flag.Bool("stripe.sweepbound", false, "TestStripeSweep: also download on each path alone and print the time a scheduler that wastes nothing would take (sweepBound)")
	stripeSweepTrace = flag.Duration("stripe.sweeptrace", 0, "TestStripeSweep: print each path's bytes received per this interval of fake time, cold only, alone and striped (0: none)")
)

// genSweepMix draws a mix: 2–4 paths, the best 8–160 Mbit/s and each
// other 1/20 … 1 of it, round trips 10–300 ms (memnet delays what a
// node sends: a path's round trip is its delay plus mixServerDelay), in a third of the mixes the fastest path the
// farthest (satellite-like), in a quarter one slower path 0.5–2 % lossy,
// 4–64 MB.
func genSweepMix(r *rand.Rand) sweepMix {
	n := 2 + r.IntN(3)
	best := (8 + r.Float64()*152) * 1e6 / 8
	rtt := func() float64 { return 10 * math.Pow(30, r.Float64()) } // 10–300 ms, log-uniform
	var s sweepMix
	s.mix = append(s.mix, mixPath{rate: best})
	rtts := []float64{rtt()}
	for range n - 1 {
		s.mix = append(s.mix, mixPath{rate: best / math.Pow(20, r.Float64())})
		rtts = append(rtts, rtt())
	}
	var tags []string
	if r.IntN(3) == 0 { // the fast path the far one
		slices.Sort(rtts)
		slices.Reverse(rtts)
		tags = append(tags, "fast-far")
	}
	for i := range s.mix {
		s.mix[i].delay = time.Duration(rtts[i]*float64(time.Millisecond)) - mixServerDelay
	}
	if r.IntN(4) == 0 {
		s.mix[1+r.IntN(n-1)].loss = 0.005 + r.Float64()*0.015
		tags = append(tags, "lossy")
	}
	s.size = int64(4+r.IntN(61)) << 20
	s.class = fmt.Sprintf("%dp %s", n, strings.Join(tags, ","))
	return s
}

// describe is the mix as "Mbit/s / ms RTT [loss]" per path.
func (s sweepMix) describe() string {
	var parts []string
	for _, p := range s.mix {
		d := fmt.Sprintf("%.0f/%.0f", p.rate*8/1e6, (p.delay+mixServerDelay).Seconds()*1e3)
		if p.loss > 0 {
			d += fmt.Sprintf(" %.1f%%", 100*p.loss)
		}
		parts = append(parts, d)
	}
	return strings.Join(parts, " + ")
}

// sweepTimes is mix s's download time on its best path alone and
// striped: cold, or after a warm-up with -stripe.sweepwarm.
func sweepTimes(t *testing.T, s sweepMix, best int) (alone, striped time.Duration) {
	if *stripeSweepWarm {
		return warmStripeTime(t, s.mix[best:best+1], s.size), warmStripeTime(t, s.mix, s.size)
	}
	if *stripeSweepTrace <= 0 {
		return stripeMixTime(t, s.mix[best:best+1], s.size, false, 0), stripeMixTime(t, s.mix, s.size, true, 0)
	}
	alone, _ = stripeMixRun(t, s.mix[best:best+1], s.size, false, func(m *memAgent) { tracePathBytes(m, "alone", s.size, *stripeSweepTrace) })
	striped, _ = stripeMixRun(t, s.mix, s.size, true, func(m *memAgent) { tracePathBytes(m, "striped", s.size, *stripeSweepTrace) })
	return alone, striped
}

// tracePathBytes prints, every step of a download's fake time, the kB
// each of m's paths received in that step and the MB all have received
// so far, tagged run, until that total reaches size: where a striped
// download loses time (a path idle, one that stalls the others) shows in
// which path's column falls. Lanes the client adds meanwhile get
// columns of their own, after the paths of the mix.
func tracePathBytes(m *memAgent, run string, size int64, step time.Duration) {
	var last []int64
	for at := step; ; at += step {
		time.Sleep(step)
		var total int64
		var cols []string
		paths := m.c.pathList()
		last = append(last, make([]int64, max(len(paths)-len(last), 0))...) // lanes join (path added)
		for i, p := range paths {
			b := p.bytes.Load()
			cols = append(cols, fmt.Sprintf("%6d", (b-last[i])>>10))
			last[i] = b
			total += b
		}
		fmt.Printf("TRACE %-7s %7.3fs kB/step %s  total %5.1f MB\n", run, at.Seconds(), strings.Join(cols, " "), float64(total)/(1<<20))
		if total >= size {
			return
		}
	}
}

// TestStripeSweep runs -stripe.sweep generated mixes (genSweepMix) on fake
// time, each on its best path alone and striped, and logs one line per
// mix (striped / best path alone, striped / the summed rate) and the
// worst: the tool that looks for failing classes beyond the matrix's
// rows. It asserts nothing, so it is no test: the build tag keeps it out
// of go test ./... and CI, and it is run by hand (go test -tags
// stripesweep -run TestStripeSweep -v ./agent/ -stripe.sweep 100 | grep
// SWEEP: the test binary's flags after the package; -stripe.sweepwarm
// times each download after a warm-up, as the experiment runner's; to
// look into one mix: -stripe.sweeponly with -stripe.sweepbound,
// -stripe.sweeptrace or -stripe.sweepsize).
func TestStripeSweep(t *testing.T) {
	r := rand.New(rand.NewPCG(*stripeSweepSeed, 0))
	for i := range *stripeSweep {
		s := genSweepMix(r)
		if *stripeSweepSize > 0 {
			s.size = int64(*stripeSweepSize) << 20
		}
		if *stripeSweepOnly >= 0 && i != *stripeSweepOnly {
			continue
		}
		best := 0
		for j, p := range s.mix {
			if p.rate > s.mix[best].rate {
				best = j
			}
		}
		alone, striped := sweepTimes(t, s, best)
		var sum float64
		for _, p := range s.mix {
			sum += p.rate
		}
		fmt.Printf("SWEEP %3d %-18s %-48s %3d MB  alone %6.2fs striped %6.2fs  ×best %.3f  ofsum %.3f\n",
			i, s.class, s.describe(), s.size>>20, alone.Seconds(), striped.Seconds(),
			alone.Seconds()/striped.Seconds(), float64(s.size)/sum/striped.Seconds())
		if *stripeSweepBound {
			b := sweepBound(t, s, striped)
			fmt.Printf("BOUND %3d bound %6.2fs striped %6.2fs  bound/striped %.3f  boundofsum %.3f\n",
				i, b.Seconds(), striped.Seconds(), b.Seconds()/striped.Seconds(), float64(s.size)/sum/b.Seconds())
		}
	}
}
