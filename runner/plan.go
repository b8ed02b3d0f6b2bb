package runner

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// Plan is everything an experiment file asks to run: its points × strategies
// × seeds. A file without a sweep: block has one point with no assignment.
// Runs are numbered point by point, strategy by strategy, seed by seed; a
// shard takes runs by that number, so every process agrees on who runs what.
type Plan = sweep.Plan[*Spec, Run]

// planLoader is how internal/sweep reads and counts this mode's specs.
var planLoader = sweep.Loader[*Spec]{
	Load:  Load,
	Sweep: func(s *Spec) *sweep.Block { return s.Sweep },
	Extra: func(s *Spec) []string {
		if s.Mode == ModeTrace {
			return []string{s.Trace}
		}
		return nil
	},
	Scenario: func(s *Spec) string { return s.Scenario },
	Same: func(base, point *Spec) error {
		if !slices.EqualFunc(point.Strategies, base.Strategies, func(a, b StrategySpec) bool { return a.Label == b.Label }) {
			return fmt.Errorf("a sweep may change strategies' settings, not which strategies run")
		}
		return nil
	},
	Runs:     func(s *Spec) int { return len(s.Strategies) * s.Seeds },
	Seeds:    func(s *Spec) int { return s.Seeds },
	SetSeeds: func(s *Spec, n int) { s.Seeds = n },
}

// LoadPlan reads an experiment file as Load does and expands its sweep.
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	return sweep.LoadPlan[*Spec, Run](fsys, name, planLoader, func(s *Spec) string { return s.Name })
}

// ExecuteShard carries out the runs of the plan that shard owns on the one
// worker pool, over the environments newEnv makes (LocalEnv, or
// runner/realenv.NewEnv for mode real). Each run depends only on its
// point, strategy and seed, so its result is the same in any shard and with
// any number of workers.
func ExecuteShard(ctx context.Context, p *Plan, shard sweep.Shard, opt workpool.Options, newEnv EnvFactory) (map[int]*Run, error) {
	envs := newEnvCache(p, newEnv)
	defer envs.close()
	if p.Specs[0].Mode == ModeReal {
		opt.Workers = 1 // one network: runs must not overlap on it
	}
	return p.RunShard(ctx, shard, opt, nil, func(ctx context.Context, pi, r int) (*Run, error) {
		spec := p.Specs[pi]
		si, seed := r/spec.Seeds, r%spec.Seeds // Runs: strategy by strategy, seed by seed
		env, err := envs.get(pi, seed)
		if err != nil {
			return nil, err
		}
		st := spec.Strategies[si]
		run, err := spec.runOne(ctx, st, spec.Seed+uint64(seed), env)
		if err != nil {
			return nil, fmt.Errorf("%s%s, seed %d: %w", p.PointPrefix(pi), st.Label, spec.Seed+uint64(seed), err)
		}
		return run, nil
	})
}

// envCache makes each (point, seed) environment once, when a run needs it.
type envCache struct {
	plan   *Plan
	newEnv EnvFactory
	mu     sync.Mutex
	envs   map[[2]int]*envOnce
}

type envOnce struct {
	once sync.Once
	env  Env
	err  error
}

func newEnvCache(p *Plan, newEnv EnvFactory) *envCache {
	return &envCache{plan: p, newEnv: newEnv, envs: map[[2]int]*envOnce{}}
}

func (c *envCache) get(point, seed int) (Env, error) {
	c.mu.Lock()
	e := c.envs[[2]int{point, seed}]
	if e == nil {
		e = new(envOnce)
		c.envs[[2]int{point, seed}] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		s := c.plan.Specs[point]
		e.env, e.err = c.newEnv(s, s.Seed+uint64(seed))
	})
	return e.env, e.err
}

func (c *envCache) close() {
	for _, e := range c.envs {
		if cl, ok := e.env.(io.Closer); ok {
			cl.Close()
		}
	}
}

// Assemble turns a complete set of runs into one Result per point, as
// ExecuteWith would have returned them. The truth that figures draw comes
// from the model (a real network's truth is its model's); a real run's
// offline twin is the caller's to add (runner/realenv.AddOffline).
func Assemble(p *Plan, runs map[int]*Run) ([]*Result, error) {
	envs := newEnvCache(p, modelEnv)
	defer envs.close()
	out := make([]*Result, len(p.Specs))
	for pi, spec := range p.Specs {
		point, err := p.Point(runs, pi)
		if err != nil {
			return nil, err
		}
		res := &Result{Spec: spec, Paths: spec.PathNames(), Runs: make([][]*Run, len(spec.Strategies))}
		for si := range res.Runs { // runs: strategy by strategy, seed by seed
			res.Runs[si] = point[si*spec.Seeds : (si+1)*spec.Seeds]
		}
		env, err := envs.get(pi, 0)
		if err != nil {
			return nil, err
		}
		res.addTruth(env)
		out[pi] = res
	}
	return out, nil
}
