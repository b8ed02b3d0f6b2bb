package runner

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/scenario"
)

// Experiment 5 of the paper's §V: prefetch.

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
