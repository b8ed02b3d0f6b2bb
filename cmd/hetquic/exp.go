package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/experiment/realenv"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/sim/svc"
)

func init() {
	register(command{name: "exp", summary: "run, validate and list experiments (hetquic exp run FILE|NAME)", run: runExp})
	register(command{name: "demo", summary: "run the default experiment (offline pcm-table5) and write results/", run: runDemo})
}

const expUsage = `exp run FILE|NAME [--out DIR] [--workers N] [--json | --md] [--quiet]
       hetquic exp validate FILE|NAME
       hetquic exp list`

func runExp(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "exp", expHelp, []subcommand{
		{"run", "run every strategy on every seed; table, CSV, JSON, figures, report", func(ctx context.Context, args []string) error { return expRun(ctx, args, "exp run") }},
		{"validate", "load an experiment and its scenario, report the first problem", func(_ context.Context, args []string) error { return expValidate(args) }},
		{"list", "list the built-in experiments", func(context.Context, []string) error { return expList(os.Stdout) }},
	}, args)
}

const expHelp = `An experiment file names a scenario, the strategies to compare and how many
rounds and seeds to run (see README, "Experiment files"). FILE is a path; NAME
is a built-in experiment (hetquic exp list), used when no such file exists.

run writes rounds.csv, summary.json, figures (PNG and SVG) and report.md into
--out (default results/NAME); run --md prints only the report's tables.`

func runDemo(ctx context.Context, args []string) error {
	fs := newFlagSet("demo", "demo [--out DIR]", "Runs the built-in default experiment, PCM journal §5.1 offline (pcm-table5):\n12 strategies × 20 seeds × 1000 rounds; prints the table, writes the report.")
	out := fs.String("out", "", "output directory (default results/pcm-table5)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	runArgs := []string{"pcm-table5"}
	if *out != "" {
		runArgs = append(runArgs, "--out", *out)
	}
	return expRun(ctx, runArgs, "demo")
}

func expRun(ctx context.Context, args []string, name string) error {
	if _, ok := qcmabOperand(args); ok {
		return qcmabRun(ctx, args)
	}
	fs := newFlagSet(name, expUsage, expHelp)
	out := fs.String("out", "", "output directory (default results/NAME, NAME from the experiment file)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU); results do not depend on it")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	asMD := fs.Bool("md", false, "print the report's Markdown tables to stdout (what doc markers paste) and write no files unless --out is given; no progress")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	spec, _, err := parseExperiment(fs, args)
	if err != nil {
		return err
	}
	if *asJSON && *asMD {
		return badInput(fmt.Errorf("%s: --json and --md exclude each other", name))
	}
	var progress io.Writer = os.Stderr
	if *quiet || *asMD {
		progress = nil
	} else {
		fmt.Fprintf(os.Stderr, "experiment %s: %d strategies × %d seeds × %d rounds\n", spec.Name, len(spec.Strategies), spec.Seeds, spec.Rounds)
	}
	execute := experiment.Execute
	if spec.Mode == experiment.ModeReal {
		execute = realenv.Execute
	}
	res, err := execute(ctx, spec, runner.Options{Workers: *workers, Progress: progress})
	if err != nil {
		return err
	}
	sum := experiment.Summarize(res)
	if *asMD {
		if *out != "" {
			if _, err := experiment.WriteAll(*out, res, sum); err != nil {
				return err
			}
		}
		return results.WriteTables(os.Stdout, sum.Tables())
	}
	dir := *out
	if dir == "" {
		dir = filepath.Join("results", spec.Name)
	}
	files, err := experiment.WriteAll(dir, res, sum)
	if err != nil {
		return err
	}
	if *asJSON {
		data, err := results.MarshalSummary(sum)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := sum.WriteTable(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\n%d runs in %.0f ms; wrote %d files to %s (open %s)\n", len(spec.Strategies)*spec.Seeds, sum.ElapsedMs, len(files), dir, filepath.Join(dir, "report.md"))
	return nil
}

func expValidate(args []string) error {
	if _, ok := qcmabOperand(args); ok {
		return qcmabValidate(args)
	}
	fs := newFlagSet("exp validate", "exp validate FILE|NAME", "Loads an experiment and its scenario and reports the first problem.")
	spec, file, err := parseExperiment(fs, args)
	if err != nil {
		return err
	}
	fmt.Printf("%s: ok (%d paths, %d strategies, %d rounds × %d seeds)\n", file, len(spec.PathNames()), len(spec.Strategies), spec.Rounds, spec.Seeds)
	return nil
}

func expList(w io.Writer) error {
	entries, err := fs.ReadDir(hetquic.Files, "experiments")
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".yaml")
		spec, err := experiment.Load(hetquic.Files, path.Join("experiments", e.Name()))
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-16s %s\n", name, firstSentence(spec.Description))
	}
	for _, name := range svc.Names() {
		spec, err := svc.LoadBuiltin(name)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "%-16s %s\n", name, firstSentence(spec.Description))
	}
	return nil
}

func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, " — "); i > 0 {
		return s[:i]
	}
	return s
}

// parseExperiment parses the flags and the FILE|NAME operand and loads it.
func parseExperiment(fs *flag.FlagSet, args []string) (*experiment.Spec, string, error) {
	file, err := parseWithOperand(fs, args, "experiment file or name")
	if err != nil {
		return nil, "", err
	}
	spec, err := loadExperiment(file)
	return spec, file, badInput(err)
}

// loadExperiment loads FILE from disk, or the built-in experiment NAME
// when no such file exists.
func loadExperiment(file string) (*experiment.Spec, error) {
	if _, err := os.Stat(file); err == nil {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		// Rooted at "/", so ../scenarios/… resolves like the shell would.
		return experiment.Load(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"))
	}
	builtin := path.Join("experiments", strings.TrimSuffix(file, ".yaml")+".yaml")
	if _, err := fs.Stat(hetquic.Files, builtin); err != nil {
		return nil, fmt.Errorf("%s: no such file, nor a built-in experiment (hetquic exp list)", file)
	}
	return experiment.Load(hetquic.Files, builtin)
}

// parseWithOperand parses flags that may come before or after the one
// operand (Go's flag package stops at the first operand).
func parseWithOperand(fs interface {
	Parse([]string) error
	Args() []string
}, args []string, what string) (string, error) {
	var operand string
	for {
		if err := parseFlagsAny(fs, args); err != nil {
			return "", err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			break
		}
		if operand != "" {
			return "", badInput(fmt.Errorf("unexpected argument %q", rest[0]))
		}
		operand, args = rest[0], rest[1:]
	}
	if operand == "" {
		return "", badInput(fmt.Errorf("missing %s", what))
	}
	return operand, nil
}
