package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/hetquic/hetquic/internal/workpool"
)

// experiment is one of the paper's §V experiments as Prepare and Run know
// it: its default Params.Scale, the options it takes, and how it runs.
type experiment struct {
	name  string
	scale float64 // default Params.Scale: a run takes under a minute
	// mptcp, repeat, tcp: it takes Params.MPTCP, Repeat > 1, TCP.
	mptcp, repeat, tcp bool
	// rated: its result is goodput against the paths' summed down rate
	// (downRate, offeredRate: rate_mbps), so every path of its scenario
	// needs one; without, the sum is short or zero and the ratio
	// meaningless (stripe read +Inf on a path left unlimited).
	rated bool
	// run fills r (Setting, Rows, chart, Notes) from s's Params.
	run func(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error
}

// registry holds the experiments, in the paper's order; a new one is a
// run function and a line here.
var registry = []experiment{
	{name: "handshake", scale: 1, tcp: true, run: handshakeExperiment},
	{name: "loss", scale: 0.1, tcp: true, run: lossExperiment},
	{name: "aggregate", scale: 0.25, mptcp: true, repeat: true, rated: true, run: aggregateExperiment},
	{name: "outage", scale: 0.25, run: outageExperiment},
	{name: "prefetch", scale: 0.25, run: prefetchExperiment},
	{name: "stripe", scale: 0.25, mptcp: true, rated: true, run: stripeExperiment},
	{name: "matrix", scale: 0.2, mptcp: true, run: matrixExperiment},
}

// Names are the experiments, in the paper's order.
// stripe (one object over unequal paths) goes beyond the paper.
var Names = func() []string {
	var names []string
	for _, e := range registry {
		names = append(names, e.name)
	}
	return names
}()

// lookup finds the experiment called name.
func lookup(name string) (experiment, bool) {
	for _, e := range registry {
		if e.name == name {
			return e, true
		}
	}
	return experiment{}, false
}

// takes lists, in "a, b and c" form, the experiments for which has is true.
func takes(has func(experiment) bool) string {
	var names []string
	for _, e := range registry {
		if has(e) {
			names = append(names, e.name)
		}
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// handshakeExperiment: time to the last byte of a small object, per transport (exp. 1).
func handshakeExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p, sc := s.Agent, s.scenario
	r.Setting = fmt.Sprintf("%d-byte object, %d rounds", p.SizeBytes, p.Rounds)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]HandshakeRow, error) {
		rows, err := RunHandshake(ctx, HandshakeConfig{Scenario: sc, Path: p.Pin, Size: p.SizeBytes, Rounds: p.Rounds, TCP: p.TCP, Seed: s.Seed, Log: log})
		if errors.Is(err, ErrNoMPTCP) && len(rows) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("no HTTPS/TCP rows: %v", err))
			err = nil
		}
		return rows, err
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("%d-byte object: time to the last byte", p.SizeBytes), y: "median over rounds (ms)"}
	for _, h := range rows {
		r.chart.bar(h.Mode, h.MedianMs)
	}
	return nil
}

// lossExperiment: one path's goodput against random loss, per object size (exp. 2).
func lossExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p, sc := s.Agent, s.scenario
	ls := make([]float64, len(p.LossesPct))
	for i, l := range p.LossesPct {
		ls[i] = l / 100
	}
	sizes := []int64{s.bytes(2.5), s.bytes(10)}
	r.Setting = fmt.Sprintf("%v bytes alone over one path, %d connection(s), loss %v %%", sizes, p.ConnsPerPath, p.LossesPct)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]LossRow, error) {
		rows, err := RunLoss(ctx, LossConfig{Scenario: sc, Path: p.Pin, Losses: ls, Sizes: sizes, Lanes: p.ConnsPerPath,
			TCP: p.TCP, TCPCC: p.TCPCC, Seed: s.Seed, Log: log})
		if errors.Is(err, ErrNoMPTCP) && len(rows) > 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("no HTTPS/TCP rows: %v", err))
			err = nil
		}
		return rows, err
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("One path, %d connection(s): goodput vs loss", p.ConnsPerPath), y: "goodput (Mbit/s)"}
	for _, l := range rows {
		r.chart.bar(fmt.Sprintf("%s, %g %% loss, %d B", l.Mode, l.Loss*100, l.SizeBytes), l.Mbps)
	}
	return nil
}

