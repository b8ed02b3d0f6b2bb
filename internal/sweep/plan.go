package sweep

import (
	"context"
	"fmt"
	"io/fs"

	"github.com/hetquic/hetquic/internal/workpool"
)

// Plan is an experiment file of one mode expanded point by point (a Set of
// specs S) under the experiment's name, whose runs are *T. It is the one
// load, shard, collect, write and read of every sharded mode; a mode adds
// only how one run runs and how the runs become its results.
type Plan[S, T any] struct {
	Name string
	*Set[S]
}

// LoadPlan reads experiment file name of fsys with l and expands its sweep
// (LoadSet); specName is the experiment's name in a spec.
func LoadPlan[S, T any](fsys fs.FS, name string, l Loader[S], specName func(S) string) (*Plan[S, T], error) {
	set, err := LoadSet(fsys, name, l)
	if err != nil {
		return nil, err
	}
	return &Plan[S, T]{Name: specName(set.Specs[0]), Set: set}, nil
}

// RunShard carries out the runs that shard owns (RunOwned), named after the
// plan in progress lines unless opt names them. run(ctx, point, r) is run r
// of point, a function of those alone, so that its result is the same in
// any shard and with any number of workers; an error is prefixed with the
// point (PointPrefix) by the caller's run.
func (p *Plan[S, T]) RunShard(ctx context.Context, shard Shard, opt workpool.Options, describe func(*T) string,
	run func(ctx context.Context, point, r int) (*T, error)) (map[int]*T, error) {
	if opt.Name == "" {
		opt.Name = p.Name
	}
	return RunOwned(ctx, p.Set, shard, opt, describe, run)
}

// Point is point i's runs, in run order, out of every run of the plan; a
// run that runs lacks is an error.
func (p *Plan[S, T]) Point(runs map[int]*T, i int) ([]*T, error) {
	out := make([]*T, p.loader.Runs(p.Specs[i]))
	for r := range out {
		k := p.First(i) + r
		if out[r] = runs[k]; out[r] == nil {
			return nil, fmt.Errorf("%s: run %d of %d is missing", p.Name, k, p.Runs())
		}
	}
	return out, nil
}

// WritePartial writes a shard's runs into dir for a merge; spec is the
// experiment as named on the command line, so that the merge finds it
// again. The header's seeds are the points' (0 for a mode whose Loader has
// no SetSeeds: it has no seeds to override).
func (p *Plan[S, T]) WritePartial(dir, spec string, shard Shard, runs map[int]*T) error {
	seeds := 0
	if p.loader.SetSeeds != nil {
		seeds = p.loader.Seeds(p.Specs[0])
	}
	return WritePartial(dir, Header{
		Experiment: p.Name, Spec: spec, Seeds: seeds,
		PlanHash: p.Hash, Shard: shard.String(), TotalRuns: p.Runs(),
	}, runs)
}

// ReadPartials reads the shards in dirs, written for p, and returns every
// run once (the package's ReadPartials).
func (p *Plan[S, T]) ReadPartials(dirs []string) (map[int]*T, error) {
	return ReadPartials[T](dirs, p.Name, p.Hash, p.Runs())
}

// PointsNote is what a mode's one-line description adds for a sweep: " at
// N points (M runs)"; "" without one.
func (p *Plan[S, T]) PointsNote() string {
	if !p.Swept {
		return ""
	}
	return fmt.Sprintf(" at %d points (%d runs)", len(p.Points), p.Runs())
}
