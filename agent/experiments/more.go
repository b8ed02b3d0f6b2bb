package experiments

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

// ---- Experiment 4: interruption ----

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

// ---- Experiment 2: loss sweep ----

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

// ---- Experiment 5: prefetch ----

// PrefetchConfig is experiment 5: ct-server pushes one object when the
// client connects; the app then fetches it (a cache hit) and an object of
// the same size that was not pushed (fetched on demand).
type PrefetchConfig struct {
	Scenario *scenario.Scenario // nil: DefaultScenario
	Size     int64
	Seed     uint64
	Log      *slog.Logger
}

// PrefetchRow is one fetch of experiment 5.
type PrefetchRow struct {
	Mode  string  `json:"mode"`
	Ms    float64 `json:"ms"`
	Hit   bool    `json:"cache_hit"`
	Bytes int64   `json:"bytes"`
}

// RunPrefetch runs experiment 5. The on-demand object differs from the
// pushed one by its URL only (a query string origin ignores).
func RunPrefetch(ctx context.Context, cfg PrefetchConfig) ([]PrefetchRow, error) {
	sc, err := orDefault(cfg.Scenario)
	if err != nil {
		return nil, err
	}
	pushed := fmt.Sprintf("/bytes/%d", cfg.Size)
	e, err := newEnv(ctx, envConfig{Scenario: sc, Prefetch: []string{pushed}, Cache: true, Seed: cfg.Seed, Log: cfg.Log})
	if err != nil {
		return nil, err
	}
	defer e.Close()
	// Wait for the push to land (it crosses the emulated paths too).
	deadline := time.Now().Add(10*time.Second + time.Duration(float64(cfg.Size)/downRate(sc, nil)*2*float64(time.Second)))
	for e.cache.Len() == 0 {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("prefetch of %s never reached the cache", pushed)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	var out []PrefetchRow
	for _, m := range []struct{ name, path string }{{"prefetched", pushed}, {"on demand", pushed + "?fresh=1"}} {
		f, err := e.getPath(ctx, "app", m.path, cfg.Size)
		if err != nil {
			return out, err
		}
		out = append(out, PrefetchRow{Mode: m.name, Ms: stats.Ms(f.Dur), Hit: f.Hit, Bytes: f.Bytes})
	}
	return out, nil
}
