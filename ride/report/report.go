// Package report evaluates RIDE against the thesis's baselines (RR,
// minRTT, Peekaboo) on the test video and writes §5.5.2's figures and the
// per-policy numbers (summary.json, which claims/thesis-ch5.yaml judges).
package report

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/ride"
	"github.com/hetquic/hetquic/ride/env"
)

// Config selects the evaluation episode.
type Config struct {
	Seed   uint64
	Frames int // frames of the video (0: all 1800, the thesis's 1800 test episodes)
	// Video is the video played (default env.TestVideo; env.ValidationVideo
	// chooses among trained policies).
	Video *int
	// MaxLoss overrides both paths' random-loss ceiling (nil: the models').
	MaxLoss *float64
}

// envConfig is the recorded evaluation episode cfg selects.
func (cfg Config) envConfig() env.Config {
	ec := env.Config{Seed: cfg.Seed, Video: env.TestVideo, Frames: cfg.Frames, Start: 0, Record: true}
	if cfg.Video != nil {
		ec.Video = *cfg.Video
	}
	if cfg.MaxLoss != nil {
		for _, pm := range []env.PathModel{env.LTE, env.WiFi} {
			pm.MaxLoss = *cfg.MaxLoss
			ec.Paths = append(ec.Paths, pm)
		}
	}
	return ec
}

