package layeredvideo

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/qcmab"
)

// Figure-data resolutions.
const (
	rewardBinPackets = 500 // Fig. 4.6: mean reward per 500 packets
	cdfMaxMs         = 400
	cdfStepMs        = 5
	// convergeTol: a reward curve has converged at the first 500-packet
	// bin after which every bin is within this of its final level (the
	// mean of its last quarter). The thesis reads convergence off Fig. 4.6
	// by eye; this is our reading of "about to converge".
	convergeTol = 0.05
)

// figSize leaves a legend column wide enough for labels like "QC-MAB Γ=99 % (no CR)".
var figSize = figure.Size{W: 8.5 * vg.Inch, H: 4.5 * vg.Inch, Legend: 2 * vg.Inch}

// Row is one variant's (and sweep point's) result over all seeds.
type Row struct {
	Label        string  `json:"label"`
	Controller   string  `json:"controller"`
	SpacingM     float64 `json:"spacing_m,omitempty"`
	Runs         int     `json:"runs"`
	IRPct        float64 `json:"ir_pct"`
	IRCI95Pct    float64 `json:"ir_ci95_pct"`
	MeanQuality  float64 `json:"mean_quality"`
	PBL150Pct    float64 `json:"p_bl_150_pct"`
	GoodputMbps  float64 `json:"goodput_mbps"`
	MeanReward   float64 `json:"mean_reward"`
	ConvergePkts float64 `json:"converge_packets"`
	// RewardGain is the mean reward of the last quarter of the 500-packet
	// bins minus that of the first quarter: what learning adds over the run
	// (≈ 0 for a policy that does not learn, uniform-random included).
	RewardGain float64 `json:"reward_gain"`
	// GoodputPeakRatio is, per other variant, the peak over the run's 1 s
	// bins of this variant's goodput over that one's (bins where both are
	// > 0): the thesis's "up to N×" statistic, beside the means' ratio.
	GoodputPeakRatio map[string]float64 `json:"goodput_peak_ratio,omitempty"`
	// UntriedPct is the share of QC-MAB's slots that chose an arm with no
	// sample yet in its context cell: near 100 %, UCB explores throughout
	// and cannot beat uniform-random (0 for the other controllers).
	UntriedPct float64 `json:"untried_pct"`
	Handovers  float64 `json:"handovers"`
	FECPct     float64 `json:"fec_pct"`
	// ReplayReward is the off-line replay estimate of the variant's mean
	// reward on the uniform log (Replay specs, QC-MAB variants), and
	// ReplayMatched the matched slots it rests on.
	ReplayReward  float64 `json:"replay_reward,omitempty"`
	ReplayMatched float64 `json:"replay_matched,omitempty"`

	goodput, reward500, cdf []float64
}

// Summary is summary.json of a qcmab experiment.
type Summary struct {
	results.Header
	Figure      string  `json:"figure"`
	DurationS   float64 `json:"duration_s"`
	Rows        []Row   `json:"rows"`
	UniformMean float64 `json:"uniform_logger_reward,omitempty"`
}

// job is one run: a variant at an AP spacing (0: the scenario's) on a
// seed, or, for a replay spec, the uniform logger on a seed.
type job struct {
	v       Variant
	spacing float64
	seed    uint64
	logger  bool
}

// jobs lists the spec's runs in their fixed order: AP spacing by spacing,
// variant by variant, seed by seed, then (replay) the uniform logger's
// seeds. A run's number in this list is what shards divide (Plan).
func (s *Spec) jobs() []job {
	seeds := results.Seeds(s.Seed, s.Seeds)
	spacings := s.SweepSpacingM
	if len(spacings) == 0 {
		spacings = []float64{0}
	}
	var jobs []job
	for _, sp := range spacings {
		for _, vs := range s.Variants {
			v, _ := vs.variant(s.scenario(sp).networks()) // validated
			for _, seed := range seeds {
				jobs = append(jobs, job{v: v, spacing: sp, seed: seed})
			}
		}
	}
	if s.Replay {
		for _, seed := range seeds {
			jobs = append(jobs, job{v: Variant{Label: "uniform logger", Controller: QCMAB, Epsilon: 1}, seed: seed, logger: true})
		}
	}
	return jobs
}

// run carries out job j of the spec.
func (s *Spec) run(ctx context.Context, j job) (*Result, error) {
	return Run(ctx, s.scenario(j.spacing), j.v, j.seed, j.logger)
}

