package env

import (
	"context"

	"github.com/hetquic/hetquic/ride"
)

// Run plays one episode with policy p (a Learner also gets delivery
// feedback) and returns the finished Env; with cfg.Record its Outcomes,
// Arrivals and Decoded hold the report's data.
func Run(cfg Config, p ride.Policy) (*Env, error) {
	return RunContext(context.Background(), cfg, p)
}

// ctxCheckSteps is how many steps pass between two looks at the context: a
// step is a frame's decision (well under a millisecond), so Ctrl-C takes
// effect at once while the check costs nothing measurable.
const ctxCheckSteps = 64

// RunContext is Run that stops with ctx's error when ctx ends (Ctrl-C during
// an evaluation that takes minutes).
func RunContext(ctx context.Context, cfg Config, p ride.Policy) (*Env, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if l, ok := p.(Learner); ok {
		e.SetLearner(l)
	}
	for step := 0; !e.Done(); step++ {
		if step%ctxCheckSteps == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if _, _, err := e.Step(p.Act(e.State())); err != nil {
			return nil, err
		}
	}
	return e, nil
}
