package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/sim/cc"
	"github.com/hetquic/hetquic/sim/sched"
	"github.com/hetquic/hetquic/sim/studies"
	"github.com/hetquic/hetquic/sim/topo"
	"github.com/hetquic/hetquic/sim/vsreal"
)

func init() {
	register(command{name: "sim", summary: "packet-level multipath QUIC simulator: run, validate, list", run: runSim})
}

const simHelp = `The simulator runs an MPQUIC model (per-path packet number spaces, RFC 9002
loss detection, NewReno/Cubic, MMQUIC ACKs) over a scenario's paths or over a
topology's links, in virtual time, reproducibly from (file, seed). FILE is a sim
experiment (see sim/README.md, "Experiment files"); NAME is a built-in one
(sim/experiments/, listed by "hetquic sim list").

run, validate and list are "hetquic exp run|validate|list" (every mode's
experiments share one pipeline); they are kept here as aliases.

run         runs every variant × path count × seed on all cores, prints the summary
            and writes per-run CSV, summary.json, figures and report.md into
            --out (default results/NAME).
validate    loads the experiment, its scenario or topology, and reports the first problem.
list        lists the built-in sim experiments.
components  lists schedulers, congestion controllers, schemes and built-in topologies.
vsreal      compares simulated and real quic-go downloads (validation).
conext17, lossregime, mathis
            print a validation table as markdown (sim/DESIGN.md's generated blocks).`

func runSim(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "sim", simHelp, []subcommand{
		{"run", "run a sim experiment and write its report (= exp run)", func(ctx context.Context, args []string) error { return expRun(ctx, args, "sim run") }},
		{"validate", "load a sim experiment and report the first problem (= exp validate)", func(_ context.Context, args []string) error { return expValidate(args, "sim validate") }},
		{"list", "list the built-in sim experiments (= exp list --mode sim)", func(_ context.Context, args []string) error { return expListCmd(args, "sim list", "sim") }},
		{"components", "list schedulers, congestion controllers, schemes and topologies", simComponentsCmd},
		{"vsreal", "compare simulated and real quic-go downloads (validation)", simVsReal},
		{"conext17", "two-path scenario classes of De Coninck & Bonaventure (CoNEXT 2017): single/multipath ratio (markdown)", simConext17},
		{"lossregime", "NewReno under loss against ns-3, like for like under both ACK policies (markdown)", simLossRegime},
		{"mathis", "NewReno under random loss against the Mathis and Padhye throughput models (markdown)", simMathis},
	}, args)
}

func simLossRegime(ctx context.Context, args []string) error {
	return simTable(ctx, args, "lossregime",
		"Runs a 10 MB NewReno transfer at 0–2 % loss in the simulator, per-ACK (newreno-ns3) and\nper-byte (newreno) window growth, ACKs every packet and every second packet, and prints\nit beside ns-3 3.37's TcpNewReno and TcpLinuxReno (bench/ns3/lossregime.sh, embedded) as markdown.",
		func(ctx context.Context) error {
			rows, err := studies.LossRegime(ctx)
			if err != nil {
				return err
			}
			return studies.WriteLossRegimeTable(os.Stdout, rows)
		})
}

func simMathis(ctx context.Context, args []string) error {
	return simTable(ctx, args, "mathis",
		"Runs single-path NewReno over one 100 Mbit/s, 40 ms path at 0.1–5 % random loss, ACKing every\npacket and every second packet, and prints its goodput beside the Mathis et al. and Padhye et al.\nthroughput models as markdown (the simulator's validation; TestMathis bounds it).",
		func(ctx context.Context) error {
			rows, err := studies.Mathis(ctx, studies.MathisDuration)
			if err != nil {
				return err
			}
			return studies.WriteMathisTable(os.Stdout, rows, studies.MathisDuration)
		})
}

