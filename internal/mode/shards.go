package mode

import (
	"context"
	"io/fs"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Shards is the one implementation of Sharded's running, sharding and
// merging for a mode whose runs are numbered by internal/sweep and held as
// R: the mode supplies what differs (how a shard runs, how its partial
// files are written and read, how the runs become the outcome) and embeds
// Shards beside its Describe and SetSeeds.
type Shards[R any] struct {
	// Count is how many runs the experiment has.
	Count func() int
	// Exec runs the runs shard owns in this process.
	Exec func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]R, error)
	// Save writes a shard's runs into dir; spec is the experiment as named
	// on the command line.
	Save func(dir, spec string, shard sweep.Shard, runs map[int]R) error
	// Read reads the runs of the shards in dirs.
	Read func(dirs []string) (map[int]R, error)
	// Assemble turns every run (from one process or merged shards) into
	// the outcome; workers bound what it recomputes.
	Assemble func(ctx context.Context, runs map[int]R, workers int) (*Outcome, error)
}

// Runs is how many runs the experiment has.
func (s Shards[R]) Runs() int { return s.Count() }

// Run runs every run in this process.
func (s Shards[R]) Run(ctx context.Context, opt workpool.Options) (*Outcome, error) {
	runs, err := s.Exec(ctx, sweep.All, opt)
	if err != nil {
		return nil, err
	}
	return s.Assemble(ctx, runs, opt.Workers)
}

// RunShard runs shard's runs and writes them into dir for Merge.
func (s Shards[R]) RunShard(ctx context.Context, shard sweep.Shard, opt workpool.Options, dir, spec string) (int, error) {
	runs, err := s.Exec(ctx, shard, opt)
	if err != nil {
		return 0, err
	}
	return len(runs), s.Save(dir, spec, shard, runs)
}

// Merge reads the shards in dirs and assembles the outcome; a bad or
// missing shard is an InputError.
func (s Shards[R]) Merge(ctx context.Context, dirs []string, workers int) (*Outcome, error) {
	runs, err := s.Read(dirs)
	if err != nil {
		return nil, InputError{Err: err}
	}
	return s.Assemble(ctx, runs, workers)
}

// PlanShards is Shards over a plan (sweep.Plan): its runs counted, written
// and read by the plan, exec running a shard's runs and assemble making the
// outcome, the two things a mode supplies.
func PlanShards[S, T any](p *sweep.Plan[S, T], exec func(ctx context.Context, shard sweep.Shard, opt workpool.Options) (map[int]*T, error),
	assemble func(ctx context.Context, runs map[int]*T, workers int) (*Outcome, error)) Shards[*T] {
	return Shards[*T]{Count: p.Runs, Exec: exec, Save: p.WritePartial, Read: p.ReadPartials, Assemble: assemble}
}

// PlanLoad is a Mode.Load for a mode whose files load as a plan: load reads
// and expands the file, experiment wraps the plan.
func PlanLoad[S, T any](load func(fsys fs.FS, name string) (*sweep.Plan[S, T], error), experiment func(*sweep.Plan[S, T]) Experiment) func(fs.FS, string) (Experiment, error) {
	return func(fsys fs.FS, name string) (Experiment, error) {
		p, err := load(fsys, name)
		if err != nil {
			return nil, err
		}
		return experiment(p), nil
	}
}
