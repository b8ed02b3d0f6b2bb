package emu

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"
)

// TraceModel is a Markov-modulated capacity model for generating mahimahi
// rate traces (the project ships traces made with it, so no third-party trace
// is needed and anyone can regenerate them bit for bit from the seed).
//
// The capacity is a discrete-time Markov chain over States (Mbit/s), stepped
// every Step: from state i it moves to i-1 or i+1 (each with probability
// PMove/2, clamped at the ends) or, with probability PDeep, to state 0 (a deep
// fade: a blockage, a handover, a microwave oven), and otherwise stays. On top,
// every FadeStep the rate is multiplied by a log-normal fast-fading factor
// exp(σZ − σ²/2) (mean 1) with σ = FadeSigma. Delivery opportunities (1500
// bytes each) are emitted at the ms where the accumulated capacity crosses a
// multiple of 1500 bytes, so the trace's mean rate follows the modulated
// capacity exactly.
type TraceModel struct {
	Name      string
	States    []float64 // capacity levels, Mbit/s, ascending; state 0 is the worst
	Step      time.Duration
	PMove     float64 // P(move to a neighbouring state) per Step
	PDeep     float64 // P(drop to state 0) per Step
	FadeStep  time.Duration
	FadeSigma float64
}

// TraceModels are the built-in models of "hetquic emu gentrace".
var TraceModels = map[string]TraceModel{
	// LTE: slowly varying (scheduler share and channel quality change over
	// ~seconds), 1-24 Mbit/s, rare deep fades (cell edge, handover).
	"lte": {Name: "lte", States: []float64{1, 4, 9, 16, 24}, Step: 200 * time.Millisecond,
		PMove: 0.15, PDeep: 0.005, FadeStep: 20 * time.Millisecond, FadeSigma: 0.3},
	// Wi-Fi: higher and burstier (contention, rate adaptation), 2-45
	// Mbit/s, faster state changes and more frequent short deep fades.
	"wifi": {Name: "wifi", States: []float64{2, 12, 30, 45}, Step: 100 * time.Millisecond,
		PMove: 0.2, PDeep: 0.01, FadeStep: 10 * time.Millisecond, FadeSigma: 0.45},
}

// TraceModelNames lists the built-in models, sorted.
func TraceModelNames() []string {
	var n []string
	for k := range TraceModels {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Generate returns the opportunity timestamps (ms, mahimahi format) of a
// trace of the given duration from seed. The chain starts in its middle
// state. The result is the same for the same (model, seed, duration).
func (m TraceModel) Generate(seed uint64, dur time.Duration) ([]uint64, error) {
	if len(m.States) == 0 || m.Step < time.Millisecond || m.FadeStep < time.Millisecond {
		return nil, fmt.Errorf("trace model %q: needs states and steps of at least 1 ms", m.Name)
	}
	if dur < time.Second {
		return nil, fmt.Errorf("duration: %v is too short (at least 1 s)", dur)
	}
	rng := rand.New(rand.NewPCG(seed, 0x68657471756963)) // "hetquic"
	totalMs := uint64(dur / time.Millisecond)
	stepMs := uint64(m.Step / time.Millisecond)
	fadeMs := uint64(m.FadeStep / time.Millisecond)
	state := len(m.States) / 2
	fade := 1.0
	var credit float64 // bytes
	var out []uint64
	for t := uint64(0); t < totalMs; t++ {
		if t > 0 && t%stepMs == 0 {
			u := rng.Float64()
			switch {
			case u < m.PDeep:
				state = 0
			case u < m.PDeep+m.PMove/2:
				state = max(state-1, 0)
			case u < m.PDeep+m.PMove:
				state = min(state+1, len(m.States)-1)
			}
		}
		if t%fadeMs == 0 {
			fade = math.Exp(m.FadeSigma*rng.NormFloat64() - m.FadeSigma*m.FadeSigma/2)
		}
		credit += m.States[state] * fade * 1e3 / 8 // Mbit/s → bytes per ms
		for credit >= 1500 {
			credit -= 1500
			out = append(out, t+1) // mahimahi timestamps start at 1
		}
	}
	if len(out) == 0 || out[len(out)-1] != totalMs {
		// Pin the period to the duration: mahimahi's period is the last
		// timestamp.
		out = append(out, totalMs)
	}
	return out, nil
}

// WriteTrace writes timestamps in mahimahi format (one per line).
func WriteTrace(w io.Writer, ms []uint64) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for _, t := range ms {
		b = strconv.AppendUint(b[:0], t, 10)
		b = append(b, '\n')
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}
