package svc

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/internal/sweep"
)

// Mode is mode video (internal/mode): thesis ch. 4's SVC video with FEC
// over the simulator, QC-MAB and its baselines.
var Mode = mode.Mode{
	Name: "video",
	Load: func(fsys fs.FS, name string) (mode.Experiment, error) {
		p, err := LoadPlan(fsys, name)
		if err != nil {
			return nil, err
		}
		return modeExp{p}, nil
	},
}

// modeExp is a loaded video experiment.
type modeExp struct{ p *Plan }

func (e modeExp) Describe() string {
	s, points := e.p.Specs[0], ""
	if e.p.Swept {
		points = fmt.Sprintf(" at %d points (%d runs)", len(e.p.Points), e.p.Runs())
	}
	return fmt.Sprintf("%d variants × %d seeds, %g s each%s", len(s.Variants), s.Seeds, s.DurationS, points)
}

func (e modeExp) SetSeeds(n int) error { e.p.SetSeeds(n); return nil }
func (e modeExp) Runs() int            { return e.p.Runs() }

func (e modeExp) Run(ctx context.Context, opt runner.Options) (*mode.Outcome, error) {
	runs, err := RunShard(ctx, e.p, sweep.All, opt)
	if err != nil {
		return nil, err
	}
	return e.assemble(runs)
}

func (e modeExp) RunShard(ctx context.Context, shard sweep.Shard, opt runner.Options, dir, spec string) (int, error) {
	runs, err := RunShard(ctx, e.p, shard, opt)
	if err != nil {
		return 0, err
	}
	return len(runs), WritePartial(dir, spec, e.p, shard, runs)
}

func (e modeExp) Merge(_ context.Context, dirs []string, _ int) (*mode.Outcome, error) {
	runs, err := ReadPartials(e.p, dirs)
	if err != nil {
		return nil, mode.InputError{Err: err}
	}
	return e.assemble(runs)
}

// assemble summarizes every run into the outcome.
func (e modeExp) assemble(runs map[int]*Result) (*mode.Outcome, error) {
	p := e.p
	sums, err := p.Assemble(runs)
	if err != nil {
		return nil, err
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(dir string) ([]string, error) { return WritePlan(dir, p, sums) }}
	if p.Swept {
		sum := SummarizePlan(p, sums)
		o.Tables, o.Summary = []results.Table{SweepOutcome(p, sum).Table()}, sum
	} else {
		o.Tables, o.Summary = sums[0].Tables(), sums[0]
	}
	o.Text = mode.TablesText(o.Tables)
	return o, nil
}
