package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/experiments"
	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/scenario"
)

const agentExpHelp = `Runs one of the Cybertwin paper's §V experiments for the agent: ct-client and
ct-server on loopback, every path of the scenario (default: the built-in
scenarios/cybertwin-2x2.5.yaml, two 2.5 Mbit/s paths with 1 % and 5 % loss)
emulated by hetquic's relay between them, the app-server (origin /bytes)
beside ct-server. Every body is checked byte by byte.

Experiments:
  aggregate  (§V-B2, exp. 3) apps of 10 MB and 2.5 MB at once: aggregation
             (default scheduler, striping), the same with two QUIC
             connections per path, without striping, pinned to one path
             (--mptcp: and kernel MPTCP in the root lab); efficiency =
             (bytes / summed path rate) / makespan; --repeat N: mean of N
  outage     (exp. 4) a 10 MB download; the path carrying it goes dark at
             --at for --outage: remaining time with and without migration
  loss       (§V-B1, exp. 2) 2.5 MB and 10 MB over one path at 0/1/2/5 % loss
  prefetch   (exp. 5) a pushed (prefetched) object vs the same size on demand
  handshake  (exp. 1, QUIC part) a --size object over one path: through the
             agent (connection always on) vs direct HTTP/3 cold and warm
             (--tcp: and direct HTTPS over TCP in the root lab)

Sizes are the paper's times --scale; the default scale keeps each run
under a minute (--scale 1: the paper's sizes, minutes per run).`

// expScale is each experiment's default --scale.
var expScale = map[string]float64{"aggregate": 0.25, "outage": 0.25, "loss": 0.1, "prefetch": 0.25, "handshake": 1}

