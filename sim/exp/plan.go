package exp

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"

	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/internal/sweep"
)

// Plan is a simulator experiment's points × runs (variant × path count ×
// seed, in Spec.jobs order). A file without a sweep: block has one point
// with no assignment. Run numbers are the same in every process, which is
// what lets shards run apart and merge (internal/sweep).
type Plan struct {
	Name   string
	Swept  bool
	Design string
	Points []sweep.Point
	Specs  []*Spec // Specs[i] is the experiment at Points[i]
	Hash   string  // of every point's inputs: a merge refuses other plans' shards
	layout sweep.Layout
}

// LoadPlan reads a simulator experiment as LoadFS does and expands its
// sweep over its own and its scenario's fields.
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	base, err := LoadFS(fsys, name)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Name: base.Name}
	h := sweep.NewHash()
	if base.Sweep == nil {
		plan.Points, plan.Specs = []sweep.Point{{}}, []*Spec{base}
		if err := h.AddFiles(fsys, base.inputs(name)...); err != nil {
			return nil, err
		}
	} else {
		plan.Swept, plan.Design = true, cmp.Or(base.Sweep.Design, sweep.Grid)
		if plan.Points, err = base.Sweep.Expand(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		scen := ""
		if base.Scenario != "" {
			scen = path.Join(path.Dir(name), base.Scenario)
		}
		for _, p := range plan.Points {
			over, err := sweep.PointFiles(fsys, name, scen, p)
			if err != nil {
				return nil, fmt.Errorf("%s: point %s: %w", name, p.Label(), err)
			}
			s, err := LoadFS(over, name)
			if err != nil {
				return nil, fmt.Errorf("sweep point %s: %w", p.Label(), err)
			}
			if !slices.EqualFunc(s.Variants, base.Variants, func(a, b Variant) bool { return a.Label == b.Label }) || !slices.Equal(s.PathCounts, base.PathCounts) {
				return nil, fmt.Errorf("%s: point %s: a sweep may change variants' settings, not which variants or path counts run", name, p.Label())
			}
			if err := h.AddFiles(over, s.inputs(name)...); err != nil {
				return nil, err
			}
			plan.Specs = append(plan.Specs, s)
		}
	}
	plan.Hash = h.String()
	plan.relayout()
	return plan, nil
}

// inputs are the files the spec was read from.
func (s *Spec) inputs(name string) []string {
	files := []string{name}
	if s.Scenario != "" {
		files = append(files, path.Join(path.Dir(name), s.Scenario))
	}
	if s.Topology != "" && !strings.HasPrefix(s.Topology, "builtin:") {
		files = append(files, path.Join(path.Dir(name), s.Topology))
	}
	return files
}

func (p *Plan) relayout() {
	runs := make([]int, len(p.Specs))
	for i, s := range p.Specs {
		runs[i] = len(s.jobs())
	}
	p.layout = sweep.NewLayout(runs)
}

// SetSeeds runs every point on n seeds (exp run --seeds); the hash changes
// with it, so shards run with different seeds are never merged.
func (p *Plan) SetSeeds(n int) {
	if n == p.Specs[0].Seeds {
		return // the file's own: the same runs, the same hash
	}
	for _, s := range p.Specs {
		s.Seeds = n
	}
	p.relayout()
	h := sweep.NewHash()
	h.AddString(p.Hash + " seeds=" + strconv.Itoa(n))
	p.Hash = h.String()
}

// Runs is the number of runs of the plan.
func (p *Plan) Runs() int { return p.layout.Runs() }