// Evaluate runs every policy on the same episode of the test video, each
// in its own simulation, on the one runner (opt.Workers at once; 0: one per
// CPU); results depend on neither the order nor the worker count. A
// cancelled ctx starts no further policy.
func Evaluate(ctx context.Context, cfg Config, policies []ride.Policy, opt workpool.Options) ([]env.Metrics, error) {
	out := make([]env.Metrics, len(policies))
	err := workpool.Run(ctx, len(policies), opt, func(ctx context.Context, k int) error {
		var err error
		out[k], err = evaluate(ctx, cfg, policies[k])
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// evaluate runs policy p on the episode cfg selects and measures it.
func evaluate(ctx context.Context, cfg Config, p ride.Policy) (env.Metrics, error) {
	e, err := env.RunContext(ctx, cfg.envConfig(), p)
	if err != nil {
		return env.Metrics{}, fmt.Errorf("%s: %w", p.Name(), err)
	}
	return env.Measure(p.Name(), e), nil
}

// numBaselines is how many policies Baselines returns.
const numBaselines = 3

// Baselines returns RR, minRTT and Peekaboo for two paths.
func Baselines(seed uint64) ([]ride.Policy, error) {
	pk, err := env.NewPeekaboo(2, seed)
	if err != nil {
		return nil, err
	}
	return []ride.Policy{&ride.RoundRobin{}, ride.MinRTT{}, pk}, nil
}

// Tables is the evaluation's per-policy table; report.md and `hetquic ride
// eval --md` print it. The thesis's numbers live in claims/thesis-ch5.yaml
// and are judged by `hetquic reproduce`.
func Tables(ms []env.Metrics) []results.Table {
	return []results.Table{policyTable(ms)}
}

func policyTable(ms []env.Metrics) results.Table {
	t := results.Table{Header: []string{"policy", "mean reward / frame", "viewport Mbit/s: median ± sd (mean)",
		"throughput Mbit/s: median (mean)", "no rebuffering I / P / B", "skipped I / P / B"}}
	for _, m := range ms {
		mean, sd := stats.MeanStd(m.ViewportMbps)
		t.Rows = append(t.Rows, []string{m.Policy, fmt.Sprintf("%.2f", m.MeanFrameReward()),
			fmt.Sprintf("%.2f ± %.2f (%.2f)", stats.Median(m.ViewportMbps), sd, mean),
			fmt.Sprintf("%.2f (%.2f)", stats.Median(m.ThroughputMbps), stats.Mean(m.ThroughputMbps)),
			fmt.Sprintf("%.1f / %.1f / %.1f %%", 100*m.ZeroRebuff(ride.I), 100*m.ZeroRebuff(ride.P), 100*m.ZeroRebuff(ride.B)),
			fmt.Sprintf("%d / %d / %d", m.Skipped[ride.I], m.Skipped[ride.P], m.Skipped[ride.B])})
	}
	return t
}

// Summarize is summary.json's content for header h.
func Summarize(h results.Header, frames int, ms []env.Metrics) Summary {
	s := Summary{Header: h, Frames: frames}
	for _, m := range ms {
		ps := PolicySummary{Policy: m.Policy, MeanFrameReward: m.MeanFrameReward(), RewardRank: 1,
			ViewportMbpsMedian: stats.Median(m.ViewportMbps), ViewportMbpsMean: stats.Mean(m.ViewportMbps),
			ThroughputMbps: stats.Median(m.ThroughputMbps), Skipped: m.Skipped, Decided: m.Decided}
		for _, ty := range []ride.FrameType{ride.I, ride.P, ride.B} {
			ps.ZeroRebuff[ty] = m.ZeroRebuff(ty)
			ps.Interruption[ty] = 1 - ps.ZeroRebuff[ty]
		}
		for _, o := range ms {
			if o.MeanFrameReward() > ps.MeanFrameReward {
				ps.RewardRank++
			}
		}
		s.Policies = append(s.Policies, ps)
	}
	return s
}

// Write puts the figures, CSVs and report.md into dir and returns the
// files written.
func Write(dir string, ms []env.Metrics, header string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var files []string
	add := func(name string) string { p := filepath.Join(dir, name); files = append(files, p); return p }
	// Fig. 5.7: cumulative reward per episode (frame), a 30-frame moving average.
	p := figure.NewPlot("Cumulative reward per frame (Fig. 5.7)", "frame (test episode)", "reward (30-frame moving average)")
	var ents []figure.Entry
	for k, m := range ms {
		xys := make(plotter.XYs, len(m.FrameReward))
		s := 0.0
		for i, r := range m.FrameReward {
			s += r
			if i >= 30 {
				s -= m.FrameReward[i-30]
			}
			xys[i] = plotter.XY{X: float64(i), Y: s / float64(min(i+1, 30))}
		}
		e, err := figure.AddLine(p, k, m.Policy, xys)
		if err != nil {
			return nil, err
		}
		ents = append(ents, e)
	}
	if err := figure.SaveWithLegend(add("fig5_7_reward.png"), p, ents, figure.Size{W: 7 * vg.Inch, H: 4 * vg.Inch, Legend: 1.3 * vg.Inch}); err != nil {
		return nil, err
	}
	labels := make([]string, len(ms))
	vp, tp := make([]float64, len(ms)), make([]float64, len(ms))
	for k, m := range ms {
		labels[k], vp[k], tp[k] = m.Policy, stats.Median(m.ViewportMbps), stats.Median(m.ThroughputMbps)
	}
	if err := figure.Bars(add("fig5_8_viewport_bitrate.png"), "Viewport bitrate, median per 100 ms (Fig. 5.8)", "Mbit/s", labels, vp); err != nil {
		return nil, err
	}
	if err := figure.Bars(add("fig5_9_throughput.png"), "Throughput, median per 100 ms (Fig. 5.9)", "Mbit/s", labels, tp); err != nil {
		return nil, err
	}
	for _, t := range []ride.FrameType{ride.I, ride.B, ride.P} {
		p := figure.NewPlot(fmt.Sprintf("Rebuffering time CDF, %v frames (Fig. 5.10)", t), "rebuffering time (s)", "CDF")
		ents = ents[:0]
		for k, m := range ms {
			r := m.Rebuff[t]
			xys := make(plotter.XYs, 0, len(r))
			for i, d := range r {
				xys = append(xys, plotter.XY{X: d.Seconds(), Y: float64(i+1) / float64(len(r))})
			}
			if len(xys) == 0 {
				continue
			}
			e, err := figure.AddLine(p, k, m.Policy, xys)
			if err != nil {
				return nil, err
			}
			ents = append(ents, e)
		}
		if err := figure.SaveWithLegend(add(fmt.Sprintf("fig5_10_rebuffering_%v.png", t)), p, ents, figure.Size{W: 6 * vg.Inch, H: 4 * vg.Inch, Legend: 1.3 * vg.Inch}); err != nil {
			return nil, err
		}
	}
	// frame_reward.csv: one row per frame, a column per policy.
	f, err := os.Create(add("frame_reward.csv"))
	if err != nil {
		return nil, err
	}
	cw := csv.NewWriter(f)
	row := []string{"frame"}
	for _, m := range ms {
		row = append(row, m.Policy)
	}
	cw.Write(row)
	for i := range ms[0].FrameReward {
		row = []string{strconv.Itoa(i)}
		for _, m := range ms {
			v := ""
			if i < len(m.FrameReward) {
				v = strconv.FormatFloat(m.FrameReward[i], 'f', 4, 64)
			}
			row = append(row, v)
		}
		cw.Write(row)
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	rf, err := os.Create(add("report.md"))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(rf, "# RIDE evaluation\n\n%s\n\n", header)
	if err := results.WriteTables(rf, Tables(ms)); err != nil {
		rf.Close()
		return nil, err
	}
	fmt.Fprintf(rf, "\nFigures: fig5_7_reward.png, fig5_8_viewport_bitrate.png, fig5_9_throughput.png, fig5_10_rebuffering_{I,B,P}.png (and .svg).\n%s", results.ProvenanceLine())
	if err := rf.Close(); err != nil {
		return nil, err
	}
	for _, fl := range files {
		if filepath.Ext(fl) == ".png" {
			files = append(files, figure.SVGName(fl))
		}
	}
	return files, nil
}