// aggregateExperiment: two apps at once over both paths, repeated (exp. 3).
func aggregateExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p, sc := s.Agent, s.scenario
	big, small := s.bytes(10), s.bytes(2.5)
	r.Setting = fmt.Sprintf("two apps, %d + %d bytes at once, %d run(s)", big, small, p.Repeat)
	var notes []string
	runs, err := workpool.Map(ctx, p.Repeat, opt, func(ctx context.Context, i int) ([]AggRow, error) {
		cfg := AggConfig{Scenario: sc, Big: big, Small: small, Pin: p.Pin, MPTCPCC: p.MPTCPCC, Seed: s.Seed + uint64(i), Log: log}
		rows, err := RunAggregation(ctx, cfg)
		if err != nil || !p.MPTCP {
			return rows, err
		}
		m, err := RunAggregationMPTCP(ctx, cfg)
		switch {
		case errors.Is(err, ErrNoMPTCP):
			notes = append(notes, fmt.Sprintf("seed %d: no MPTCP row: %v", cfg.Seed, err))
			return rows, nil
		case err != nil:
			return nil, err
		}
		return append(rows, m), nil
	})
	if err != nil {
		return err
	}
	var all []AggRow
	for _, rows := range runs {
		all = append(all, rows...)
	}
	r.Rows, r.Mean, r.Notes = all, MeanAggregation(all), notes
	r.chart = chart{title: fmt.Sprintf("Two apps at once (%d + %d bytes): aggregate efficiency", big, small), y: "efficiency = ideal / makespan"}
	for _, m := range r.Mean {
		r.chart.bar(m.Mode, m.Efficiency)
	}
	return nil
}

// outageExperiment: one download across a path cut (exp. 4).
func outageExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p, sc := s.Agent, s.scenario
	size := s.bytes(10)
	at, outage := time.Duration(p.AtS*float64(time.Second)), time.Duration(p.OutageS*float64(time.Second))
	r.Setting = fmt.Sprintf("one download of %d bytes, cut at %v for %v", size, at, outage)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]OutageRow, error) {
		return RunOutage(ctx, OutageConfig{Scenario: sc, Size: size, At: at, Outage: outage, Seed: s.Seed, Log: log})
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("%d bytes, path cut at %v for %v", size, at, outage), y: "completion time after the cut (s)"}
	for _, o := range rows {
		r.chart.bar(o.Mode, o.AfterCutMs/1000)
	}
	return nil
}

// prefetchExperiment: a pushed object against one fetched on demand (exp. 5).
func prefetchExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	sc := s.scenario
	size := s.bytes(2.5)
	r.Setting = fmt.Sprintf("%d bytes pushed vs on demand", size)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]PrefetchRow, error) {
		return RunPrefetch(ctx, PrefetchConfig{Scenario: sc, Size: size, Seed: s.Seed, Log: log})
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("%d bytes: prefetched vs on demand", size), y: "time to the last byte (ms)"}
	for _, f := range rows {
		r.chart.bar(f.Mode, f.Ms)
	}
	return nil
}

// stripeExperiment: one object striped over unequal paths (beyond the paper).
func stripeExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p, sc := s.Agent, s.scenario
	size := s.bytes(100)
	r.Setting = fmt.Sprintf("one object of %d bytes", size)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]StripeRow, error) {
		rows, notes, err := RunStripe(ctx, StripeConfig{Scenario: sc, Size: size, MPTCP: p.MPTCP, MPTCPCC: p.MPTCPCC, Lanes: p.ConnsPerPath, FixedLanes: p.FixedLanes,
			SenderTrace: p.SenderTrace, Seed: s.Seed, Log: log})
		r.Notes = append(r.Notes, notes...)
		return rows, err
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("%d bytes over unequal paths: goodput / summed rate", size), y: "goodput / sum of path rates"}
	for _, x := range rows {
		r.chart.bar(x.Mode, x.Ratio)
	}
	return nil
}

// matrixExperiment: striping against the best path alone, over path mixes.
func matrixExperiment(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger, r *Result) error {
	p := s.Agent
	size := s.bytes(100)
	r.Setting = fmt.Sprintf("one object of %d bytes per mode and path mix", size)
	rows, err := one(ctx, opt, func(ctx context.Context) ([]MatrixRow, error) {
		rows, notes, err := RunMatrix(ctx, MatrixConfig{Size: size, MPTCP: p.MPTCP, MPTCPCC: p.MPTCPCC, Lanes: p.ConnsPerPath, FixedLanes: p.FixedLanes,
			SenderTrace: p.SenderTrace, Seed: s.Seed, Log: log})
		r.Notes = append(r.Notes, notes...)
		if err == nil {
			r.Cuts, err = RunCuts(ctx, CutConfig{Seed: s.Seed, Log: log})
		}
		return rows, err
	})
	if err != nil {
		return err
	}
	r.Rows = rows
	r.chart = chart{title: fmt.Sprintf("%d bytes per path mix: striped / best path alone", size), y: "goodput striped / best path alone"}
	for _, x := range rows {
		r.chart.bar(x.Mix, x.Striped/x.Best)
	}
	return nil
}
