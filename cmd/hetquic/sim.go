package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hetquic/hetquic/sim/vsreal"

	"github.com/hetquic/hetquic/sim/cc"
	"github.com/hetquic/hetquic/sim/exp"
	"github.com/hetquic/hetquic/sim/sched"
	"github.com/hetquic/hetquic/sim/topo"
)

func init() {
	register(command{name: "sim", summary: "packet-level multipath QUIC simulator: run, validate, list", run: runSim})
}

const simUsage = `sim run FILE [--out DIR] [--seeds N] [--workers N] [--json] [--quiet]
       hetquic sim validate FILE
       hetquic sim list`

const simHelp = `The simulator runs an MPQUIC model (per-path packet number spaces, RFC 9002
loss detection, NewReno/Cubic, MMQUIC ACKs) over a scenario's paths or over a
topology's links, in virtual time, reproducibly from (file, seed). FILE is a sim
experiment (see sim/README.md, "Experiment files"; shipped ones are in
experiments/sim/).

run       runs every variant × path count × seed on all cores, prints the summary
          and writes per-run CSV, summary.json, PNG figures and report.md into
          --out (default results/NAME).
validate  loads the experiment, its scenario or topology, and reports the first problem.
list      lists schedulers, congestion controllers and built-in topologies.`

func runSim(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "sim", simHelp, []subcommand{
		{"run", "run a sim experiment and write its report", simRun},
		{"validate", "load a sim experiment and report the first problem", simValidate},
		{"list", "list the shipped sim experiments", func(context.Context, []string) error { return simList(os.Stdout) }},
		{"vsreal", "compare simulated and real quic-go downloads (validation)", simVsReal},
	}, args)
}

func simVsReal(ctx context.Context, args []string) error {
	fs := newFlagSet("sim vsreal", "sim vsreal [--trials N] [--rate-mbps R]",
		"Downloads 1, 5 and 10 MB over one path at three RTT × loss points, on quic-go through\nthe emulator and in the simulator, and prints both medians (issue 6's validation).")
	trials := fs.Int("trials", 3, "downloads per cell, each way")
	rate := fs.Float64("rate-mbps", 20, "path rate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *trials < 1 || !(*rate > 0) {
		return badInput(fmt.Errorf("sim vsreal: --trials %d and --rate-mbps %g must be positive", *trials, *rate))
	}
	rows, err := vsreal.CompareSimReal(ctx,
		[]vsreal.Point{{RTTms: 20, Loss: 0}, {RTTms: 60, Loss: 0.001}, {RTTms: 100, Loss: 0.01}},
		[]int{1_000_000, 5_000_000, 10_000_000}, *rate, *trials)
	if err != nil {
		return err
	}
	return vsreal.WriteSimVsRealTable(os.Stdout, rows)
}

func simValidate(_ context.Context, args []string) error {
	fs := newFlagSet("sim validate", "sim validate FILE", "Loads a sim experiment and reports the first problem.")
	file, err := simOperand(fs, args)
	if err != nil {
		return err
	}
	spec, err := exp.Load(file)
	if err != nil {
		return badInput(err)
	}
	fmt.Printf("%s: ok (%d variants × %d seeds)\n", file, len(spec.Variants), spec.Seeds)
	return nil
}

func simRun(ctx context.Context, args []string) error {
	fs := newFlagSet("sim run", simUsage, simHelp)
	out := fs.String("out", "", "output directory (default results/NAME, NAME from the experiment file)")
	seeds := fs.Int("seeds", 0, "runs per variant, overriding the file's seeds (1-10000)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU); results do not depend on it")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	file, err := simOperand(fs, args)
	if err != nil {
		return err
	}
	if *seeds < 0 || *seeds > 10000 {
		return badInput(fmt.Errorf("--seeds: %d is outside [1, 10000]", *seeds))
	}
	if *workers < 0 {
		return badInput(fmt.Errorf("--workers: %d is negative", *workers))
	}
	spec, err := exp.Load(file)
	if err != nil {
		return badInput(err)
	}
	if *seeds > 0 {
		spec.Seeds = *seeds
	}
	var progress io.Writer = os.Stderr
	if *quiet {
		progress = nil
	}
	start := time.Now()
	res, err := exp.Run(ctx, spec, *workers, progress)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("results", spec.Name)
	}
	files, err := exp.WriteAll(dir, res)
	if err != nil {
		return err
	}
	sums := res.Summaries()
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sums)
	}
	fmt.Printf("%-14s %5s %10s %8s %8s %8s %9s %9s %8s\n", "variant", "paths", "goodput", "fct_p50", "p90_ms", "p99_ms", "reord_ms", "loss_%", "unfin")
	for _, s := range sums {
		paths := "all"
		if s.Paths > 0 {
			paths = fmt.Sprint(s.Paths)
		}
		fmt.Printf("%-14s %5s %10.2f %8.2f %8.1f %8.1f %9.2f %9.3f %8d\n", s.Label, paths, s.GoodputMbps, s.FCTP50S,
			s.DelayP90Ms, s.DelayP99Ms, s.ReorderMeanMs, 100*s.LossRate, s.Unfinished)
	}
	fmt.Printf("\n%d runs in %.1f s; wrote %d files to %s (open %s)\n", len(res.Runs), time.Since(start).Seconds(), len(files), dir, filepath.Join(dir, "report.md"))
	return nil
}

func simList(w io.Writer) error {
	fmt.Fprintf(w, "schedulers: %s\n", strings.Join(sched.Names(), ", "))
	fmt.Fprintf(w, "congestion controllers: %s\n", strings.Join(cc.Names(), ", "))
	fmt.Fprintln(w, "topology schemes: quic, lrf, pquic, minfct")
	entries, err := fs.ReadDir(topo.Builtin, "topologies")
	if err != nil {
		return err
	}
	var names []string
	for _, e := range entries {
		names = append(names, "builtin:"+strings.TrimSuffix(e.Name(), ".yaml"))
	}
	fmt.Fprintf(w, "topologies: %s\n", strings.Join(names, ", "))
	return nil
}

// simOperand parses flags before or after the one FILE operand.
func simOperand(fs *flag.FlagSet, args []string) (string, error) {
	var operands, flags []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			operands = append(operands, args[i+1:]...)
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			operands = append(operands, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		if f := fs.Lookup(name); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				continue
			}
			if i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
		}
	}
	if err := parseFlags(fs, flags); err != nil {
		return "", err
	}
	if len(operands) != 1 {
		fs.Usage()
		return "", badInput(fmt.Errorf("%s: want exactly one experiment file, got %d operands", fs.Name(), len(operands)))
	}
	return operands[0], nil
}
