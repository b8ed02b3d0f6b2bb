// Package ridemode is mode ride (internal/mode): ride-eval experiment
// files (RIDE against RR, minRTT and Peekaboo) run through hetquic exp run
// and its shards. It is apart from ride/report so that the ride command,
// which evaluates a policy file with its own flags, uses the report and not
// the mode seam: only cmd/hetquic/modes.go names a mode package
// (internal/archtest).
package ridemode

import (
	"context"
	"fmt"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/ride/env"
	"github.com/hetquic/hetquic/ride/report"
)

// Mode is mode ride (internal/mode): RIDE against RR, minRTT and Peekaboo.
var Mode = mode.Mode{
	Name: "ride",
	Load: mode.PlanLoad(report.LoadPlan, newModeExp),
}

// modeExp is a loaded ride evaluation.
type modeExp struct {
	mode.Shards[*env.Metrics]
	p *report.Plan
}

func newModeExp(p *report.Plan) mode.Experiment {
	e := modeExp{p: p}
	e.Shards = mode.PlanShards(p, func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]*env.Metrics, error) {
		return report.RunShard(ctx, p, shard, opt)
	}, e.assemble)
	return e
}

func (e modeExp) Describe() string {
	s := e.p.Specs[0]
	return fmt.Sprintf("RIDE (%s) vs RR, minRTT, Peekaboo on the test video, %d frames (0: all), seed %d", s.Ride.Policy, s.Ride.Frames, s.Seed)
}

func (e modeExp) SetSeeds(int) error {
	return fmt.Errorf("--seeds: mode ride has no seeds to override (its one seed, which a sweep: block can vary)")
}

// assemble gathers every run into the outcome.
func (e modeExp) assemble(_ context.Context, runs map[int]*env.Metrics, _ int) (*mode.Outcome, error) {
	p := e.p
	ms, err := report.Assemble(p, runs)
	if err != nil {
		return nil, err
	}
	o := &mode.Outcome{Runs: p.Runs(), Write: func(_ context.Context, dir string) ([]string, error) { return report.WritePlan(dir, p, ms) }}
	if p.Swept {
		sum := report.SummarizePlan(p, ms)
		o.Tables, o.Summary = []results.Table{report.SweepOutcome(p, sum).Table()}, sum
	} else {
		sum := report.PointSummaryFile(p, 0, ms[0])
		o.Tables, o.Summary = report.Tables(ms[0]), &sum
	}
	o.Text = mode.TablesText(o.Tables)
	return o, nil
}