// RunShard carries out the runs of p that shard owns on the one runner.
// A run's result depends only on its point, variant, path count and seed,
// so it is the same in any shard and with any number of workers.
func RunShard(ctx context.Context, p *Plan, shard sweep.Shard, workers int, progress io.Writer) (map[int]*RunResult, error) {
	var owned []int
	for k := range p.Runs() {
		if shard.Owns(k) {
			owned = append(owned, k)
		}
	}
	out := make([]*RunResult, len(owned))
	opt := runner.Options{Workers: workers, Progress: progress, Name: p.Name, Describe: func(j int) string {
		r := out[j]
		return fmt.Sprintf("%s%s seed %d: goodput %.2f Mbit/s, end %.2f s, %d events in %.2f s wall",
			r.Label, pathsTag(r.Paths), r.Seed, r.GoodputMbps, r.EndS, r.Events, r.WallS)
	}}
	err := runner.Run(ctx, len(owned), opt, func(ctx context.Context, j int) error {
		pi, r := p.layout.Locate(owned[j])
		s := p.Specs[pi]
		jb := s.jobs()[r]
		run, err := s.RunOne(ctx, jb.variant, jb.paths, jb.seed)
		if err != nil {
			prefix := ""
			if p.Swept {
				prefix = "point " + p.Points[pi].Label() + ": "
			}
			return fmt.Errorf("%s%s seed %d: %w", prefix, s.Variants[jb.variant].Label, jb.seed, err)
		}
		out[j] = run
		return nil
	})
	if err != nil {
		return nil, err
	}
	runs := make(map[int]*RunResult, len(owned))
	for j, k := range owned {
		runs[k] = out[j]
	}
	return runs, nil
}

// Assemble turns every run of the plan into one Result per point.
func (p *Plan) Assemble(runs map[int]*RunResult) ([]*Result, error) {
	out := make([]*Result, len(p.Specs))
	for pi, s := range p.Specs {
		n := len(s.jobs())
		res := &Result{Spec: s, Runs: make([]*RunResult, n)}
		for r := range n {
			k := p.layout.First(pi) + r
			if res.Runs[r] = runs[k]; runs[k] == nil {
				return nil, fmt.Errorf("%s: run %d of %d is missing", p.Name, k, p.Runs())
			}
		}
		out[pi] = res
	}
	return out, nil
}

// WritePartial writes a shard's runs into dir. Wall time is dropped: it is
// the one thing a run measures that differs between two runs of it, and a
// shard run twice must compare equal.
func WritePartial(dir, spec string, p *Plan, shard sweep.Shard, runs map[int]*RunResult) error {
	for _, r := range runs {
		r.WallS = 0
	}
	return sweep.WritePartial(dir, sweep.Header{
		Experiment: p.Name, Spec: spec, Seeds: p.Specs[0].Seeds,
		PlanHash: p.Hash, Shard: shard.String(), TotalRuns: p.Runs(),
	}, runs)
}

// ReadPartials reads the shards in dirs, written for p (sweep.ReadPartials).
func ReadPartials(p *Plan, dirs []string) (map[int]*RunResult, error) {
	return sweep.ReadPartials[RunResult](dirs, p.Name, p.Hash, p.Runs())
}

// SweepSummary is summary.json of a swept simulator experiment.
type SweepSummary struct {
	results.Header
	Design string         `json:"design"`
	Params []string       `json:"params"`
	Points []PointSummary `json:"points"`
}

// PointSummary is one point: its assignments and each variant's summary.
type PointSummary struct {
	ID        string         `json:"id"`
	Assigns   []sweep.Assign `json:"assigns"`
	Summaries []Summary      `json:"summaries"`
}

// SummarizePlan summarizes a swept plan point by point.
func SummarizePlan(p *Plan, res []*Result) *SweepSummary {
	first := p.Specs[0]
	sum := &SweepSummary{Header: results.NewHeader(p.Name, "sim", results.Seeds(first.Seed, first.Seeds)), Design: p.Design}
	for _, a := range p.Points[0].Assigns {
		sum.Params = append(sum.Params, a.Key)
	}
	for i, r := range res {
		sum.Points = append(sum.Points, PointSummary{ID: p.Points[i].ID, Assigns: p.Points[i].Assigns, Summaries: r.Summaries()})
	}
	return sum
}

