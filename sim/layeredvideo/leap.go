package layeredvideo

// LEAP — the Latency-controlled End-to-end Aggregation Protocol of
// F. Chiariotti, S. Kucera, A. Zanella, H. Claussen, "LEAP: A latency
// control protocol for multi-path data delivery with pre-defined QoS
// guarantees", IEEE INFOCOM Workshops 2018, pp. 166–171, and "Analysis and
// Design of a Latency Control Protocol for Multi-Path Data Delivery With
// Pre-Defined QoS Guarantees", IEEE/ACM Transactions on Networking 27(3),
// 2019. What the papers state, and what this file builds on it:
//
//  1. The sender splits a flow into subflows over parallel paths, and sets
//     each subflow's rate from a stochastic forecast of the path's
//     latency-constrained capacity — the data it can deliver within the
//     deadline (capEstimate, forecast).
//  2. Cross-path coding with adaptive redundancy makes the probability that
//     a block is delivered within the deadline at least the application's
//     reliability target, at the least throughput cost (allocate: the
//     fewest coded packets per path such that P(≥ K of them arrive in
//     time) ≥ Γ).
//
// The papers' exact forecaster and optimiser were not available to us (the
// abstracts and the thesis's summary were); what we chose where they leave
// it open is in qcmab/DESIGN.md ("LEAP") and in the constants below.

import (
	"cmp"
	"math"
	"slices"
)

// LEAP's settings.
const (
	// leapRateGain and leapVarGain are the capacity estimator's gains on
	// the mean and on the squared forecast error: RFC 6298's 1/8 and 1/4
	// (SRTT, RTTVAR), the usual fixed-gain (steady-state Kalman) tracker
	// of a noisy transport signal. A larger gain follows a walking host
	// faster and forgets its variance sooner.
	leapRateGain = 1.0 / 8
	leapVarGain  = 1.0 / 4
	// leapMinGain ends the redundancy search once one more packet on any
	// path raises the block's on-time probability by less than this: the
	// forecast says further packets would arrive late, so sending them only
	// loads the paths (the throughput cost LEAP minimises).
	leapMinGain = 1e-6
)

// capEstimate is LEAP's Gaussian model of one path's capacity in packets
// per second: a mean and the variance of its one-interval forecast error.
type capEstimate struct {
	mean, vari float64
	ok         bool
}

// observe adds one capacity sample (packets/s). The first sample sets the
// mean and a variance of (sample/2)², RFC 6298's first RTTVAR.
func (e *capEstimate) observe(sample float64) {
	if !e.ok {
		e.mean, e.vari, e.ok = sample, sample*sample/4, true
		return
	}
	err := sample - e.mean
	e.mean += leapRateGain * err
	e.vari = (1-leapVarGain)*e.vari + leapVarGain*err*err
}

// pathForecast is one path's forecast for the block being planned: the
// packets it can deliver before the deadline, C ~ N(Mean, SD²), and the
// per-packet erasure probability of the packets that do fit.
type pathForecast struct {
	Mean, SD, Loss float64
}

// forecast is LEAP's latency-constrained capacity of a path: the rate
// forecast times the time left until the deadline (window less the path's
// one-way propagation), less the packets already queued on it.
func forecast(e capEstimate, windowS, owdS, inflightPkts, loss float64) pathForecast {
	t := max(windowS-owdS, 0)
	return pathForecast{Mean: e.mean*t - inflightPkts, SD: math.Sqrt(e.vari) * t, Loss: min(max(loss, 0), 1)}
}

// fits is P(C ≥ j): the j-th packet on the path arrives before the deadline.
func (f pathForecast) fits(j int) float64 {
	if f.SD <= 0 {
		if f.Mean >= float64(j) {
			return 1
		}
		return 0
	}
	return 0.5 * math.Erfc((float64(j)-f.Mean)/(f.SD*math.Sqrt2))
}

// pathDist is the distribution of a path's on-time deliveries of one
// block given n packets on it after base earlier ones: D = Binomial(M, 1 −
// Loss) with M = min(n, max(0, ⌊C⌋ − base)) on-time slots.
type pathDist struct {
	f       pathForecast
	base, n int
	bin     []float64 // Binomial(n, 1 − Loss) pmf
	dist    []float64 // pmf of D over 0 … n
}

func newPathDist(f pathForecast, base int) pathDist {
	return pathDist{f: f, base: base, bin: []float64{1}, dist: []float64{1}}
}

