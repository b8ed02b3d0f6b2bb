// Package fec is frame-level forward error correction with systematic
// Reed–Solomon semantics, as thesis chapter 4 uses it (§4.3.3, §4.5.1):
// each layer of a frame is a block of k source packets protected by
// n − k repair packets; any k of the n recover the block. The simulator
// uses the "k of n" model (Block, Delivered); the tests hold it against a
// real Reed–Solomon coder (github.com/klauspost/reedsolomon, a test
// dependency: the simulator moves no payload bytes), which agrees on every
// loss pattern.
//
// Pure: no I/O, no clock.
package fec

import (
	"fmt"
	"math"
)

// Redundancy is the thesis's per-layer FEC overhead, 30 % (§4.5.1,
// following its [171]).
const Redundancy = 0.3

// MaxShards is the most packets one block may have: Reed–Solomon over
// GF(2⁸) has at most 256 symbols per code word.
const MaxShards = 256

// Block is one FEC block: K source packets sent as N ≥ K packets.
type Block struct{ K, N int }

// Plan is the block for k source packets at the given redundancy: n − k =
// ⌈redundancy·k⌉ repair packets, so every protected layer of a frame gets
// at least one (the thesis gives the ratio, not the rounding; rounding
// down would leave small base layers unprotected). redundancy 0 is FEC off.
func Plan(k int, redundancy float64) (Block, error) {
	if k < 1 || !(redundancy >= 0) || math.IsInf(redundancy, 1) {
		return Block{}, fmt.Errorf("fec: need k ≥ 1 and redundancy ≥ 0 (got %d, %v)", k, redundancy)
	}
	// The small epsilon keeps 0.3·10 = 3.0000000000000004 from rounding up to 4.
	n := k + int(math.Ceil(redundancy*float64(k)-1e-9))
	if n > MaxShards {
		return Block{}, fmt.Errorf("fec: block of %d source packets needs %d > %d shards", k, n, MaxShards)
	}
	return Block{K: k, N: n}, nil
}

// Delivered applies the k-of-n model to a block: got[i] says whether packet
// i arrived (i < K: source, i ≥ K: repair). It returns how many of the K
// source packets the receiver has: all K when at least K packets arrived,
// otherwise the source packets that arrived themselves (systematic code).
func (b Block) Delivered(got []bool) (int, error) {
	if len(got) != b.N {
		return 0, fmt.Errorf("fec: %d arrival flags for a block of %d", len(got), b.N)
	}
	total, src := 0, 0
	for i, g := range got {
		if g {
			total++
			if i < b.K {
				src++
			}
		}
	}
	if total >= b.K {
		return b.K, nil
	}
	return src, nil
}

// FailureProb is Eq. 4.1: the probability that a block of n packets, each
// lost independently with probability eps, cannot be decoded (more than
// n − k losses).
func FailureProb(b Block, eps float64) float64 {
	p := 0.0
	for j := b.N - b.K + 1; j <= b.N; j++ {
		p += binom(b.N, j) * math.Pow(eps, float64(j)) * math.Pow(1-eps, float64(b.N-j))
	}
	return p
}

func binom(n, k int) float64 {
	return math.Exp(lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1))
}

func lgamma(n int) float64 { v, _ := math.Lgamma(float64(n)); return v }
