package env

import (
	"slices"
	"time"

	"github.com/hetquic/hetquic/ride"
)

// Window is the bin of the viewport-bitrate and throughput series (§5.5.2:
// "counting the received and decoded frame in bytes at the receiver every
// 100 ms").
const Window = 100 * time.Millisecond

// Metrics are §5.5.2's measures of one policy on one episode.
type Metrics struct {
	Policy string
	// FrameReward is the true reward summed over each frame's decided
	// tiles, in frame order (Fig. 5.7: a thesis test episode is one frame).
	FrameReward []float64
	// ViewportMbps and ThroughputMbps are per Window: bytes of viewed tiles
	// decoded before the end of their slot (Fig. 5.8) and bytes arriving,
	// dependencies and late tiles included (Fig. 5.9).
	ViewportMbps, ThroughputMbps []float64
	// Rebuff[t] is every decided tile-frame of type t's rebuffering time
	// (Eq. 5.12, a skipped tile freezes for Γ − t₁), sorted (Fig. 5.10).
	Rebuff [3][]time.Duration
	// Skipped and Decided count tile-frames by type (Table 5.1).
	Skipped, Decided [3]int
	Steps            int // decisions taken
}

// Measure computes the metrics of a finished Record episode.
func Measure(name string, e *Env) Metrics {
	m := Metrics{Policy: name, Steps: e.Steps()}
	byFrame := map[int]float64{}
	var frames []int
	for _, o := range e.Outcomes {
		if _, ok := byFrame[o.Frame]; !ok {
			frames = append(frames, o.Frame)
		}
		byFrame[o.Frame] += o.Reward
		m.Decided[o.Type]++
		if o.Action == ride.Skip {
			m.Skipped[o.Type]++
		}
		m.Rebuff[o.Type] = append(m.Rebuff[o.Type], o.Stages.Rebuff)
	}
	slices.Sort(frames)
	for _, f := range frames {
		m.FrameReward = append(m.FrameReward, byFrame[f])
	}
	for t := range m.Rebuff {
		slices.Sort(m.Rebuff[t])
	}
	m.ViewportMbps = binMbps(e.Decoded, e.Now())
	m.ThroughputMbps = binMbps(e.Arrivals, e.Now())
	return m
}

// binMbps sums samples per Window from the first release to end.
func binMbps(samples []Sample, end time.Duration) []float64 {
	n := int(end/Window) + 1
	bins := make([]float64, n)
	for _, s := range samples {
		if k := int(s.At / Window); k >= 0 && k < n {
			bins[k] += float64(s.Bytes) * 8 / Window.Seconds() / 1e6
		}
	}
	return bins
}

// ZeroRebuff is the share of type t's tile-frames played without
// rebuffering (§5.5.2: 1 − the interruption rate).
func (m *Metrics) ZeroRebuff(t ride.FrameType) float64 {
	r := m.Rebuff[t]
	if len(r) == 0 {
		return 0
	}
	k, _ := slices.BinarySearch(r, time.Duration(1))
	return float64(k) / float64(len(r))
}

// MeanFrameReward is the mean of FrameReward.
func (m *Metrics) MeanFrameReward() float64 {
	s := 0.0
	for _, x := range m.FrameReward {
		s += x
	}
	return s / float64(max(1, len(m.FrameReward)))
}
