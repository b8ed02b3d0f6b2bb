package report

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/ride/env"
)

// Mode is mode ride (internal/mode): RIDE against RR, minRTT and Peekaboo.
var Mode = mode.Mode{
	Name: "ride",
	Load: func(fsys fs.FS, name string) (mode.Experiment, error) {
		p, err := LoadPlan(fsys, name)
		if err != nil {
			return nil, err
		}
		return modeExp{p}, nil
	},
}

// modeExp is a loaded ride evaluation.
type modeExp struct{ p *Plan }

func (e modeExp) Describe() string {
	s := e.p.Specs[0]
	return fmt.Sprintf("RIDE (%s) vs RR, minRTT, Peekaboo on the test video, %d frames (0: all), seed %d", s.Ride.Policy, s.Ride.Frames, s.Seed)
}

func (e modeExp) SetSeeds(int) error {
	return fmt.Errorf("--seeds: mode ride has no seeds to override (its one seed, which a sweep: block can vary)")
}

func (e modeExp) Runs() int { return e.p.Runs() }

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

// assemble gathers every run into the outcome.
func (e modeExp) assemble(runs map[int]*env.Metrics) (*mode.Outcome, error) {
	p := e.p
	ms, err := p.Assemble(runs)
	if err != nil {
		return nil, err
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(dir string) ([]string, error) { return WritePlan(dir, p, ms) }}
	if p.Swept {
		sum := SummarizePlan(p, ms)
		o.Tables, o.Summary = []results.Table{SweepOutcome(p, sum).Table()}, sum
	} else {
		sum := p.Summary(0, ms[0])
		o.Tables, o.Summary = Tables(ms[0]), &sum
	}
	o.Text = mode.TablesText(o.Tables)
	return o, nil
}
