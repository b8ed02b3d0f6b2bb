package layeredvideo

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/yamlfile"
	"github.com/hetquic/hetquic/qcmab"
)

// Spec is one chapter-4 experiment: a scenario, the variants to compare,
// seeds, and optionally an AP-spacing sweep (Fig. 4.8) or an off-line
// replay evaluation. A YAML file; see experiments/ and README.md.
type Spec struct {
	Name        string       `yaml:"name"`
	Mode        string       `yaml:"mode"` // video (Mode)
	Description string       `yaml:"description"`
	Figure      string       `yaml:"figure"` // the thesis figure it reproduces
	Scenario    ScenarioSpec `yaml:"scenario"`
	DurationS   float64      `yaml:"duration_s"`
	Seeds       int          `yaml:"seeds"`
	Seed        uint64       `yaml:"seed"` // the first seed (default 1): seeds are Seed, Seed+1, …
	// SweepSpacingM runs every variant once per AP spacing (Fig. 4.8).
	SweepSpacingM []float64 `yaml:"sweep_spacing_m"`
	// Replay, when set, also logs a uniformly random QC-MAB (ε = 1) per
	// seed and scores every QC-MAB variant on that log off-line
	// (qcmab.Replay), beside its on-line mean reward.
	Replay   bool          `yaml:"replay"`
	Variants []VariantSpec `yaml:"variants"`
	// Sweep runs the experiment at many points, each a setting of some of
	// this file's fields (scenario.ap_spacing_m, variants[0].gamma);
	// LoadPlan expands it.
	Sweep *sweep.Block `yaml:"sweep"`
}

// ScenarioSpec is Scenario in YAML.
type ScenarioSpec struct {
	Kind       string  `yaml:"kind"`
	APSpacingM float64 `yaml:"ap_spacing_m"`
	AreaM      float64 `yaml:"area_m"`
	SpeedMps   float64 `yaml:"speed_mps"`
	Background bool    `yaml:"background"`
	// BackgroundLoad is the share of time each background flow is on
	// (default 0.5): the thesis gives no on/off periods, so it is a guess
	// the claims sweep (claims/thesis-ch4.yaml).
	BackgroundLoad float64 `yaml:"background_load"`
	// FadeMarginDB (lattice; default 18): the radio model's fading margin,
	// a guess the thesis leaves open (world.go).
	FadeMarginDB float64 `yaml:"fade_margin_db"`
}

// VariantSpec is Variant in YAML.
type VariantSpec struct {
	Label      string  `yaml:"label"`
	Controller string  `yaml:"controller"`
	Gamma      float64 `yaml:"gamma"`
	Raw        bool    `yaml:"raw"`
	Policy     string  `yaml:"policy"`
	// Epsilon (QC-MAB only, [0, 1]): the share of slots that take a
	// uniformly random eligible arm; 1 is the uniform-random policy over
	// the same candidates, the baseline a learner must beat.
	Epsilon float64 `yaml:"epsilon"`
	// Thresholds replace the thesis's context partition (QC-MAB only).
	Thresholds *ThresholdSpec `yaml:"thresholds"`
	// Arms restricts QC-MAB to these arms: "apN" or "apN+fec", N an AP of
	// the scenario (lattice: row-major from the lower-left corner;
	// backbone: ap0, ap1).
	Arms []string `yaml:"arms"`
}

// ThresholdSpec is qcmab.Thresholds in YAML.
type ThresholdSpec struct {
	BandwidthMbps [2]float64 `yaml:"bandwidth_mbps"`
	OWDms         [2]float64 `yaml:"owd_ms"`
	Loss          [2]float64 `yaml:"loss"`
}

//go:embed experiments/*.yaml
var builtin embed.FS

// Names lists the built-in experiments.
func Names() []string {
	es, _ := fs.ReadDir(builtin, "experiments")
	var out []string
	for _, e := range es {
		out = append(out, strings.TrimSuffix(e.Name(), ".yaml"))
	}
	return out
}

// LoadBuiltin loads a built-in experiment by name.
func LoadBuiltin(name string) (*Spec, error) {
	p := path.Join("experiments", strings.TrimSuffix(name, ".yaml")+".yaml")
	data, err := builtin.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("%s: not a built-in qcmab experiment (%s)", name, strings.Join(Names(), ", "))
	}
	return Parse(p, data)
}