// simTable is a validation command with no options that prints one
// markdown table (what a doc's generated block holds): it takes --md, the
// only format, and no arguments.
func simTable(ctx context.Context, args []string, name, help string, print func(context.Context) error) error {
	fs := newFlagSet("sim "+name, "sim "+name+" [--md]", help)
	fs.Bool("md", true, "print markdown (the only format)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("sim %s: unexpected argument %q", name, fs.Arg(0)))
	}
	return print(ctx)
}

func simConext17(ctx context.Context, args []string) error {
	fs := newFlagSet("sim conext17", "sim conext17 [--scenarios N] [--workers N] [--md]",
		"Draws N two-path scenarios in each of the four classes of De Coninck & Bonaventure,\n\"Multipath QUIC: Design and Evaluation\" (CoNEXT 2017), runs a 20 MB GET single-path and\nmultipath on each, and prints the distribution of completion-time ratios and aggregation\nbenefits per class as markdown. Results do not depend on --workers.")
	n := fs.Int("scenarios", 253, "scenarios per class (the paper: 253)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU)")
	fs.Bool("md", true, "print markdown (the only format)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *n < 1 || *n > 10000 || *workers < 0 || fs.NArg() > 0 {
		return badInput(fmt.Errorf("sim conext17: --scenarios %d must be in [1, 10000], --workers %d ≥ 0, no arguments", *n, *workers))
	}
	res, err := studies.Conext17(ctx, *n, *workers)
	if err != nil {
		return err
	}
	return studies.WriteConext17Table(os.Stdout, res, *n)
}

func simVsReal(ctx context.Context, args []string) error {
	fs := newFlagSet("sim vsreal", "sim vsreal [--trials N] [--rate-mbps R] [--md]",
		"Downloads 1, 5 and 10 MB over one path at three RTT × loss points, on quic-go through\nthe emulator and in the simulator, and prints both medians (the simulator's validation against real QUIC).")
	trials := fs.Int("trials", 3, "downloads per cell, each way")
	rate := fs.Float64("rate-mbps", 20, "path rate")
	md := fs.Bool("md", false, "print a Markdown table (what sim/README.md's measured block holds)")
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
	if *md {
		return results.WriteTables(os.Stdout, []results.Table{vsreal.SimVsRealTable(rows, *rate, *trials)})
	}
	return vsreal.WriteSimVsRealTable(os.Stdout, rows)
}

// simComponentsCmd parses "sim components [--md]": --md prints the list as
// a Markdown table with a count per kind, which the docs generate their
// counts from so that no doc names a number the simulator does not register.
func simComponentsCmd(_ context.Context, args []string) error {
	fs := newFlagSet("sim components", "sim components [--md]", "Lists the schedulers, congestion controllers, topology schemes and built-in topologies\nthat sim experiment files can name.")
	md := fs.Bool("md", false, "print a Markdown table with a count per kind")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("sim components: unexpected argument %q", fs.Arg(0)))
	}
	return simComponents(os.Stdout, *md)
}

// simComponents lists what sim experiment files can name: one line per
// kind, or with md a Markdown table with how many of each there are.
func simComponents(w io.Writer, md bool) error {
	entries, err := fs.ReadDir(topo.Builtin, "topologies")
	if err != nil {
		return err
	}
	var topologies []string
	for _, e := range entries {
		topologies = append(topologies, "builtin:"+strings.TrimSuffix(e.Name(), ".yaml"))
	}
	kinds := []struct {
		kind  string
		names []string
	}{
		{"schedulers", sched.Names()},
		{"congestion controllers", cc.Names()},
		{"topology schemes", []string{"quic", "lrf", "pquic", "minfct"}},
		{"topologies", topologies},
	}
	if md {
		fmt.Fprintln(w, "| component | how many | names |")
		fmt.Fprintln(w, "|---|---|---|")
	}
	for _, k := range kinds {
		if md {
			fmt.Fprintf(w, "| %s | %d | %s |\n", k.kind, len(k.names), "`"+strings.Join(k.names, "`, `")+"`")
			continue
		}
		fmt.Fprintf(w, "%s: %s\n", k.kind, strings.Join(k.names, ", "))
	}
	return nil
}
