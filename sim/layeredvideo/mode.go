package layeredvideo

import (
	"context"
	"fmt"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Mode is mode video (internal/mode): thesis ch. 4's SVC video with FEC
// over the simulator, QC-MAB and its baselines.
var Mode = mode.Mode{
	Name: "video",
	Load: mode.PlanLoad(LoadPlan, newModeExp),
}

// modeExp is a loaded video experiment.
type modeExp struct {
	mode.Shards[*Result]
	p *Plan
}

func newModeExp(p *Plan) mode.Experiment {
	e := modeExp{p: p}
	e.Shards = mode.PlanShards(p, func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]*Result, error) {
		return RunShard(ctx, p, shard, opt)
	}, e.assemble)
	return e
}

func (e modeExp) Describe() string {
	s := e.p.Specs[0]
	return fmt.Sprintf("%d variants × %d seeds, %g s each%s", len(s.Variants), s.Seeds, s.DurationS, e.p.PointsNote())
}

func (e modeExp) SetSeeds(n int) error { e.p.SetSeeds(n); return nil }

// assemble summarizes every run into the outcome.
func (e modeExp) assemble(_ context.Context, runs map[int]*Result, _ int) (*mode.Outcome, error) {
	p := e.p
	sums, err := Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(_ context.Context, dir string) ([]string, error) { return WritePlan(dir, p, sums) }}
	if p.Swept {
		sum := SummarizePlan(p, sums)
		o.Tables, o.Summary = []results.Table{SweepOutcome(p, sum).Table()}, sum
	} else {
		o.Tables, o.Summary = sums[0].Tables(), sums[0]
	}
	o.Text = mode.TablesText(o.Tables)
	return o, nil
}
