package runner

import (
	"context"
	"fmt"
	"io"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Mode is mode sim (internal/mode). A file without mode: is the
// simulator's when it has one of Infer's fields: its files predate the
// mode field.
var Mode = mode.Mode{
	Name:  "sim",
	Infer: []string{"variants", "topology", "leo", "mobility", "app", "flows", "path_counts", "transport"},
	Load:  mode.PlanLoad(LoadPlan, newModeExp),
}

// modeExp is a loaded simulator experiment.
type modeExp struct {
	mode.Shards[*RunResult]
	p *Plan
}

func newModeExp(p *Plan) mode.Experiment {
	e := modeExp{p: p}
	e.Shards = mode.PlanShards(p, func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]*RunResult, error) {
		return RunShard(ctx, p, shard, opt.Workers, opt.Progress)
	}, e.assemble)
	e.Shards.Save = writePartial(p)
	return e
}

func (e modeExp) Describe() string {
	return fmt.Sprintf("%d variants × %d seeds%s", len(e.p.Specs[0].Variants), e.p.Specs[0].Seeds, e.p.PointsNote())
}

func (e modeExp) SetSeeds(n int) error { e.p.SetSeeds(n); return nil }

// assemble turns every run into the outcome.
func (e modeExp) assemble(_ context.Context, runs map[int]*RunResult, _ int) (*mode.Outcome, error) {
	p := e.p
	res, err := Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(_ context.Context, dir string) ([]string, error) { return WritePlan(dir, p, res) }}
	if p.Swept {
		sum := SummarizePlan(p, res)
		o.Tables, o.Summary = []results.Table{SweepOutcome(p, sum).Table()}, sum
		o.Text = mode.TablesText(o.Tables)
		return o, nil
	}
	sf := res[0].SummaryFile()
	o.Tables, o.Summary = Tables(p.Specs[0], sf.Summaries), sf
	o.Text = func(w io.Writer) error { return writeText(w, sf.Summaries) }
	return o, nil
}

// writeText prints summaries as the terminal's fixed-width table; every
// column names its unit, and a line below says what the columns measure.
func writeText(w io.Writer, sums []Summary) error {
	fmt.Fprintf(w, "%-14s %5s %12s %10s %12s %12s %12s %7s %6s %8s\n", "variant", "paths", "goodput_Mbps", "fct_p50_s", "delay_p90_ms", "delay_p99_ms", "reorder_ms", "loss_%", "unfin", "wall_s")
	for _, s := range sums {
		paths := "all"
		if s.Paths > 0 {
			paths = fmt.Sprint(s.Paths)
		}
		fmt.Fprintf(w, "%-14s %5s %12.2f %10.2f %12.1f %12.1f %12.2f %7.3f %6d %8.2f\n", s.Label, paths, s.GoodputMbps, s.FCTP50S,
			s.DelayP90Ms, s.DelayP99Ms, s.ReorderMeanMs, 100*s.LossRate, s.Unfinished, s.WallPerRunS)
	}
	_, err := fmt.Fprintln(w, "goodput: mean over seeds; fct: flow completion time; delay: packet delivery delay; reorder: mean reordering delay; unfin: flows unfinished; wall_s: wall time per run")
	return err
}
