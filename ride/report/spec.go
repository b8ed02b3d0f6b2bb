package report

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/yamlfile"
	"github.com/hetquic/hetquic/ride"
)

// Spec is a `mode: ride` experiment file: which trained actor to evaluate
// against the baselines, on how much of the test video, with which seed.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Mode        string `yaml:"mode"`
	// Seed draws the evaluation episode's network, the user's head
	// movement and Peekaboo's exploration (default 1). Seeds may only be 1:
	// a point evaluates one episode; a sweep over seed (as reproduce's
	// is) evaluates more, as for the other modes.
	Seed  uint64 `yaml:"seed"`
	Seeds int    `yaml:"seeds"`
	Ride  struct {
		// Policy is a hetquic-ride-mlp/1 file, relative to the spec's
		// directory (empty: baselines only).
		Policy string `yaml:"policy"`
		Frames int    `yaml:"frames"` // 0: the whole test video
		// MaxLoss is both paths' random-loss ceiling (a fraction; absent:
		// the models' 0.2 %), the guessed setting the RIDE claims are swept
		// over (the thesis: "a uniform random variable", no range).
		MaxLoss *float64 `yaml:"max_loss"`
	} `yaml:"ride"`
	// Sweep evaluates at many points, each a setting of some of this
	// file's fields (seed, ride.frames, ride.policy, ride.max_loss);
	// LoadPlan expands it.
	Sweep  *sweep.Block `yaml:"sweep"`
	policy *ride.MLPPolicy
}

// Parse reads a ride experiment strictly (an unknown field is an error
// naming it) and loads its policy from fsys.
func Parse(fsys fs.FS, name string, data []byte) (*Spec, error) {
	var s Spec
	if err := yamlfile.Decode(name, data, &s); err != nil {
		return nil, err
	}
	if s.Mode != "ride" {
		return nil, fmt.Errorf("%s: mode: %q, want ride", name, s.Mode)
	}
	if s.Ride.Frames < 0 {
		return nil, fmt.Errorf("%s: ride.frames: %d must be ≥ 0 (0: the whole test video)", name, s.Ride.Frames)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Seeds > 1 || s.Seeds < 0 {
		return nil, fmt.Errorf("%s: seeds: %d: a ride experiment evaluates one seed per point (sweep seed: [1, 2, …] for more)", name, s.Seeds)
	}
	if l := s.Ride.MaxLoss; l != nil && !(*l >= 0 && *l < 0.5) {
		return nil, fmt.Errorf("%s: ride.max_loss: %v must be in [0, 0.5) (a fraction)", name, *l)
	}
	if s.Ride.Policy != "" {
		p := path.Join(path.Dir(name), s.Ride.Policy)
		data, err := fs.ReadFile(fsys, p)
		if err != nil {
			return nil, fmt.Errorf("%s: ride.policy: %w", name, err)
		}
		m, err := ride.ReadMLP(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("%s: ride.policy %s: %w", name, p, err)
		}
		m.Label = "ride"
		s.policy = m
	}
	return &s, nil
}

// Policies is the spec's RIDE policy (when it names one) and the baselines.
func (s *Spec) Policies() ([]ride.Policy, error) {
	base, err := Baselines(s.Seed)
	if err != nil {
		return nil, err
	}
	if s.policy == nil {
		return base, nil
	}
	return append([]ride.Policy{s.policy}, base...), nil
}

// Summary is summary.json of a ride experiment.
type Summary struct {
	results.Header
	Frames   int             `json:"frames"`
	Policies []PolicySummary `json:"policies"`
}

// PolicySummary is one policy's numbers.
type PolicySummary struct {
	Policy          string  `json:"policy"`
	MeanFrameReward float64 `json:"mean_frame_reward"`
	// RewardRank is 1 for the policy with the highest mean reward per
	// frame, 2 for the next (Fig. 5.7's order, which claims judge).
	RewardRank         int     `json:"reward_rank"`
	ViewportMbpsMedian float64 `json:"viewport_mbps_median"`
	// ViewportMbpsMean is the mean per Window (§5.5.2's text: "averaging
	// close to 2 Mbps", "average frame quality … twice that of RR").
	ViewportMbpsMean float64    `json:"viewport_mbps_mean"`
	ThroughputMbps   float64    `json:"throughput_mbps_median"`
	ZeroRebuff       [3]float64 `json:"zero_rebuffering_share_ipb"`
	// Interruption is 1 − ZeroRebuff (§5.5.2's interruption rate).
	Interruption [3]float64 `json:"interruption_share_ipb"`
	Skipped      [3]int     `json:"skipped_ipb"`
	Decided      [3]int     `json:"decided_ipb"`
}
