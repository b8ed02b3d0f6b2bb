package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hetquic/hetquic"
	agentrunner "github.com/hetquic/hetquic/agent/runner"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
)

const agentExpHelp = `Runs one of the Cybertwin paper's §V experiments for the agent: ct-client and
ct-server on loopback, every path of the scenario (default: the built-in
scenarios/cybertwin-2x2.5.yaml, two 2.5 Mbit/s paths with 1 % and 5 % loss)
emulated by hetquic's relay between them, the app-server (origin /bytes)
beside ct-server. Every body is checked byte by byte.

This is "hetquic exp run agent-NAME" (the spec files experiments/agent-*.yaml)
with flags that override the spec's agent block.

Experiments:
  aggregate  (§V-B2, exp. 3) apps of 10 MB and 2.5 MB at once: aggregation
             (default scheduler, striping), the same with two QUIC
             connections per path, without striping, pinned to one path
             (--mptcp: and kernel MPTCP in the root lab); efficiency =
             (bytes / summed path rate) / makespan; --repeat N: mean of N
  outage     (exp. 4) a 10 MB download; the path carrying it goes dark at
             --at for --outage: remaining time with and without migration
  loss       (§V-B1, exp. 2) 2.5 MB and 10 MB over one path at 0/1/2/5 % loss,
             through the agent and end to end over HTTPS/1.1 with TCP (cubic)
             + TLS 1.2 in the root lab (the paper's Fig. 3; --tcp=false: agent only)
  prefetch   (exp. 5) a pushed (prefetched) object vs the same size on demand
  stripe     one object striped over the scenario's paths vs its first path
             alone (--mptcp: and kernel MPTCP in the root lab; --sender-trace:
             a note per path on what kept its link idle)
  matrix     stripe on seven built-in path mixes (equal, 2:1, 4:2:1, 10:1,
             10:1 with 2.5x the RTT, 1 % loss, a rate that halves), one row
             per mix: striped, best path alone, MPTCP (--mptcp); then two
             outage rows: a 10 s cut of the best path (time until the
             download is back on it) and of every path (a download, a
             tunnel and a 4 MB upload complete intact); --sender-trace:
             as stripe's, per mix
  handshake  (exp. 1, QUIC part) a --size object over one path: through the
             agent (connection always on) vs direct HTTP/3 cold and warm
             (--tcp: and direct HTTPS over TCP in the root lab)

Sizes are the paper's times --scale; the default scale keeps each run
under a minute (--scale 1: the paper's sizes, minutes per run).`

