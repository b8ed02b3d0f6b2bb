package runner

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// Experiment 2 of the paper's §V: loss sweep.

// LossConfig is experiment 2: each size downloaded alone over one path
// whose downstream loss is set to each rate in turn.
type LossConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Path     string             // "": the first path
	Losses   []float64          // fractions (paper: 0, .01, .02, .05)
	Sizes    []int64            // paper: 2.5 MB, 10 MB
	Lanes    int                // QUIC connections on the path (0: 1; agent.Lanes)
	Seed     uint64
	Log      *slog.Logger
}

// LossRow is one cell of experiment 2.
type LossRow struct {
	Loss      float64 `json:"loss"`
	SizeBytes int64   `json:"size_bytes"`
	Ms        float64 `json:"ms"`
	IdealMs   float64 `json:"ideal_ms"` // size at the path's rate
	Mbps      float64 `json:"goodput_mbps"`
}

// RunLoss runs experiment 2 through ct-client pinned to one path.
func RunLoss(ctx context.Context, cfg LossConfig) ([]LossRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	p := cfg.Path
	if p == "" {
		p = sc.Paths[0].Name
	}
	rate := downRate(sc, []string{p})
	var out []LossRow
	for _, loss := range cfg.Losses {
		e, err := newEnv(ctx, envConfig{Scenario: sc, Paths: []string{p}, Lanes: cfg.Lanes, Seed: cfg.Seed, Log: cfg.Log})
		if err != nil {
			return out, err
		}
		patch, err := scenario.ParsePatch(fmt.Sprintf("{down: {loss: %g}}", loss))
		if err == nil {
			err = e.relay.Engine().Apply(p, patch)
		}
		for _, size := range cfg.Sizes {
			if err != nil {
				break
			}
			var f fetch
			if f, err = e.get(ctx, "app", size); err == nil {
				out = append(out, LossRow{Loss: loss, SizeBytes: size, Ms: stats.Ms(f.Dur),
					IdealMs: float64(size) / rate * 1000, Mbps: float64(size) * 8 / f.Dur.Seconds() / 1e6})
			}
		}
		e.Close()
		if err != nil {
			return out, fmt.Errorf("loss %g: %w", loss, err)
		}
	}
	return out, nil
}
