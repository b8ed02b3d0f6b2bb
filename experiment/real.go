package experiment

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/scenario"
)

// Real tunes mode real.
type Real struct {
	// Rebind uses PCM's paper-faithful mode (one connection ID, changing
	// source address) instead of quic-go's path API.
	Rebind bool `yaml:"rebind"`
	// TimeoutMs bounds one request (default 10000).
	TimeoutMs float64 `yaml:"timeout_ms"`
}

// realEnv carries out every task as a real HTTP/3 request: PCM-QUIC on
// quic-go, through hetquic's emulator (the UDP relay on loopback, one
// client address per scenario path) to an unmodified quic-go origin. Round
// events are applied through the emulator's control API at the start of
// their round. Each run gets a fresh QUIC connection and the network as at
// round 0.
//
// The truth (best path, regret) is the offline model's expectation for the
// scenario the emulator runs: a real network has no other; the report sets
// the real means beside the model's so the gap is visible.
type realEnv struct {
	spec   *Spec
	model  *table // sizes and truth of the seed
	bench  *bench
	client *pcm.Client
	sched  *schedule
	last   []scenario.Path // what the emulator runs now
}

func newRealEnv(s *Spec, seed uint64) (*realEnv, error) {
	model, err := offlineEnv(s, seed)
	if err != nil {
		return nil, err
	}
	b, err := newBench(s.scenario, seed) // events come by round, from the experiment
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	return &realEnv{spec: s, model: model, bench: b}, nil
}

func (e *realEnv) Shared() bool          { return false }
func (e *realEnv) Truth(t int) []Moments { return e.model.Truth(t) }

// Begin resets the emulator to round 0's network and opens a new connection.
func (e *realEnv) Begin(ctx context.Context) error {
	if e.client != nil {
		e.client.Close()
		e.client = nil
	}
	e.sched = newSchedule(e.spec.scenario, e.spec.Events)
	e.last = nil
	if err := e.advance(0); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.bench.dial(dctx, e.spec.Real.Rebind)
	if err != nil {
		return err
	}
	e.client = c
	return nil
}

// advance applies round t's events to the emulator: every path whose
// parameters changed is set whole, so a spike's end restores it exactly.
func (e *realEnv) advance(t int) error {
	paths, changed, err := e.sched.at(t)
	if err != nil || !changed {
		return err
	}
	eng := e.bench.relay.Engine()
	for i, p := range paths {
		if e.last != nil && e.last[i] == p {
			continue
		}
		patch, err := wholePath(p)
		if err != nil {
			return err
		}
		if err := eng.Apply(p.Name, patch); err != nil {
			return fmt.Errorf("round %d: emulator: %w", t, err)
		}
	}
	e.last = append(e.last[:0], paths...)
	return nil
}

// wholePath is a patch that sets every field of both directions of p.
func wholePath(p scenario.Path) (*scenario.Patch, error) {
	data, err := yaml.Marshal(map[string]scenario.Link{"up": p.Up, "down": p.Down})
	if err != nil {
		return nil, err
	}
	return scenario.ParsePatch(string(data))
}

func (e *realEnv) Do(ctx context.Context, t int, p pathsel.PathID) (Outcome, error) {
	if err := e.advance(t); err != nil {
		return Outcome{}, err
	}
	size := e.model.size[t]
	timeout := time.Duration(e.spec.Real.TimeoutMs * float64(time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := e.client.GetOn(rctx, int(p), "/bytes/"+strconv.Itoa(size), nil)
	if err != nil {
		return Outcome{}, fmt.Errorf("round %d on %s: %w", t, e.spec.scenario.Paths[p].Name, err)
	}
	if res.TotalBytes != int64(size) {
		return Outcome{}, fmt.Errorf("round %d: got %d of %d bytes", t, res.TotalBytes, size)
	}
	o := Outcome{Path: pathsel.PathID(res.Path), TCTms: float64(res.TCT()) / float64(time.Millisecond), SizeBytes: size}
	o.Sample = o.TCTms
	if e.spec.Sample == SampleTCTPerByte {
		o.Sample /= float64(size)
	}
	return o, nil
}

// Close stops the client, the emulator and the origin.
func (e *realEnv) Close() error {
	var err error
	if e.client != nil {
		err = e.client.Close()
	}
	return errors.Join(err, e.bench.Close())
}

// noSelector stands in for the client's own selector in real runs, where
// the runner's strategy chooses every path (GetOn) and the client never
// asks its own.
type noSelector struct{}

func (noSelector) Choose() (pathsel.PathID, error)       { return 0, pathsel.ErrNoPaths }
func (noSelector) Observe(pathsel.PathID, float64) error { return nil }
func (noSelector) AddPath(pathsel.PathID) error          { return nil }
func (noSelector) RemovePath(pathsel.PathID) error       { return nil }