func agentExperiment(ctx context.Context, args []string) error {
	fs := newFlagSet("agent experiment", "agent experiment NAME [--scale F] [--scenario FILE] [--out DIR] [--json FILE] [--png FILE]", agentExpHelp)
	scale := fs.Float64("scale", 0, "fraction of the paper's sizes (default per experiment: aggregate/outage/prefetch 0.25, loss 0.1)")
	scFile := fs.String("scenario", "", "scenario YAML file (default: the spec's, the built-in cybertwin-2x2.5); stripe and aggregate need a down rate_mbps on every path")
	seed := fs.Uint64("seed", 1, "emulator random seed")
	out := fs.String("out", "", "also write summary.json, the chart and report.md into DIR")
	jsonFile := fs.String("json", "", "also write summary.json to FILE")
	pngFile := fs.String("png", "", "also draw the result as a bar chart into FILE (PNG, and its .svg)")
	pin := fs.String("pin", "", "aggregate, loss, handshake: the single path (default: the scenario's first)")
	at := fs.Duration("at", 0, "outage: time of the cut after the download starts (default 2s)")
	outage := fs.Duration("outage", 0, "outage: how long the path stays dark (default 5s)")
	losses := fs.String("losses", "", "loss: loss rates in %, comma-separated (default 0,1,2,5)")
	hsSize := fs.Int64("size", 0, "handshake: object bytes (not scaled; default 10000)")
	rounds := fs.Int("rounds", 0, "handshake: measurements per row (median and min reported; default 10)")
	lanes := fs.Int("conns-per-path", 0, "loss, stripe, matrix: ct-client's QUIC connections per path (agent --conns-per-path; default 1)")
	fixedLanes := fs.Bool("fixed-lanes", false, "stripe, matrix: ct-client adds no connections to a lossy path (agent fixed_lanes; default: it adds lanes)")
	senderTrace := fs.Bool("sender-trace", false, "stripe, matrix: trace ct-server's QUIC senders and the relay's queues over the striped transfer; a note per path says what kept its link idle (process paused, flow control, congestion window, nothing to send)")
	repeat := fs.Int("repeat", 0, "aggregate: runs of every mode (seeds --seed, --seed+1, …), then the mean per mode (default 1)")
	withMPTCP := fs.Bool("mptcp", false, "aggregate, stripe, matrix: add the kernel MPTCP baseline (root lab, emu/lab; skipped with a note when unavailable)")
	mptcpCC := fs.String("mptcp-cc", "", "aggregate, stripe, matrix with --mptcp: kernel MPTCP's TCP congestion control, e.g. cubic (default: the host's)")
	withTCP := fs.Bool("tcp", false, "handshake, loss: add direct HTTPS over TCP (root lab, emu/lab; agent-loss's spec sets it)")
	tcpCC := fs.String("tcp-cc", "", "loss with --tcp: the HTTPS comparator's TCP congestion control, e.g. cubic (default: the spec's)")
	verbose := fs.Bool("v", false, "log the agent's events to stderr")
	name, err := parseWithOperand(fs, args, "experiment name ("+strings.Join(agentrunner.Names, ", ")+")")
	if err != nil {
		return err
	}
	spec, err := agentrunner.Load(hetquic.Files, "experiments/agent-"+name+".yaml")
	if err != nil {
		return badInput(fmt.Errorf("agent experiment: unknown experiment %q (%s)", name, strings.Join(agentrunner.Names, ", ")))
	}
	p := &spec.Agent
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	// Flags the user gave override the spec, after a range check that names
	// the flag.
	for _, c := range []struct {
		flag string
		bad  bool
		msg  string
	}{
		{"repeat", *repeat < 1 || *repeat > 100, fmt.Sprintf("--repeat %d out of [1, 100]", *repeat)},
		{"conns-per-path", *lanes < 1 || *lanes > wire.MaxLanes, fmt.Sprintf("--conns-per-path %d out of [1, %d]", *lanes, wire.MaxLanes)},
		{"scale", !(*scale > 0 && *scale <= 10), fmt.Sprintf("--scale %g out of (0, 10]", *scale)},
		{"size", *hsSize < 1, fmt.Sprintf("--size %d must be ≥ 1", *hsSize)},
		{"rounds", *rounds < 1, fmt.Sprintf("--rounds %d must be ≥ 1", *rounds)},
		{"at", *at <= 0, fmt.Sprintf("--at %v must be > 0", *at)},
		{"outage", *outage <= 0, fmt.Sprintf("--outage %v must be > 0", *outage)},
	} {
		if set[c.flag] && c.bad {
			return badInput(fmt.Errorf("agent experiment: %s", c.msg))
		}
	}
	if set["losses"] {
		if p.LossesPct, err = parseLosses(*losses); err != nil {
			return badInput(fmt.Errorf("agent experiment: %w", err))
		}
	}
	for flagName, apply := range map[string]func(){
		"scale": func() { p.Scale = *scale }, "seed": func() { spec.Seed = *seed }, "pin": func() { p.Pin = *pin },
		"at": func() { p.AtS = at.Seconds() }, "outage": func() { p.OutageS = outage.Seconds() },
		"size": func() { p.SizeBytes = *hsSize }, "rounds": func() { p.Rounds = *rounds },
		"conns-per-path": func() { p.ConnsPerPath = *lanes }, "repeat": func() { p.Repeat = *repeat },
		"mptcp": func() { p.MPTCP = *withMPTCP }, "tcp": func() { p.TCP = *withTCP }, "mptcp-cc": func() { p.MPTCPCC = *mptcpCC },
		"tcp-cc": func() { p.TCPCC = *tcpCC }, "fixed-lanes": func() { p.FixedLanes = *fixedLanes },
		"sender-trace": func() { p.SenderTrace = *senderTrace },
	} {
		if set[flagName] {
			apply()
		}
	}
	if err := spec.Prepare(); err != nil {
		return badInput(fmt.Errorf("agent experiment: %w", err))
	}
	if *scFile != "" {
		sc, err := loadScenarioFile(*scFile)
		if err != nil {
			return badInput(err)
		}
		if err := spec.SetScenario(sc); err != nil {
			return badInput(err)
		}
	}
	var log *slog.Logger // nil: the agent discards its events
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	fmt.Fprintf(os.Stderr, "agent experiment %s: scale %g\n", name, p.Scale)
	res, err := agentrunner.Run(ctx, spec, workpool.Options{Progress: os.Stderr}, log)
	if err != nil {
		return err
	}
	if err := results.WriteTables(os.Stdout, res.Tables()); err != nil {
		return err
	}
	return writeAgentOutputs(res, *out, *pngFile, *jsonFile)
}

// parseLosses reads --losses: loss rates in percent, comma-separated.
func parseLosses(list string) ([]float64, error) {
	var out []float64
	for _, f := range splitList(list) {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || v < 0 || v >= 100 {
			return nil, fmt.Errorf("--losses %q: %q is not a rate in [0, 100)", list, f)
		}
		out = append(out, v)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--losses %q: no rate", list)
	}
	return out, nil
}

// writeAgentOutputs writes what --out, --png and --json ask for.
func writeAgentOutputs(res *agentrunner.Result, out, pngFile, jsonFile string) error {
	if out != "" {
		if _, err := res.WriteAll(out); err != nil {
			return err
		}
	}
	if pngFile != "" {
		if err := res.WriteChart(pngFile); err != nil {
			return err
		}
	}
	if jsonFile == "" {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(jsonFile), 0o755); err != nil {
		return err
	}
	return results.WriteSummaryFile(jsonFile, res.Summary())
}