// LoadFS reads and validates experiment file name of fsys.
func LoadFS(fsys fs.FS, name string) (*Spec, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	return Parse(name, data)
}

// Parse decodes and validates a spec; every error is one line naming the
// file and the field.
func Parse(name string, data []byte) (*Spec, error) {
	var s Spec
	if err := yamlfile.Decode(name, data, &s); err != nil {
		// yamlfile quotes a bad scalar verbatim, newlines included
		// (FuzzParse found it); keep the error on one line.
		return nil, errors.New(strings.ReplaceAll(err.Error(), "\n", `\n`))
	}
	if err := s.validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

func (s *Spec) validate() error {
	if s.Name == "" {
		return fmt.Errorf("name: missing")
	}
	if s.Mode != "" && s.Mode != "video" { // hetquic exp run needs it to say video
		return fmt.Errorf("mode: %q, want video", s.Mode)
	}
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Seeds < 1 || s.Seeds > 1000 {
		return fmt.Errorf("seeds: %d, want 1–1000", s.Seeds)
	}
	if !(s.DurationS > 0 && s.DurationS <= 3600) {
		return fmt.Errorf("duration_s: %v, want (0, 3600]", s.DurationS)
	}
	for _, sp := range s.SweepSpacingM {
		if !(sp > 0) || math.IsInf(sp, 0) {
			return fmt.Errorf("sweep_spacing_m: %v must be > 0", sp)
		}
	}
	if len(s.Variants) == 0 {
		return fmt.Errorf("variants: none")
	}
	seen := map[string]bool{}
	for i, v := range s.Variants {
		if v.Label == "" || seen[v.Label] {
			return fmt.Errorf("variants[%d]: label %q missing or repeated", i, v.Label)
		}
		seen[v.Label] = true
		if _, err := v.variant(s.scenario(0).networks()); err != nil {
			return fmt.Errorf("variants[%d] (%s): %w", i, v.Label, err)
		}
	}
	for _, sp := range append([]float64{0}, s.SweepSpacingM...) {
		sc := s.scenario(sp)
		if err := sc.validate(); err != nil {
			return fmt.Errorf("scenario: %w", err)
		}
	}
	return nil
}

// scenario is the spec's scenario, at AP spacing sp when sp > 0.
func (s *Spec) scenario(sp float64) Scenario {
	sc := Scenario{Kind: s.Scenario.Kind, APSpacingM: s.Scenario.APSpacingM, AreaM: s.Scenario.AreaM,
		SpeedMps: s.Scenario.SpeedMps, Background: s.Scenario.Background, BackgroundLoad: s.Scenario.BackgroundLoad,
		FadeMarginDB: s.Scenario.FadeMarginDB, Duration: time.Duration(s.DurationS * float64(time.Second))}
	if sp > 0 {
		sc.APSpacingM = sp
	}
	return sc
}

// variant checks v against the scenario's network names.
func (v VariantSpec) variant(networks []string) (Variant, error) {
	out := Variant{Label: v.Label, Controller: v.Controller, Gamma: v.Gamma, Raw: v.Raw, Policy: qcmab.Policy(v.Policy),
		Thresholds: qcmab.DefaultThresholds, Arms: v.Arms, Epsilon: v.Epsilon}
	if v.Thresholds != nil {
		out.Thresholds = qcmab.Thresholds(*v.Thresholds)
	}
	switch v.Controller {
	case QCMAB:
		if _, err := qcmab.New(out.agentConfig(networks)); err != nil {
			return out, err
		}
	case Peekaboo, LEAP, LEAPFECBBR, MinRTT:
		if v.Raw || v.Policy != "" || v.Thresholds != nil || len(v.Arms) > 0 || v.Epsilon != 0 {
			return out, fmt.Errorf("raw, policy, thresholds, arms and epsilon apply to qcmab only")
		}
		if v.Gamma != 0 {
			if err := qcmab.ValidateGamma(v.Gamma); err != nil {
				return out, err
			}
		}
	default:
		return out, fmt.Errorf("controller %q unknown (qcmab, peekaboo, leap, leap-fec-bbr, minrtt)", v.Controller)
	}
	return out, nil
}

func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}