// Execute runs every variant (× AP spacing) on every seed with the one
// worker pool and summarizes them; results do not depend on the worker
// count. A spec with a sweep: block runs through LoadPlan instead.
func Execute(ctx context.Context, s *Spec, opt workpool.Options) (*Summary, error) {
	p := &Plan{Name: s.Name, Set: sweep.Single(s, planLoader)}
	runs, err := RunShard(ctx, p, sweep.All, opt)
	if err != nil {
		return nil, err
	}
	sums, err := Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	return sums[0], nil
}

// summarize turns every run of s, in jobs order, into its summary: a row
// per variant (× AP spacing) and, for replay, the off-line estimates.
func summarize(s *Spec, out []*Result) (*Summary, error) {
	jobs := s.jobs()
	seeds := results.Seeds(s.Seed, s.Seeds)
	sum := &Summary{Header: results.NewHeader(s.Name, "sim", seeds), Figure: s.Figure, DurationS: s.DurationS}
	var logs [][]qcmab.LogEntry
	if s.Replay {
		for i, j := range jobs {
			if j.logger {
				logs = append(logs, out[i].Log)
				sum.UniformMean += stats.Mean(out[i].Reward) / float64(len(seeds))
			}
		}
	}
	for k := 0; k < len(jobs); {
		j := jobs[k]
		if j.logger {
			break
		}
		row := summarizeRow(j.v, j.spacing, out[k:k+len(seeds)])
		if s.Replay && j.v.Controller == QCMAB {
			if err := replay(s, j.v, logs, &row); err != nil {
				return nil, err
			}
		}
		sum.Rows = append(sum.Rows, row)
		k += len(seeds)
	}
	peakRatios(sum.Rows)
	return sum, nil
}

// peakRatios sets each row's GoodputPeakRatio against every other row of
// the same AP spacing, from their seed-averaged goodput curves.
func peakRatios(rows []Row) {
	for i := range rows {
		for j := range rows {
			a, b := &rows[i], &rows[j]
			if i == j || a.SpacingM != b.SpacingM {
				continue
			}
			peak := 0.0
			for t := range min(len(a.goodput), len(b.goodput)) {
				if a.goodput[t] > 0 && b.goodput[t] > 0 {
					peak = max(peak, a.goodput[t]/b.goodput[t])
				}
			}
			if a.GoodputPeakRatio == nil {
				a.GoodputPeakRatio = map[string]float64{}
			}
			a.GoodputPeakRatio[b.Label] = peak
		}
	}
}

// replay scores variant v off-line on each seed's uniform log and
// averages (qcmab.Replay: Li et al. 2011).
func replay(s *Spec, v Variant, logs [][]qcmab.LogEntry, row *Row) error {
	for i, log := range logs {
		if len(log) == 0 {
			continue
		}
		a, err := qcmab.New(v.agentConfig(s.scenario(0).networks()))
		if err != nil {
			return err
		}
		est, err := qcmab.Replay(a, log, rand.New(rand.NewPCG(uint64(i)+1, 0x5eed)))
		if err != nil {
			return err
		}
		row.ReplayReward += est.Mean / float64(len(logs))
		row.ReplayMatched += float64(est.Matched) / float64(len(logs))
	}
	return nil
}

