package ride

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"time"
)

// Skip is the action that sends nothing for a tile (§5.4.3: "−1").
const Skip = -1

// PathState is what the sender knows of one path at a decision: the state
// features ŵ, b, τ, ε of §5.4.2, read from the simulated connection, and
// the bytes already queued on it.
type PathState struct {
	AvailCwnd float64       // ŵ: congestion window left, bytes
	Cwnd      float64       // congestion window, bytes
	BwBps     float64       // b: delivery rate measured on the path, bit/s
	SRTT      time.Duration // τ: smoothed RTT
	Loss      float64       // ε: loss rate
	Backlog   float64       // bytes written to the path and not yet delivered
	CanSend   bool          // the window has room for a packet now
}

// TileState is the decided tile f_{i,z} (§5.4.2's Γ and L).
type TileState struct {
	Frame, Tile int
	Type        FrameType
	Bytes       int           // the tile's own size
	BundleBytes int           // L: with the frames it needs that were not sent yet
	ToPlayback  time.Duration // t₁ − now
	ToDeadline  time.Duration // Γ − now
	LeftInFrame int           // tiles of this frame still to decide after this one
}

// State is one decision's observation.
type State struct {
	Now   time.Duration
	Paths []PathState
	Tile  TileState
}

// FeatureDim is the length of Features for m paths.
func FeatureDim(m int) int { return 6*m + 8 }

// Feature scales: each feature is divided by a typical magnitude so that
// the network sees numbers of order 1.
const (
	scaleBytes = 100e3 // 100 kB
	scaleRate  = 50e6  // 50 Mbit/s
	scaleTime  = 100 * time.Millisecond
	featureMax = 10 // features are clipped to ±featureMax
)

// Features is the state vector the policy network reads (§5.4.2:
// (ŵ, b, d, e, Γ, L) plus the tile's playback time, type and the path
// backlogs), scaled and clipped to ±10.
func (s *State) Features() []float64 {
	f := make([]float64, 0, FeatureDim(len(s.Paths)))
	for _, p := range s.Paths {
		can := 0.0
		if p.CanSend {
			can = 1
		}
		f = append(f, p.AvailCwnd/scaleBytes, p.BwBps/scaleRate, float64(p.SRTT)/float64(scaleTime),
			p.Loss*10, p.Backlog/scaleBytes, can)
	}
	t := s.Tile
	var oh [3]float64
	oh[t.Type] = 1
	f = append(f, float64(t.Bytes)/scaleBytes, float64(t.BundleBytes)/scaleBytes,
		float64(t.ToPlayback)/float64(scaleTime), float64(t.ToDeadline)/float64(scaleTime),
		float64(t.LeftInFrame)/50, oh[0], oh[1], oh[2])
	for k, x := range f {
		f[k] = math.Max(-featureMax, math.Min(featureMax, x))
	}
	return f
}

// Policy picks an action for each tile: a path index or Skip.
type Policy interface {
	Name() string
	Act(s *State) int
}

// RoundRobin sends tiles on the paths in turn (§5.5's RR at tile
// granularity).
type RoundRobin struct{ next int }

func (*RoundRobin) Name() string { return "rr" }
func (r *RoundRobin) Act(s *State) int {
	a := r.next % len(s.Paths)
	r.next++
	return a
}

// MinRTT sends each tile on the path with the lowest smoothed RTT among
// those whose window has room, or the lowest-RTT path when none has
// (§5.5: "provided that the congestion window still has space, the path
// with the lowest measured RTT is preferred").
type MinRTT struct{}

func (MinRTT) Name() string { return "minrtt" }
func (MinRTT) Act(s *State) int {
	best, bestOpen := 0, -1
	for i, p := range s.Paths {
		if p.SRTT < s.Paths[best].SRTT {
			best = i
		}
		if p.CanSend && (bestOpen < 0 || p.SRTT < s.Paths[bestOpen].SRTT) {
			bestOpen = i
		}
	}
	if bestOpen >= 0 {
		return bestOpen
	}
	return best
}

// Layer is one dense layer: out = W·in + B, W row-major (len(B) rows).
type Layer struct {
	W [][]float64 `json:"w"`
	B []float64   `json:"b"`
}