// grown is d with one more packet: M grows only when the new slot fits,
// so dist(n+1) = dist(n) + P(C ≥ base+n+1)·(Bin(n+1) − Bin(n)).
func (d pathDist) grown() pathDist {
	q := 1 - d.f.Loss
	bin := make([]float64, d.n+2)
	for i, b := range d.bin {
		bin[i] += b * (1 - q)
		bin[i+1] += b * q
	}
	w := d.f.fits(d.base + d.n + 1)
	dist := append(slices.Clone(d.dist), 0)
	for i := range dist {
		old := 0.0
		if i < len(d.bin) {
			old = d.bin[i]
		}
		dist[i] += w * (bin[i] - old)
	}
	return pathDist{f: d.f, base: d.base, n: d.n + 1, bin: bin, dist: dist}
}

// convolve is the pmf of the sum of every path's deliveries but path skip's
// (−1: none skipped); paths are independent.
func convolve(ds []pathDist, skip int) []float64 {
	sum := []float64{1}
	for i, d := range ds {
		if i == skip {
			continue
		}
		next := make([]float64, len(sum)+len(d.dist)-1)
		for a, pa := range sum {
			for b, pb := range d.dist {
				next[a+b] += pa * pb
			}
		}
		sum = next
	}
	return sum
}

// withOthers is P(D + O ≥ k) for a path's pmf d and the others' sum pmf o.
func withOthers(d, o []float64, k int) float64 {
	tail := make([]float64, len(o)+1) // tail[j] = P(O ≥ j)
	for j := len(o) - 1; j >= 0; j-- {
		tail[j] = tail[j+1] + o[j]
	}
	p := 0.0
	for a, pa := range d {
		need := k - a
		if need <= 0 {
			p += pa
		} else if need < len(tail) {
			p += pa * tail[need]
		}
	}
	return min(p, 1)
}

// onTime is P(Σ D ≥ k) over independent paths.
func onTime(ds []pathDist, k int) float64 { return withOthers([]float64{1}, convolve(ds, -1), k) }

// allocate is LEAP's per-block decision: how many coded packets of a block
// of k source packets each path carries, given its forecast and the
// packets base[p] already planned on it before this block, at most
// limit[p] more (the subflow's rate: sending past it only queues), so that the
// block arrives decodable (k of n) before the deadline with probability ≥
// target, with as few packets as a greedy search finds (one packet at a
// time, on the path that raises that probability most; while no split can
// decode yet, on the path whose next packet most likely fits). It stops at
// the target, at maxN packets, when every path is at its limit, or when no
// packet adds leapMinGain; it returns the allocation and the probability
// it reaches. At least k packets go out: the source is sent even when the
// target is out of reach, over the limits if it must.
func allocate(k int, paths []pathForecast, base, limit []int, target float64, maxN int) ([]int, float64) {
	ds := make([]pathDist, len(paths))
	for i, f := range paths {
		ds[i] = newPathDist(f, base[i])
	}
	p, total := onTime(ds, k), 0
	for p < target && total < maxN {
		best, bestP, bestFit := -1, -1.0, -1.0
		var bestD pathDist
		for i := range ds {
			if ds[i].n >= limit[i] && total >= k-sumGap(ds, limit) {
				continue // at its rate; only the source may still exceed it
			}
			g := ds[i].grown()
			tp := withOthers(g.dist, convolve(ds, i), k)
			fit := ds[i].f.fits(ds[i].base+ds[i].n+1) * (1 - ds[i].f.Loss)
			if tp > bestP || (tp == bestP && fit > bestFit) {
				best, bestP, bestFit, bestD = i, tp, fit, g
			}
		}
		if best < 0 || (total >= k && bestP-p < leapMinGain) {
			break
		}
		ds[best], p = bestD, bestP
		total++
	}
	alloc := make([]int, len(ds))
	for i, d := range ds {
		alloc[i] = d.n
	}
	return alloc, p
}

// sumGap is the packets the paths can still take below their limits.
func sumGap(ds []pathDist, limit []int) int {
	gap := 0
	for i, d := range ds {
		gap += max(limit[i]-d.n, 0)
	}
	return gap
}

// assignOffsets maps a block's coded packets (stream offsets 0 … N−1;
// the first k are the systematic source) to paths: the slots most likely
// to arrive in time carry the lowest offsets, so that the source packets
// ride the safest slots and a block that cannot be decoded still delivers
// as much source as it can.
func assignOffsets(alloc []int, paths []pathForecast, base []int) []int {
	type slot struct {
		path int
		fit  float64
	}
	var slots []slot
	for p, n := range alloc {
		for j := 1; j <= n; j++ {
			slots = append(slots, slot{p, paths[p].fits(base[p]+j) * (1 - paths[p].Loss)})
		}
	}
	slices.SortStableFunc(slots, func(a, b slot) int { return cmp.Compare(b.fit, a.fit) })
	out := make([]int, len(slots))
	for i, s := range slots {
		out[i] = s.path
	}
	return out
}