func summarizeRow(v Variant, spacing float64, rs []*Result) Row {
	row := Row{Label: v.Label, Controller: v.Controller, SpacingM: spacing, Runs: len(rs)}
	var irs []float64
	var q, p, gp, rw, ho, fecF float64
	bins := 0
	for _, r := range rs {
		irs = append(irs, 100*r.IR())
		q += stats.Mean(r.Quality)
		on := 0
		for _, d := range r.BLDelayMs {
			if d <= Deadline.Seconds()*1e3 {
				on++
			}
		}
		p += 100 * float64(on) / float64(max(len(r.BLDelayMs), 1))
		gp += stats.Mean(r.GoodputMbps[:len(r.GoodputMbps)-1])
		rw += stats.Mean(r.Reward)
		ho += float64(r.Handovers)
		fecF += 100 * float64(r.FECFrames) / float64(max(r.Frames, 1))
		row.UntriedPct += 100 * float64(r.Untried) / float64(max(r.Decisions, 1)) / float64(len(rs))
		bins = max(bins, r.Packets[len(r.Packets)-1]/rewardBinPackets+1)
	}
	n := float64(len(rs))
	row.IRPct = stats.Mean(irs)
	if len(irs) > 1 { // one seed has no interval, and summary.json cannot hold NaN: 0
		row.IRCI95Pct = stats.CI95(irs)
	}
	row.MeanQuality, row.PBL150Pct, row.GoodputMbps = q/n, p/n, gp/n
	row.MeanReward, row.Handovers, row.FECPct = rw/n, ho/n, fecF/n
	// Curves, averaged over seeds.
	row.goodput = make([]float64, len(rs[0].GoodputMbps)-1)
	for _, r := range rs {
		for i := range row.goodput {
			row.goodput[i] += r.GoodputMbps[i] / n
		}
	}
	sum, cnt := make([]float64, bins), make([]float64, bins)
	for _, r := range rs {
		for f, pk := range r.Packets {
			sum[pk/rewardBinPackets] += r.Reward[f]
			cnt[pk/rewardBinPackets]++
		}
	}
	for b := range bins {
		if cnt[b] > 0 {
			row.reward500 = append(row.reward500, sum[b]/cnt[b])
		}
	}
	row.ConvergePkts = converge(row.reward500) * rewardBinPackets
	if q := len(row.reward500) / 4; q > 0 {
		row.RewardGain = stats.Mean(row.reward500[len(row.reward500)-q:]) - stats.Mean(row.reward500[:q])
	}
	var all []float64
	for _, r := range rs {
		all = append(all, r.BLDelayMs...)
	}
	slices.Sort(all)
	for ms := 0.0; ms <= cdfMaxMs; ms += cdfStepMs {
		k, _ := slices.BinarySearch(all, math.Nextafter(ms, math.Inf(1)))
		row.cdf = append(row.cdf, float64(k)/float64(max(len(all), 1)))
	}
	return row
}

// converge is the first bin from which every bin stays within convergeTol
// of the curve's final level; −1 when the curve is too short to say.
func converge(c []float64) float64 {
	if len(c) < 4 {
		return -1 // too short to say (summary.json cannot hold NaN)
	}
	final := stats.Mean(c[len(c)-len(c)/4:])
	b := len(c)
	for b > 0 && math.Abs(c[b-1]-final) <= convergeTol {
		b--
	}
	return float64(b)
}

// Tables is what --md prints: the comparison. The thesis's numbers beside
// these are claims/thesis-ch4.yaml's (hetquic reproduce).
func (s *Summary) Tables() []results.Table {
	t := results.Table{
		Caption: fmt.Sprintf("**%s** (thesis Fig. %s): mean over %d seeds, %g s each.", s.Experiment, s.Figure, len(s.Seeds), s.DurationS),
		Header:  []string{"variant", "IR %", "±CI95", "mean quality", "P(BL ≤ 150 ms) %", "goodput Mbit/s", "mean reward", "converged by (packets)", "AP switches", "FEC frames %"},
	}
	sweep := len(s.Rows) > 0 && s.Rows[0].SpacingM > 0
	if sweep {
		t.Header = append([]string{"AP spacing m"}, t.Header...)
	}
	replay := s.UniformMean > 0
	if replay {
		t.Header = append(t.Header, "replay estimate", "replay matches")
	}
	for _, r := range s.Rows {
		row := []string{r.Label, f2(r.IRPct), f2(r.IRCI95Pct), f2(r.MeanQuality), f2(r.PBL150Pct), f2(r.GoodputMbps),
			f3(r.MeanReward), packets(r.ConvergePkts), f0(r.Handovers), f0(r.FECPct)}
		if sweep {
			row = append([]string{f0(r.SpacingM)}, row...)
		}
		if replay {
			if r.Controller == QCMAB {
				row = append(row, f3(r.ReplayReward), f0(r.ReplayMatched))
			} else {
				row = append(row, "–", "–")
			}
		}
		t.Rows = append(t.Rows, row)
	}
	if replay {
		t.Note = fmt.Sprintf("Replay: each QC-MAB variant scored off-line on the log of a uniformly random arm choice (mean reward %.3f), without rerunning the simulator (Li et al. 2011); compare with its on-line mean reward.", s.UniformMean)
	}
	return []results.Table{t}
}

func packets(v float64) string {
	if v < 0 {
		return "–"
	}
	return f0(v)
}