func agentExperiment(ctx context.Context, args []string) error {
	fs := newFlagSet("agent experiment", "agent experiment NAME [--scale F] [--scenario FILE] [--json FILE] [--png FILE]", agentExpHelp)
	scale := fs.Float64("scale", 0, "fraction of the paper's sizes (default per experiment: aggregate/outage/prefetch 0.25, loss 0.1)")
	scFile := fs.String("scenario", "", "scenario YAML file (default: the built-in cybertwin-2x2.5)")
	seed := fs.Uint64("seed", 1, "emulator random seed")
	jsonFile := fs.String("json", "", "also write the rows as JSON to FILE")
	pngFile := fs.String("png", "", "also draw the result as a bar chart into FILE (PNG)")
	pin := fs.String("pin", "", "aggregate, loss, handshake: the single path (default: the scenario's first)")
	at := fs.Duration("at", 2*time.Second, "outage: time of the cut after the download starts")
	outage := fs.Duration("outage", 5*time.Second, "outage: how long the path stays dark")
	losses := fs.String("losses", "0,1,2,5", "loss: loss rates in %, comma-separated")
	hsSize := fs.Int64("size", 10000, "handshake: object bytes (not scaled)")
	rounds := fs.Int("rounds", 10, "handshake: measurements per row (median and min reported)")
	lanes := fs.Int("conns-per-path", 1, "loss: QUIC connections on the path (agent --conns-per-path)")
	repeat := fs.Int("repeat", 1, "aggregate: runs of every mode (seeds --seed, --seed+1, …), then the mean per mode")
	withMPTCP := fs.Bool("mptcp", false, "aggregate: add the kernel MPTCP baseline (root lab, emu/lab; skipped with a note when unavailable)")
	withTCP := fs.Bool("tcp", false, "handshake: add direct HTTPS over TCP (root lab, emu/lab)")
	verbose := fs.Bool("v", false, "log the agent's events to stderr")
	name, err := parseWithOperand(fs, args, "experiment name (aggregate, outage, loss, prefetch, handshake)")
	if err != nil {
		return err
	}
	def, ok := expScale[name]
	if !ok {
		return badInput(fmt.Errorf("agent experiment: unknown experiment %q (aggregate, outage, loss, prefetch, handshake)", name))
	}
	if *scale == 0 {
		*scale = def
	}
	if *lanes < 1 || *lanes > agent.MaxLanes {
		return badInput(fmt.Errorf("agent experiment: --conns-per-path %d out of [1, %d]", *lanes, agent.MaxLanes))
	}
	if *scale < 0 || *scale > 10 {
		return badInput(fmt.Errorf("agent experiment: --scale %g out of (0, 10]", *scale))
	}
	var sc *scenario.Scenario
	if *scFile != "" {
		if sc, err = loadScenarioFile(*scFile); err != nil {
			return badInput(err)
		}
	}
	var logf func(string, ...any)
	if *verbose {
		logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
	}
	size := func(mb float64) int64 { return int64(mb * 1e6 * *scale) }
	fmt.Fprintf(os.Stderr, "agent experiment %s: scale %g\n", name, *scale)
	var rows any
	var chart struct {
		title, y string
		labels   []string
		values   []float64
	}
	bar := func(label string, v float64) {
		chart.labels, chart.values = append(chart.labels, label), append(chart.values, v)
	}
	switch name {
	case "aggregate":
		if *repeat < 1 || *repeat > 100 {
			return badInput(fmt.Errorf("agent experiment: --repeat %d out of [1, 100]", *repeat))
		}
		fmt.Printf("two apps, %d + %d bytes at once\n", size(10), size(2.5))
		var all []experiments.AggRow
		for i := range uint64(*repeat) {
			cfg := experiments.AggConfig{Scenario: sc, Big: size(10), Small: size(2.5), Pin: *pin, Seed: *seed + i, Logf: logf}
			r, err := experiments.RunAggregation(ctx, cfg)
			if err != nil {
				return err
			}
			if *withMPTCP {
				m, err := experiments.RunAggregationMPTCP(ctx, cfg)
				switch {
				case errors.Is(err, experiments.ErrNoMPTCP):
					fmt.Fprintf(os.Stderr, "agent experiment: no MPTCP row: %v\n", err)
				case err != nil:
					return err
				default:
					r = append(r, m)
				}
			}
			if *repeat > 1 {
				fmt.Printf("run %d of %d (seed %d)\n", i+1, *repeat, cfg.Seed)
			}
			experiments.PrintAggregation(os.Stdout, r)
			all = append(all, r...)
		}
		mean := experiments.MeanAggregation(all)
		if *repeat > 1 {
			fmt.Printf("mean of %d runs\n", *repeat)
			experiments.PrintAggregation(os.Stdout, mean)
		}
		chart.title, chart.y = fmt.Sprintf("Two apps at once (%d + %d bytes): aggregate efficiency", size(10), size(2.5)), "efficiency = ideal / makespan"
		for _, m := range mean {
			bar(m.Mode, m.Efficiency)
		}
		rows = all
	case "outage":
		r, err := experiments.RunOutage(ctx, experiments.OutageConfig{Scenario: sc, Size: size(10), At: *at, Outage: *outage, Seed: *seed, Logf: logf})
		if err != nil {
			return err
		}
		fmt.Printf("one download of %d bytes, cut at %v for %v\n", size(10), *at, *outage)
		experiments.PrintOutage(os.Stdout, r)
		chart.title, chart.y = fmt.Sprintf("%d bytes, path cut at %v for %v", size(10), *at, *outage), "completion time after the cut (s)"
		for _, o := range r {
			bar(o.Mode, o.AfterCutMs/1000)
		}
		rows = r
	case "loss":
		var ls []float64
		for _, f := range splitList(*losses) {
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || v >= 100 {
				return badInput(fmt.Errorf("agent experiment: --losses %q: %q is not a rate in [0, 100)", *losses, f))
			}
			ls = append(ls, v/100)
		}
		if len(ls) == 0 {
			return badInput(fmt.Errorf("agent experiment: --losses %q: no rate", *losses))
		}
		r, err := experiments.RunLoss(ctx, experiments.LossConfig{Scenario: sc, Path: *pin, Losses: ls, Sizes: []int64{size(2.5), size(10)}, Lanes: *lanes, Seed: *seed, Logf: logf})
		if err != nil {
			return err
		}
		experiments.PrintLoss(os.Stdout, r)
		chart.title, chart.y = fmt.Sprintf("One path, %d connection(s): goodput vs loss", *lanes), "goodput (Mbit/s)"
		for _, l := range r {
			bar(fmt.Sprintf("%g %% loss, %d B", l.Loss*100, l.SizeBytes), l.Mbps)
		}
		rows = r
	case "handshake":
		if *hsSize < 1 || *rounds < 1 {
			return badInput(fmt.Errorf("agent experiment: --size %d / --rounds %d must be ≥ 1", *hsSize, *rounds))
		}
		r, err := experiments.RunHandshake(ctx, experiments.HandshakeConfig{Scenario: sc, Path: *pin, Size: *hsSize, Rounds: *rounds, TCP: *withTCP, Seed: *seed, Logf: logf})
		if errors.Is(err, experiments.ErrNoMPTCP) && len(r) > 0 {
			fmt.Fprintf(os.Stderr, "agent experiment: no HTTPS/TCP rows: %v\n", err)
		} else if err != nil {
			return err
		}
		fmt.Printf("%d-byte object, %d rounds\n", *hsSize, *rounds)
		experiments.PrintHandshake(os.Stdout, r)
		chart.title, chart.y = fmt.Sprintf("%d-byte object: time to the last byte", *hsSize), "median over rounds (ms)"
		for _, h := range r {
			bar(h.Mode, h.MedianMs)
		}
		rows = r
	case "prefetch":
		r, err := experiments.RunPrefetch(ctx, experiments.PrefetchConfig{Scenario: sc, Size: size(2.5), Seed: *seed, Logf: logf})
		if err != nil {
			return err
		}
		experiments.PrintPrefetch(os.Stdout, r)
		chart.title, chart.y = fmt.Sprintf("%d bytes: prefetched vs on demand", size(2.5)), "time to the last byte (ms)"
		for _, f := range r {
			bar(f.Mode, f.Ms)
		}
		rows = r
	}
	if *pngFile != "" {
		if err := figure.Bars(*pngFile, chart.title, chart.y, chart.labels, chart.values); err != nil {
			return err
		}
	}
	if *jsonFile != "" {
		b, err := json.MarshalIndent(rows, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*jsonFile, append(b, '\n'), 0o644)
	}
	return nil
}
