package experiment

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/pathsel"
)

// Run is one strategy's run over one seed, round by round.
type Run struct {
	Label string
	Seed  uint64
	Path  []int16   // chosen path
	TCTms []float64 // task completion time
	Size  []int     // task size, bytes
	// Regret is the cumulative pseudo-regret after each round, in the
	// objective's unit; Hit says whether the round's path was a best one.
	Regret []float64
	Hit    []bool
	Best   []int16 // the best path of each round, by the run's objective
	Eq22   float64 // PCM Eq. 22 at the end of the run
}

// Result is a finished experiment.
type Result struct {
	Spec  *Spec
	Paths []string
	Runs  [][]*Run // [strategy][seed], in the spec's order
	// Truth and Best describe the first seed's network round by round
	// (mean sample per path, index of the best path), for the figures.
	Truth   [][]Moments
	Best    []int
	Elapsed time.Duration
	// Offline is, for a real run, the same experiment on the offline model
	// (the same seeds and task sizes), to set the two side by side.
	Offline *Result
}

// EnvFactory makes the environment of one seed.
type EnvFactory func(s *Spec, seed uint64) (Env, error)

// Execute runs an offline or trace experiment: every strategy on every
// seed on the runner's worker pool. Runs are independent and write only
// their own slot, so any number of workers gives the same Result. Mode real
// needs the real network's Env, which this package does not link (so an
// offline run does not link quic-go): run it with experiment/realenv.
func Execute(ctx context.Context, spec *Spec, opt runner.Options) (*Result, error) {
	switch spec.Mode {
	case ModeOffline:
		return ExecuteWith(ctx, spec, opt, OfflineEnv)
	case ModeTrace:
		return ExecuteWith(ctx, spec, opt, func(s *Spec, _ uint64) (Env, error) { return traceEnv(s), nil })
	}
	return nil, fmt.Errorf("mode %s: run it with experiment/realenv (hetquic exp run does)", spec.Mode)
}

// ExecuteWith runs every strategy on every seed over the environments
// newEnv makes (one per seed), on opt.Workers workers, or one when the
// environment cannot be shared (a real network).
func ExecuteWith(ctx context.Context, spec *Spec, opt runner.Options, newEnv EnvFactory) (*Result, error) {
	start := time.Now() // for Elapsed only; never a seed
	seeds := spec.Seeds
	envs := make([]Env, seeds)
	defer func() {
		for _, e := range envs {
			if c, ok := e.(io.Closer); ok {
				c.Close()
			}
		}
	}()
	for i := range seeds {
		var err error
		if envs[i], err = newEnv(spec, spec.Seed+uint64(i)); err != nil {
			return nil, err
		}
	}
	res := &Result{Spec: spec, Paths: spec.PathNames(), Runs: make([][]*Run, len(spec.Strategies))}
	for i := range res.Runs {
		res.Runs[i] = make([]*Run, seeds)
	}
	if !envs[0].Shared() {
		opt.Workers = 1
	}
	if opt.Name == "" {
		opt.Name = spec.Name
	}
	err := runner.Run(ctx, len(spec.Strategies)*seeds, opt, func(ctx context.Context, j int) error {
		si, seed := j/seeds, j%seeds
		run, err := spec.runOne(ctx, spec.Strategies[si], spec.Seed+uint64(seed), envs[seed])
		if err != nil {
			return fmt.Errorf("%s, seed %d: %w", spec.Strategies[si].Label, spec.Seed+uint64(seed), err)
		}
		res.Runs[si][seed] = run
		return nil
	})
	if err != nil {
		return nil, err
	}
	obj := spec.Objective.objective()
	for t := range spec.Rounds {
		truth := envs[0].Truth(t)
		if truth == nil {
			break
		}
		res.Truth = append(res.Truth, truth)
		res.Best = append(res.Best, bestPath(obj, truth))
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

// runOne runs one strategy on one seed.
func (s *Spec) runOne(ctx context.Context, st StrategySpec, seed uint64, env Env) (*Run, error) {
	obj := s.objectiveFor(st)
	var best int // the oracle follows the truth of the current round
	var sel pathsel.Selector
	if st.Strategy == pathsel.Oracle {
		sel = pathsel.NewOracle(func() pathsel.PathID { return pathsel.PathID(best) })
	} else {
		h := fnv.New64a()
		h.Write([]byte(st.Label))
		var err error
		if sel, err = pathsel.New(st.Config, rand.New(rand.NewPCG(seed, h.Sum64()))); err != nil {
			return nil, err
		}
	}
	paths := s.PathNames()
	for i := range paths {
		if err := sel.AddPath(pathsel.PathID(i)); err != nil {
			return nil, err
		}
	}
	n := s.Rounds
	run := &Run{
		Label: st.Label, Seed: seed,
		Path: make([]int16, n), TCTms: make([]float64, n), Size: make([]int, n),
		Regret: make([]float64, n), Hit: make([]bool, n), Best: make([]int16, n),
	}
	reg := pathsel.NewRegret(obj)
	if err := env.Begin(ctx); err != nil {
		return nil, err
	}
	for t := range n {
		if t%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		truth := env.Truth(t)
		if truth != nil {
			best = bestPath(obj, truth)
		}
		p, err := sel.Choose()
		if err != nil {
			return nil, err
		}
		out, err := env.Do(ctx, t, p)
		if err != nil {
			return nil, err
		}
		p = out.Path
		if err := sel.Observe(p, out.Sample); err != nil {
			return nil, err
		}
		run.Path[t], run.TCTms[t], run.Size[t], run.Best[t] = int16(p), out.TCTms, out.SizeBytes, int16(best)
		if truth != nil {
			c, b := truth[p], truth[best]
			run.Hit[t] = obj.Value(c.Mean, c.Var) <= obj.Value(b.Mean, b.Var)*(1+tie)
			reg.Add(pathsel.Round{
				ChosenMean: c.Mean, ChosenVar: c.Var, BestMean: b.Mean, BestVar: b.Var,
				Sample: out.Sample, Hit: run.Hit[t],
			})
		}
		run.Regret[t] = reg.Pseudo()
	}
	run.Eq22 = reg.Eq22()
	return run, nil
}

// tie is the relative difference below which two paths count as equally
// good, so identical paths (PCM Fig. 13 has two) are both "best".
const tie = 1e-9

// bestPath is the path with the smallest objective (the first of equals).
func bestPath(obj pathsel.Objective, truth []Moments) int {
	best, bestV := 0, math.Inf(1)
	for i, m := range truth {
		if v := obj.Value(m.Mean, m.Var); v < bestV*(1-tie) {
			best, bestV = i, v
		}
	}
	return best
}
