package env

import "github.com/hetquic/hetquic/ride"

// Run plays one episode with policy p (a Learner also gets delivery
// feedback) and returns the finished Env; with cfg.Record its Outcomes,
// Arrivals and Decoded hold the report's data.
func Run(cfg Config, p ride.Policy) (*Env, error) {
	e, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if l, ok := p.(Learner); ok {
		e.SetLearner(l)
	}
	for !e.Done() {
		if _, _, err := e.Step(p.Act(e.State())); err != nil {
			return nil, err
		}
	}
	return e, nil
}
