package fec

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"
)

func TestPlan(t *testing.T) {
	for _, tc := range []struct {
		k    int
		red  float64
		want int
	}{{1, 0.3, 2}, {3, 0.3, 4}, {10, 0.3, 13}, {11, 0.3, 15}, {20, 0.3, 26}, {7, 0, 7}} {
		b, err := Plan(tc.k, tc.red)
		if err != nil || b.N != tc.want || b.K != tc.k {
			t.Errorf("Plan(%d, %v) = %+v, %v; want n = %d", tc.k, tc.red, b, err, tc.want)
		}
	}
	for _, k := range []int{0, 250} {
		if _, err := Plan(k, 0.3); err == nil {
			t.Errorf("Plan(%d) accepted", k)
		}
	}
}

// Eq. 4.1 by hand: k = 2, n = 3, ε = 0.1: fail when ≥ 2 lost:
// 3·0.01·0.9 + 0.001 = 0.028.
func TestFailureProb(t *testing.T) {
	if p := FailureProb(Block{2, 3}, 0.1); math.Abs(p-0.028) > 1e-12 {
		t.Fatalf("FailureProb = %v, want 0.028", p)
	}
	if p := FailureProb(Block{4, 4}, 0.1); math.Abs(p-(1-math.Pow(0.9, 4))) > 1e-12 {
		t.Fatalf("no FEC: %v, want 1 − 0.9⁴", p)
	}
}

// The property: for random blocks and random loss patterns, the simulator's
// k-of-n model and the real Reed–Solomon coder agree on which source
// packets the receiver ends up with — all of them (byte-exact) exactly when
// the model says the block decodes, and otherwise just the ones that came.
func TestModelMatchesCoder(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 4))
	decoded, failed := 0, 0
	for trial := range 3000 {
		k := 1 + rng.IntN(24)
		red := []float64{0, Redundancy, 0.5}[trial%3]
		b, err := Plan(k, red)
		if err != nil {
			t.Fatal(err)
		}
		src := make([][]byte, k)
		for i := range src {
			src[i] = make([]byte, 1+rng.IntN(40))
			for j := range src[i] {
				src[i][j] = byte(rng.UintN(256))
			}
		}
		shards, err := encode(b, src)
		if err != nil {
			t.Fatal(err)
		}
		loss := rng.Float64() * 0.5
		got := make([]bool, b.N)
		for i := range got {
			got[i] = rng.Float64() >= loss
			if !got[i] {
				shards[i] = nil
			}
		}
		model, err := b.Delivered(got)
		if err != nil {
			t.Fatal(err)
		}
		cerr := reconstruct(b, shards)
		have := 0
		for i := range k {
			if shards[i] == nil {
				continue
			}
			if !bytes.Equal(shards[i][:len(src[i])], src[i]) {
				t.Fatalf("trial %d: source %d reconstructed wrong", trial, i)
			}
			have++
		}
		if have != model || (cerr == nil) != (model == k) {
			t.Fatalf("trial %d (k=%d n=%d, arrivals %v): model %d, coder %d (err %v)", trial, k, b.N, got, model, have, cerr)
		}
		if model == k {
			decoded++
		} else {
			failed++
		}
	}
	if decoded < 500 || failed < 500 {
		t.Fatalf("property covered %d decodable and %d undecodable blocks; want both ≥ 500", decoded, failed)
	}
}
