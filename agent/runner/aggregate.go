package runner

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// AggConfig is experiment 3 (§V-B2): two apps fetch a big and a small
// object at the same time over every path of the scenario.
type AggConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Big      int64              // bytes of app "big" (paper: 10 MB)
	Small    int64              // bytes of app "small" (paper: 2.5 MB)
	Pin      string             // the single path of the pinned mode ("": the first)
	MPTCPCC  string             // kernel MPTCP's congestion control ("": the host's default)
	Seed     uint64
	Log      *slog.Logger
}

// AggRow is one mode of experiment 3.
type AggRow struct {
	Mode       string  `json:"mode"`
	Paths      string  `json:"paths"`
	BigMs      float64 `json:"big_ms"`
	SmallMs    float64 `json:"small_ms"`
	MakespanMs float64 `json:"makespan_ms"`
	// IdealMs is the total bytes at the summed down rate of all the
	// scenario's paths; Efficiency = IdealMs / MakespanMs, the paper's
	// (total bytes / total capacity) / measured time.
	IdealMs    float64 `json:"ideal_ms"`
	Efficiency float64 `json:"efficiency"`
	Runs       int     `json:"runs,omitempty"` // rows averaged (MeanAggregation)
}

// RunAggregation runs experiment 3: ct-client aggregating every path
// (default scheduler, striping on), the same without striping (stream-level
// placement only), and ct-client pinned to one path.
func RunAggregation(ctx context.Context, cfg AggConfig) ([]AggRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	pin := cfg.Pin
	if pin == "" {
		pin = sc.Paths[0].Name
	}
	ideal := time.Duration(float64(cfg.Big+cfg.Small) / downRate(sc, nil) * float64(time.Second))
	modes := []struct {
		name   string
		paths  []string
		stripe int64
		lanes  int
	}{
		{"ct aggregation", nil, 0, 1},
		{"ct aggregation, 2 conns/path", nil, 0, 2},
		{"ct aggregation, no striping", nil, -1, 1},
		{"ct pinned to " + pin, []string{pin}, 0, 1},
	}
	var out []AggRow
	for _, m := range modes {
		e, err := newEnv(ctx, envConfig{Scenario: sc, Paths: m.paths, StripeMin: m.stripe, Lanes: m.lanes, Seed: cfg.Seed, Log: cfg.Log})
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.name, err)
		}
		fs, span, err := e.parallel(ctx, []string{"big", "small"}, []int64{cfg.Big, cfg.Small})
		e.Close()
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.name, err)
		}
		paths := "all"
		if m.paths != nil {
			paths = m.paths[0]
		}
		out = append(out, AggRow{Mode: m.name, Paths: paths, BigMs: stats.Ms(fs[0].Dur), SmallMs: stats.Ms(fs[1].Dur),
			MakespanMs: stats.Ms(span), IdealMs: stats.Ms(ideal), Efficiency: float64(ideal) / float64(span)})
	}
	return out, nil
}

// MeanAggregation averages rows of several runs by mode, in the order the
// modes first appear; Runs counts them.
func MeanAggregation(rows []AggRow) []AggRow {
	var out []AggRow
	at := map[string]int{}
	for _, r := range rows {
		i, ok := at[r.Mode]
		if !ok {
			i = len(out)
			at[r.Mode] = i
			out = append(out, AggRow{Mode: r.Mode, Paths: r.Paths})
		}
		m := &out[i]
		m.Runs++
		m.BigMs += r.BigMs
		m.SmallMs += r.SmallMs
		m.MakespanMs += r.MakespanMs
		m.IdealMs += r.IdealMs
		m.Efficiency += r.Efficiency
	}
	for i := range out {
		m, n := &out[i], float64(out[i].Runs)
		m.BigMs, m.SmallMs, m.MakespanMs, m.IdealMs, m.Efficiency = m.BigMs/n, m.SmallMs/n, m.MakespanMs/n, m.IdealMs/n, m.Efficiency/n
	}
	return out
}

func orDefault(s *scenario.Scenario) (*scenario.Scenario, error) {
	if s != nil {
		return s, nil
	}
	return LoadDefault()
}