func f0(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) }
func f2(v float64) string { return strconv.FormatFloat(v, 'f', 2, 64) }
func f3(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

// WriteAll writes summary.json, the per-variant CSV, the figures (PNG and
// SVG) and report.md into dir, and returns the files it wrote.
func WriteAll(dir string, s *Spec, sum *Summary) ([]string, error) {
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	if err := d.WriteSummary(sum); err != nil {
		return nil, err
	}
	if err := writeAll(d, s, sum); err != nil {
		return nil, err
	}
	return d.Files(), nil
}

func writeAll(d *results.Dir, s *Spec, sum *Summary) error {
	rows := sum.Rows
	if err := d.WriteCSV("rows.csv", []string{"label", "spacing_m", "ir_pct", "mean_quality", "p_bl_150_pct", "goodput_mbps", "mean_reward", "converge_packets"}, len(rows), func(i int) []string {
		r := rows[i]
		return []string{r.Label, f0(r.SpacingM), f3(r.IRPct), f3(r.MeanQuality), f3(r.PBL150Pct), f3(r.GoodputMbps), f3(r.MeanReward), f0(r.ConvergePkts)}
	}); err != nil {
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", s.Name, strings.TrimSpace(s.Description))
	if err := results.WriteTables(&b, sum.Tables()); err != nil {
		return err
	}
	b.WriteString("\n")
	figs := []struct {
		name, title, x, y, caption string
		xAt                        func(i int) float64
		ys                         func(r Row) []float64
	}{
		{"bl_delay_cdf", "BL packet end-to-end delay", "delay (ms)", "CDF", "Fig. (c): CDF of the BL packets' delay from frame release to arrival or FEC recovery; never-delivered packets keep the CDF below 1.",
			func(i int) float64 { return float64(i) * cdfStepMs }, func(r Row) []float64 { return r.cdf }},
		{"goodput", "Aggregate goodput over time", "time (s)", "Mbit/s", "Fig. (d): decoded, on-time video per second, mean over seeds.",
			func(i int) float64 { return float64(i) }, func(r Row) []float64 { return r.goodput }},
		{"reward_500", "Mean reward per 500 packets", "packets", "mean reward (Eq. 4.19)", "Figs. 4.6/4.7: the mean per-frame reward over every 500 source packets sent, mean over seeds.",
			func(i int) float64 { return float64((i + 1) * rewardBinPackets) }, func(r Row) []float64 { return r.reward500 }},
	}
	if rows[0].SpacingM == 0 {
		for _, f := range figs {
			p := figure.NewPlot(f.title, f.x, f.y)
			var entries []figure.Entry
			for i, r := range rows {
				ys := f.ys(r)
				xys := make(plotter.XYs, len(ys))
				for k, y := range ys {
					xys[k].X, xys[k].Y = f.xAt(k), y
				}
				e, err := figure.AddLine(p, i, r.Label, xys)
				if err != nil {
					return err
				}
				entries = append(entries, e)
			}
			png, _ := d.Path(f.name + ".png")
			if err := figure.SaveWithLegend(png, p, entries, figSize); err != nil {
				return err
			}
			d.AddFigure(png)
			b.WriteString(results.FigureMarkdown(png, f.caption))
		}
		for _, bar := range []struct {
			name, y string
			v       func(Row) float64
		}{{"ir", "interruption ratio (%)", func(r Row) float64 { return r.IRPct }}, {"quality", "mean quality (representation index)", func(r Row) float64 { return r.MeanQuality }}} {
			var labels []string
			var vals []float64
			for _, r := range rows {
				labels, vals = append(labels, r.Label), append(vals, bar.v(r))
			}
			png, _ := d.Path(bar.name + ".png")
			if err := figure.Bars(png, s.Name, bar.y, labels, vals); err != nil {
				return err
			}
			d.AddFigure(png)
			b.WriteString(results.FigureMarkdown(png, "Figs. (a)/(b): "+bar.y+", mean over seeds."))
		}
	} else {
		p := figure.NewPlot("IR under AP spacing", "AP spacing (m)", "interruption ratio (%)")
		var entries []figure.Entry
		for i, v := range s.Variants {
			var xys plotter.XYs
			for _, r := range rows {
				if r.Label == v.Label {
					xys = append(xys, plotter.XY{X: r.SpacingM, Y: r.IRPct})
				}
			}
			e, err := figure.AddLine(p, i, v.Label, xys)
			if err != nil {
				return err
			}
			entries = append(entries, e)
		}
		png, _ := d.Path("ir_vs_spacing.png")
		if err := figure.SaveWithLegend(png, p, entries, figSize); err != nil {
			return err
		}
		d.AddFigure(png)
		b.WriteString(results.FigureMarkdown(png, "Fig. 4.8: interruption ratio against the distance between neighbouring APs, mean over seeds."))
	}
	return d.WriteReport(b.String())
}
