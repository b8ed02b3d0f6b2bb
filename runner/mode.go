package runner

import (
	"context"
	"fmt"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Offline and Trace are this package's modes (internal/mode); mode real is
// runner/realenv's, which links quic-go.
var (
	Offline = NewMode(ModeOffline, LocalEnv, nil)
	Trace   = NewMode(ModeTrace, LocalEnv, nil)
)

// NewMode is mode name of the experiments whose runs run on the
// environments newEnv makes; finish, when not nil, completes each point's
// result before it is summarized (mode real: its offline twin).
func NewMode(name string, newEnv EnvFactory, finish func(ctx context.Context, r *Result, workers int) error) mode.Mode {
	return mode.Mode{Name: name, Default: name == ModeOffline, Load: mode.PlanLoad(LoadPlan, func(p *Plan) mode.Experiment {
		return newModeExp(p, newEnv, finish)
	})}
}

// modeExp is a loaded experiment of modes offline, trace and real.
type modeExp struct {
	mode.Shards[*Run]
	plan   *Plan
	finish func(ctx context.Context, r *Result, workers int) error
}

func newModeExp(p *Plan, newEnv EnvFactory, finish func(ctx context.Context, r *Result, workers int) error) *modeExp {
	e := &modeExp{plan: p, finish: finish}
	e.Shards = mode.PlanShards(p, func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]*Run, error) {
		return ExecuteShard(ctx, p, shard, opt, newEnv)
	}, e.assemble)
	return e
}

func (e *modeExp) Describe() string {
	s := e.plan.Specs[0]
	return fmt.Sprintf("%d paths, %d strategies, %d rounds × %d seeds%s", len(s.PathNames()), len(s.Strategies), s.Rounds, s.Seeds, e.plan.PointsNote())
}

func (e *modeExp) SetSeeds(n int) error { e.plan.SetSeeds(n); return nil }

// assemble turns every run (from one process or merged shards) into the
// outcome.
func (e *modeExp) assemble(ctx context.Context, runs map[int]*Run, workers int) (*mode.Outcome, error) {
	p := e.plan
	res, err := Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	if e.finish != nil {
		for _, r := range res {
			if err := e.finish(ctx, r, workers); err != nil {
				return nil, err
			}
		}
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(ctx context.Context, dir string) ([]string, error) { return WritePlan(ctx, dir, p, res) }}
	if p.Swept {
		sum, err := SummarizePlan(p, res)
		if err != nil {
			return nil, err
		}
		o.Tables, o.Summary = []results.Table{SweepOutcome(p, sum).Table()}, sum
		o.Text = mode.TablesText(o.Tables)
		return o, nil
	}
	sum := Summarize(res[0])
	o.Tables, o.Summary, o.Text = sum.Tables(), sum, sum.WriteTable
	return o, nil
}
