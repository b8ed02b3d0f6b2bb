// Package realenv is mode real of experiments: every task a real HTTP/3
// request by PCM-QUIC (quic-go) through hetquic's emulator (pcm/measure's
// bench) to an unmodified origin. It is a package of its own so that
// offline and trace runs (package runner) do not link quic-go, the
// emulator or the origin.
package realenv

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/pcm/measure"
	"github.com/hetquic/hetquic/runner"
	"github.com/hetquic/hetquic/scenario"
)

// realEnv carries out every task as a real HTTP/3 request: PCM-QUIC on
// quic-go, through hetquic's emulator (the UDP relay on loopback, one
// client address per scenario path) to a plain quic-go origin (no PCM). Round
// events are applied through the emulator's control API at the start of
// their round. Each run gets a fresh QUIC connection and the network as at
// round 0.
//
// The truth (best path, regret) is the offline model's expectation for the
// scenario the emulator runs: a real network has no other; the report sets
// the real means beside the model's so the gap is visible.
type realEnv struct {
	spec   *runner.Spec
	model  runner.Env // task sizes and the model's truth of the seed
	bench  *measure.Bench
	client *pcm.Client
	sched  *runner.Schedule
	probes *sideProbes     // the run's out-of-band probes (spec probe:), or nil
	last   []scenario.Path // what the emulator runs now
	next   int             // the round Do carries out next
}

// NewEnv is mode real's runner.EnvFactory.
func NewEnv(s *runner.Spec, seed uint64) (runner.Env, error) {
	model, err := runner.OfflineEnv(s, seed)
	if err != nil {
		return nil, err
	}
	b, err := measure.NewBench(s.ScenarioFile(), seed) // events come by round, from the experiment
	if err != nil {
		return nil, fmt.Errorf("emulator: %w", err)
	}
	return &realEnv{spec: s, model: model, bench: b}, nil
}

func (e *realEnv) Shared() bool { return false }

// Gone reports, for the round about to be carried out, the paths PCM-QUIC
// rests after a failure (pcm.Client.Resting): the runner takes them from
// its strategy as PCM's own Get takes them from its selector, instead of
// letting the strategy ask for a path the client will not use. For any
// other round it reports nothing (the rests of a finished run are gone).
func (e *realEnv) Gone(t int) []bool {
	if e.client == nil || t != e.next {
		return nil
	}
	r := e.client.Resting()
	if !slices.Contains(r, true) {
		return nil
	}
	if !slices.Contains(r, false) {
		return nil // every path resting: PCM still carries tasks on the active one
	}
	return r
}
func (e *realEnv) Truth(t int) []runner.Moments { return e.model.Truth(t) }

// Begin resets the emulator to round 0's network and opens a new connection.
func (e *realEnv) Begin(ctx context.Context) error {
	if e.client != nil {
		e.client.Close()
		e.client = nil
	}
	if e.probes != nil {
		e.probes.close()
		e.probes = nil
	}
	e.sched = runner.NewSchedule(e.spec.ScenarioFile(), e.spec.Events)
	e.last, e.next = nil, 0
	if err := e.advance(0); err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := e.bench.Dial(dctx, e.spec.Real.Rebind)
	if err != nil {
		return err
	}
	e.client = c
	if e.spec.Probe.PerSecond > 0 {
		e.probes = newSideProbes(len(e.spec.ScenarioFile().Paths), func(ctx context.Context) (*pcm.SideProber, error) {
			return e.bench.SideProber(ctx, probeTimeout)
		})
	}
	return nil
}

// Probe asks for an out-of-band probe of idle path p on its side
// connection (runner.ProbeEnv); it is answered while requests go on,
// through Answers.
func (e *realEnv) Probe(_ int, p pathsel.PathID) (float64, bool) {
	if e.probes != nil {
		e.probes.Probe(p)
	}
	return 0, false
}

// Answers hands out the probes answered since the last round
// (runner.ProbeAnswerer).
func (e *realEnv) Answers() []runner.ProbeAnswer {
	if e.probes == nil {
		return nil
	}
	return e.probes.Answers()
}

// ProbeBytes is what the run's probes have cost on the wire so far
// (runner.ProbeCoster): the side connections' QUIC bytes both ways,
// their handshakes included.
func (e *realEnv) ProbeBytes() uint64 {
	if e.probes == nil {
		return 0
	}
	return e.probes.Bytes()
}

// advance applies round t's events to the emulator: every path whose
// parameters changed is set whole, so a spike's end restores it exactly.
func (e *realEnv) advance(t int) error {
	paths, changed, err := e.sched.At(t)
	if err != nil || !changed {
		return err
	}
	eng := e.bench.Relay().Engine()
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

func (e *realEnv) Do(ctx context.Context, t int, p pathsel.PathID) (runner.Outcome, error) {
	e.next = t + 1
	if err := e.advance(t); err != nil {
		return runner.Outcome{}, err
	}
	m, err := e.model.Do(ctx, t, p) // the model's round t: its task size
	if err != nil {
		return runner.Outcome{}, err
	}
	size := m.SizeBytes
	timeout := time.Duration(e.spec.Real.TimeoutMs * float64(time.Millisecond))
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res, err := e.client.GetOn(rctx, int(p), "/bytes/"+strconv.Itoa(size), nil)
	if err != nil {
		return runner.Outcome{}, fmt.Errorf("round %d on %s: %w", t, e.spec.ScenarioFile().Paths[p].Name, err)
	}
	if res.TotalBytes != int64(size) {
		return runner.Outcome{}, fmt.Errorf("round %d: got %d of %d bytes", t, res.TotalBytes, size)
	}
	// The sample is charged to the path that carried the response: a
	// server that did not follow the switch (in rebind mode, quic-go
	// answers the first requests after a rebind on the old path) answered
	// on another path than the request's (pcm.Result.Carrier).
	carried := res.Path
	if !res.Followed() {
		carried = res.Carrier
	}
	o := runner.Outcome{Path: pathsel.PathID(carried), TCTms: stats.Ms(res.TCT()), SizeBytes: size, WaitMs: stats.Ms(res.Wait())}
	o.Sample = o.TCTms
	if e.spec.Sample == runner.SampleTCTPerByte {
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
	if e.probes != nil {
		err = errors.Join(err, e.probes.close())
		e.probes = nil
	}
	return errors.Join(err, e.bench.Close())
}

// Execute runs a mode-real experiment: every strategy on every seed, one
// run at a time (one emulator per seed), then the same strategies, seeds
// and task sizes on the offline model (Result.Offline) to set the two side
// by side.
func Execute(ctx context.Context, spec *runner.Spec, opt workpool.Options) (*runner.Result, error) {
	if spec.Mode != runner.ModeReal {
		return nil, fmt.Errorf("realenv: mode %s is not real", spec.Mode)
	}
	res, err := runner.ExecuteWith(ctx, spec, opt, NewEnv)
	if err != nil {
		return nil, err
	}
	return res, AddOffline(ctx, res, opt.Workers)
}

// AddOffline runs a real result's experiment on the offline model (the same
// strategies, seeds and task sizes) into res.Offline.
func AddOffline(ctx context.Context, res *runner.Result, workers int) error {
	offline := *res.Spec
	offline.Mode = runner.ModeOffline
	var err error
	res.Offline, err = runner.Execute(ctx, &offline, workpool.Options{Workers: workers})
	return err
}
