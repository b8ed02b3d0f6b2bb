package runner

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// metric reads one unlabelled value from the client's Prometheus text.
func (e *env) metric(name string) float64 {
	var buf bytes.Buffer
	e.cl.WriteMetrics(&buf)
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] == name {
			v, _ := strconv.ParseFloat(f[1], 64)
			return v
		}
	}
	return 0
}

// Experiment 4 of the paper's §V: interruption.

// OutageConfig is experiment 4: one download of Size bytes; At after it
// starts, the path carrying it goes dark for Outage.
type OutageConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Size     int64              // paper: 10 MB
	At       time.Duration
	Outage   time.Duration
	Seed     uint64
	Log      *slog.Logger
}

// OutageRow is one mode of experiment 4.
type OutageRow struct {
	Mode       string  `json:"mode"`
	CutPath    string  `json:"cut_path"`
	TotalMs    float64 `json:"total_ms"`
	AfterCutMs float64 `json:"after_cut_ms"` // completion time remaining at the cut
	Migrations float64 `json:"migrations"`
	ResumeGapS float64 `json:"resume_gap_s"` // ct_client_last_resume_gap_seconds
	Bytes      int64   `json:"bytes"`        // received and checked
}

// RunOutage runs experiment 4 with stream migration (the agent's default)
// and without (stall timeout of an hour: the stream waits for its path).
// Striping is off so that one path carries the whole response.
func RunOutage(ctx context.Context, cfg OutageConfig) ([]OutageRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	modes := []struct {
		name  string
		stall time.Duration
	}{{"migration", 0}, {"no migration", time.Hour}}
	var out []OutageRow
	for _, m := range modes {
		e, err := newEnv(ctx, envConfig{Scenario: sc, StripeMin: -1, StallTimeout: m.stall, Seed: cfg.Seed, Log: cfg.Log})
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.name, err)
		}
		row, err := runOutage(ctx, e, cfg)
		e.Close()
		if err != nil {
			return out, fmt.Errorf("%s: %w", m.name, err)
		}
		row.Mode = m.name
		out = append(out, row)
	}
	return out, nil
}

func runOutage(ctx context.Context, e *env, cfg OutageConfig) (OutageRow, error) {
	eng := e.relay.Engine()
	before := eng.Stats()
	type res struct {
		f   fetch
		err error
	}
	done := make(chan res, 1)
	start := time.Now()
	go func() { f, err := e.get(ctx, "app", cfg.Size); done <- res{f, err} }()
	var cut string
	select {
	case r := <-done:
		return OutageRow{}, fmt.Errorf("download ended (%v) before the cut at %v: make it bigger", r.err, cfg.At)
	case <-time.After(cfg.At):
	}
	// The carrying path: the one that delivered the most down since start.
	var best uint64
	for i, s := range eng.Stats() {
		if d := s.Down.BytesOut - before[i].Down.BytesOut; d >= best {
			best, cut = d, s.Name
		}
	}
	cutAt := time.Since(start)
	if err := eng.Outage(cut, cfg.Outage); err != nil {
		return OutageRow{}, err
	}
	r := <-done
	total := time.Since(start)
	row := OutageRow{CutPath: cut, TotalMs: stats.Ms(total), AfterCutMs: stats.Ms(total - cutAt), Bytes: r.f.Bytes,
		Migrations: e.metric("ct_client_migrations_total"), ResumeGapS: e.metric("ct_client_last_resume_gap_seconds")}
	return row, r.err
}