// MLPPolicy is a trained actor (§5.4.5: two hidden layers of 64 ReLU units)
// exported from Python. The output layer gives one logit per action, in
// the order Skip, path 0, path 1, …; the policy acts greedily (argmax), as
// evaluation does.
type MLPPolicy struct {
	Format   string  `json:"format"` // "hetquic-ride-mlp/1"
	Paths    int     `json:"paths"`
	Features int     `json:"features"`
	Layers   []Layer `json:"layers"`
	Label    string  `json:"name,omitempty"`
	// Training records how the weights were made, so that a file is never
	// taken for more training than it had (absent in hand-made files).
	Training *Training `json:"training,omitempty"`
}

// Training is a policy file's provenance.
type Training struct {
	Steps int    `json:"steps"`               // PPO steps the weights had
	Seed  int    `json:"seed"`                // training seed
	Run   int    `json:"run_steps,omitempty"` // the run's budget, when Steps is a checkpoint of it
	Note  string `json:"note,omitempty"`      // e.g. how it was chosen
}

// MLPFormat is the weights file's format tag.
const MLPFormat = "hetquic-ride-mlp/1"

// ReadMLP reads and checks a weights file.
func ReadMLP(r io.Reader) (*MLPPolicy, error) {
	var m MLPPolicy
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("policy weights: %w", err)
	}
	if m.Format != MLPFormat {
		return nil, fmt.Errorf("policy weights: format %q, want %q", m.Format, MLPFormat)
	}
	if m.Paths < 1 || m.Features != FeatureDim(m.Paths) {
		return nil, fmt.Errorf("policy weights: %d paths and %d features, want %d features for %d paths", m.Paths, m.Features, FeatureDim(m.Paths), m.Paths)
	}
	if len(m.Layers) == 0 {
		return nil, fmt.Errorf("policy weights: no layers")
	}
	if tr := m.Training; tr != nil && (tr.Steps <= 0 || (tr.Run != 0 && tr.Run < tr.Steps)) {
		return nil, fmt.Errorf("policy weights: training: steps %d must be > 0 and at most run_steps %d", tr.Steps, tr.Run)
	}
	in := m.Features
	for k, l := range m.Layers {
		if len(l.W) != len(l.B) || len(l.B) == 0 {
			return nil, fmt.Errorf("policy weights: layer %d has %d rows and %d biases", k, len(l.W), len(l.B))
		}
		for r, row := range l.W {
			if len(row) != in {
				return nil, fmt.Errorf("policy weights: layer %d row %d has %d inputs, want %d", k, r, len(row), in)
			}
			for _, x := range row {
				if math.IsNaN(x) || math.IsInf(x, 0) {
					return nil, fmt.Errorf("policy weights: layer %d row %d is not finite", k, r)
				}
			}
		}
		in = len(l.B)
	}
	if in != m.Paths+1 {
		return nil, fmt.Errorf("policy weights: %d outputs, want %d (skip and one per path)", in, m.Paths+1)
	}
	return &m, nil
}

func (m *MLPPolicy) Name() string {
	if m.Label != "" {
		return m.Label
	}
	return "ride"
}

// Logits runs the forward pass: ReLU after every layer but the last.
func (m *MLPPolicy) Logits(x []float64) []float64 {
	for k, l := range m.Layers {
		y := make([]float64, len(l.B))
		for r, row := range l.W {
			s := l.B[r]
			for c, w := range row {
				s += w * x[c]
			}
			if k < len(m.Layers)-1 && s < 0 {
				s = 0
			}
			y[r] = s
		}
		x = y
	}
	return x
}

// Act returns the action with the highest logit (ties: the lowest index).
func (m *MLPPolicy) Act(s *State) int { return m.ActFeatures(s.Features()) }

// ActFeatures is Act on a feature vector (State.Features).
func (m *MLPPolicy) ActFeatures(x []float64) int {
	lg := m.Logits(x)
	best := 0
	for k, v := range lg {
		if v > lg[best] {
			best = k
		}
	}
	return best - 1 // index 0 is Skip
}
