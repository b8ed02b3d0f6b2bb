package runner

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/hetquic/hetquic/internal/workpool"
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
	// WaitMs is what the user waited each round (Outcome.WaitMs).
	WaitMs []float64
	// Probes counts the out-of-band probes of idle paths the run sent;
	// ProbeBytes is what they cost on the wire where the Env counts it
	// (ProbeCoster: mode real), handshakes of side connections included.
	Probes     int
	ProbeBytes uint64
	// Elsewhere counts the rounds whose task was carried on another path
	// than the strategy chose (probe failed, path resting, failover): the
	// strategy learns from the path that carried it, never silently.
	Elsewhere int
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
// seed on the worker pool. Runs are independent and write only
// their own slot, so any number of workers gives the same Result. Mode real
// needs the real network's Env, which this package does not link (so an
// offline run does not link quic-go): run it with runner/realenv.
func Execute(ctx context.Context, spec *Spec, opt workpool.Options) (*Result, error) {
	if spec.Mode == ModeReal {
		return nil, fmt.Errorf("mode %s: run it with runner/realenv (hetquic exp run does)", spec.Mode)
	}
	return ExecuteWith(ctx, spec, opt, modelEnv)
}

// modelEnv is the environment of modes offline and trace, and for mode real
// the model of its network (the truth it is scored against).
func modelEnv(s *Spec, seed uint64) (Env, error) {
	if s.Mode == ModeTrace {
		return traceEnv(s), nil
	}
	return OfflineEnv(s, seed)
}

// LocalEnv is the environment of modes offline and trace: what ExecuteShard
// takes for them (runner/realenv.NewEnv for mode real).
var LocalEnv EnvFactory = modelEnv

// ExecuteWith runs every strategy on every seed over the environments
// newEnv makes (one per seed), on opt.Workers workers, or one when the
// environment cannot be shared (a real network).
func ExecuteWith(ctx context.Context, spec *Spec, opt workpool.Options, newEnv EnvFactory) (*Result, error) {
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
	err := workpool.Run(ctx, len(spec.Strategies)*seeds, opt, func(ctx context.Context, j int) error {
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
	res.addTruth(envs[0])
	res.Elapsed = time.Since(start)
	return res, nil
}

// addTruth records the first seed's network round by round (env is that
// seed's environment): what the figures draw the runs against.
func (res *Result) addTruth(env Env) {
	obj := res.Spec.Objective.objective()
	for t := range res.Spec.Rounds {
		truth := env.Truth(t)
		if truth == nil {
			break
		}
		var gone []bool
		if rm, ok := env.(remover); ok {
			gone = rm.Gone(t)
		}
		res.Truth = append(res.Truth, truth)
		res.Best = append(res.Best, bestPresent(obj, truth, gone))
	}
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
		WaitMs: make([]float64, n),
	}
	reg := pathsel.NewRegret(obj)
	if err := env.Begin(ctx); err != nil {
		return nil, err
	}
	rm, _ := env.(remover)
	present := make([]bool, len(paths))
	for i := range present {
		present[i] = true
	}
	pr := newProber(s, st, env, sel)
	for t := range n {
		if t%256 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		var gone []bool
		if rm != nil {
			gone = rm.Gone(t)
			if err := followRemovals(sel, present, gone); err != nil {
				return nil, err
			}
		}
		truth := env.Truth(t)
		if truth != nil {
			best = bestPresent(obj, truth, gone)
		}
		p, err := sel.Choose()
		if err != nil {
			return nil, err
		}
		out, err := env.Do(ctx, t, p)
		if err != nil {
			return nil, err
		}
		if out.Path != p {
			run.Elsewhere++
		}
		p = out.Path
		if err := sel.Observe(p, out.Sample); err != nil {
			return nil, err
		}
		run.Path[t], run.TCTms[t], run.Size[t], run.Best[t] = int16(p), out.TCTms, out.SizeBytes, int16(best)
		run.WaitMs[t] = out.WaitMs
		if out.WaitMs == 0 {
			run.WaitMs[t] = out.TCTms
		}
		if truth != nil {
			c, b := truth[p], truth[best]
			run.Hit[t] = obj.Value(c.Mean, c.Var) <= obj.Value(b.Mean, b.Var)*(1+tie)
			reg.Add(pathsel.Round{
				ChosenMean: c.Mean, ChosenVar: c.Var, BestMean: b.Mean, BestVar: b.Var,
				Sample: out.Sample, Hit: run.Hit[t],
			})
		}
		run.Regret[t] = reg.Pseudo()
		if pr != nil {
			if err := pr.after(t, run.WaitMs[t], int(p), present); err != nil {
				return nil, err
			}
		}
	}
	if pr != nil {
		run.Probes = pr.sent
		if pc, ok := env.(ProbeCoster); ok {
			run.ProbeBytes = pc.ProbeBytes()
		}
	}
	run.Eq22 = reg.Eq22()
	return run, nil
}

// tie is the relative difference below which two paths count as equally
// good, so identical paths (PCM Fig. 13 has two) are both "best".
const tie = 1e-9

// bestPresent is the path with the smallest objective (the first of
// equals) among those not gone (gone may be nil).
func bestPresent(obj pathsel.Objective, truth []Moments, gone []bool) int {
	best, bestV := -1, math.Inf(1)
	for i, m := range truth {
		if gone != nil && gone[i] {
			continue
		}
		if v := obj.Value(m.Mean, m.Var); best < 0 || v < bestV*(1-tie) {
			best, bestV = i, v
		}
	}
	return best
}

// followRemovals tells sel about paths removed or back since the last
// round (gone nil: every path is there); present tracks what sel has.
func followRemovals(sel pathsel.Selector, present, gone []bool) error {
	for i := range present {
		there := gone == nil || !gone[i]
		switch {
		case there && !present[i]:
			if err := sel.AddPath(pathsel.PathID(i)); err != nil {
				return err
			}
		case !there && present[i]:
			if err := sel.RemovePath(pathsel.PathID(i)); err != nil {
				return err
			}
		}
		present[i] = there
	}
	return nil
}