// WritePlan writes a plan's results into dir: WriteAll's files for an
// experiment without a sweep; for a sweep, summary.json, sweep.csv, a figure
// and report.md over every point, and each point's summary in
// points/ID/summary.json.
func WritePlan(dir string, p *Plan, res []*Result) ([]string, error) {
	if !p.Swept {
		return WriteAll(dir, res[0])
	}
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	sum := SummarizePlan(p, res)
	for i, r := range res {
		pd, err := results.Create(filepath.Join(dir, "points", p.Points[i].ID))
		if err != nil {
			return nil, err
		}
		if err := pd.WriteSummary(r.SummaryFile()); err != nil {
			return nil, err
		}
	}
	if err := d.WriteSummary(sum); err != nil {
		return nil, err
	}
	header := append([]string{"point"}, sum.Params...)
	header = append(header, "variant", "paths", "goodput_mbps", "fct_mean_s", "delivery_delay_p90_ms", "loss_rate", "unfinished_flows")
	c, err := d.CreateCSV("sweep.csv", header...)
	if err != nil {
		return nil, err
	}
	for _, pt := range sum.Points {
		for _, s := range pt.Summaries {
			row := []string{pt.ID}
			for _, a := range pt.Assigns {
				row = append(row, a.Value)
			}
			row = append(row, s.Label, strconv.Itoa(s.Paths), num(s.GoodputMbps), num(s.FCTMeanS), num(s.DelayP90Ms), num(s.LossRate), strconv.Itoa(s.Unfinished))
			if err := c.Row(row...); err != nil {
				c.Close()
				return nil, err
			}
		}
	}
	if err := c.Close(); err != nil {
		return nil, err
	}
	fig := filepath.Join(dir, "sweep.png")
	if err := sweepFigure(fig, sum); err != nil {
		return nil, fmt.Errorf("write figures: %w", err)
	}
	d.AddFigure(fig)
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: a %s sweep over %d points\n\n", p.Name, sum.Design, len(sum.Points))
	if s := strings.TrimSpace(p.Specs[0].Description); s != "" {
		fmt.Fprintf(&b, "%s\n\n", s)
	}
	fmt.Fprintf(&b, "Swept: %s; %d seed(s) a point. points/ID/summary.json holds each point's full summary.\n\n", strings.Join(sum.Params, ", "), p.Specs[0].Seeds)
	b.WriteString(results.FigureMarkdown("sweep.png", "goodput of each variant across the points"))
	b.WriteString("\n")
	b.WriteString(SweepTable(sum).Markdown())
	if err := d.WriteReport(b.String()); err != nil {
		return nil, err
	}
	return d.Files(), nil
}

func num(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// SweepTable has a row per point and a column per variant: goodput and
// mean flow completion time.
func SweepTable(sum *SweepSummary) results.Table {
	t := results.Table{Caption: "**goodput (Mbit/s) / mean FCT (s)** per point and variant", Header: append([]string{"point"}, sum.Params...)}
	for _, s := range sum.Points[0].Summaries {
		t.Header = append(t.Header, s.Label+pathsTag(s.Paths))
	}
	for _, pt := range sum.Points {
		row := []string{pt.ID}
		for _, a := range pt.Assigns {
			row = append(row, a.Value)
		}
		for _, s := range pt.Summaries {
			row = append(row, fmt.Sprintf("%.2f / %.2f", s.GoodputMbps, s.FCTMeanS))
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

func sweepFigure(name string, sum *SweepSummary) error {
	xl := "point (see report.md)"
	xs := make([]float64, len(sum.Points))
	numeric := len(sum.Params) == 1
	for i, pt := range sum.Points {
		xs[i] = float64(i)
		if numeric {
			v, err := strconv.ParseFloat(pt.Assigns[0].Value, 64)
			if err != nil {
				numeric = false
				continue
			}
			xs[i] = v
		}
	}
	if numeric {
		xl = sum.Params[0]
	} else {
		for i := range xs {
			xs[i] = float64(i)
		}
	}
	p := figure.NewPlot(sum.Experiment+": sweep", xl, "goodput (Mbit/s)")
	var entries []figure.Entry
	for vi, s := range sum.Points[0].Summaries {
		xys := make(plotter.XYs, len(sum.Points))
		for i, pt := range sum.Points {
			xys[i].X, xys[i].Y = xs[i], pt.Summaries[vi].GoodputMbps
		}
		e, err := figure.AddLine(p, vi, s.Label+pathsTag(s.Paths), xys)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	return figure.SaveWithLegend(name, p, entries, figure.Size{W: 9 * vg.Inch, H: 5 * vg.Inch, Legend: 2 * vg.Inch})
}
