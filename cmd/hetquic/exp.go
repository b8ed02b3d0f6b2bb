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
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic"
	agentexp "github.com/hetquic/hetquic/agent/experiments"
	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	ridereport "github.com/hetquic/hetquic/ride/report"
	simexp "github.com/hetquic/hetquic/sim/exp"
	"github.com/hetquic/hetquic/sim/svc"
)

func init() {
	register(command{name: "exp", summary: "run, validate and list experiments of every mode (hetquic exp run FILE|NAME)", run: runExp})
	register(command{name: "demo", summary: "run the default experiment (offline pcm-table5) and write results/", run: runDemo})
}

const expUsage = `exp run FILE|NAME [--out DIR] [--workers N] [--seeds N] [--json | --md] [--quiet] [--shard i/n]
       hetquic exp validate FILE|NAME
       hetquic exp list [--mode MODE]
       hetquic exp merge [--out DIR] [--spec FILE|NAME] SHARD_DIR…
       hetquic exp slurm FILE|NAME --shards N [--out DIR] [--hetquic PATH] [--partition P] [--time T] [--mem-mb M]`

func runExp(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "exp", expHelp, []subcommand{
		{"run", "run an experiment of any mode; table, CSV, JSON, figures, report", func(ctx context.Context, args []string) error { return expRun(ctx, args, "exp run") }},
		{"validate", "load an experiment and what it names, report the first problem", func(_ context.Context, args []string) error { return expValidate(args, "exp validate") }},
		{"list", "list the built-in experiments of every mode", func(_ context.Context, args []string) error { return expListCmd(args, "exp list", "") }},
		{"merge", "join the partial results of exp run --shard into one run's results", expMerge},
		{"slurm", "write a Slurm job-array script that runs an experiment's shards and merges them", expSlurm},
	}, args)
}

const expHelp = `An experiment file (see docs/experiments.md) names its mode and what it runs:
  offline  strategies × seeds × rounds on the scenario's TCT model (pathsel)
  trace    the same over a recorded trace
  real     the same with real HTTP/3 requests by PCM-QUIC through the emulator
  sim      simulator variants (scheduler, congestion control, path scheme)
  agent    one of the Cybertwin agent's §V experiments through the emulator
FILE is a path; NAME is a built-in experiment (hetquic exp list), used when no
such file exists.

run writes CSV, summary.json, figures (PNG and SVG) and report.md into --out
(default results/NAME); run --md prints only the report's Markdown tables (what
doc markers paste) and writes files only with --out.`

func runDemo(ctx context.Context, args []string) error {
	fs := newFlagSet("demo", "demo [--out DIR]", "Runs the built-in default experiment, PCM journal §5.1 offline (pcm-table5):\nits strategies × 20 seeds × 1000 rounds; prints the table, writes the report.")
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

// loaded is an experiment of any mode, loaded and validated: exactly one
// of pcm (offline, trace, real), sim and agent is set.
type loaded struct {
	env experiment.Envelope
	// plan is a pcm experiment's points × strategies × seeds (its sweep);
	// pcm is its first point (the file as written when it has no sweep).
	plan      *experiment.Plan
	pcm       *experiment.Spec
	simPlan   *simexp.Plan // the same for a simulator experiment
	sim       *simexp.Spec
	videoPlan *svc.Plan // and for a video (QC-MAB) experiment
	video     *svc.Spec
	agent     *agentexp.Spec
	ridePlan  *ridereport.Plan // and for a ride evaluation
	ride      *ridereport.Spec
}

// builtinDirs are where the built-in experiments live in hetquic.Files.
var builtinDirs = []string{"experiments", "sim/experiments", "sim/svc/experiments"}

// loadExperiment loads FILE from disk, or the built-in experiment NAME
// when no such file exists, whatever its mode.
func loadExperiment(file string) (*loaded, error) {
	if _, err := os.Stat(file); err == nil {
		abs, err := filepath.Abs(file)
		if err != nil {
			return nil, err
		}
		// Rooted at "/", so ../scenarios/… resolves like the shell would.
		return loadFrom(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"))
	}
	name := strings.TrimSuffix(file, ".yaml") + ".yaml"
	for _, dir := range builtinDirs {
		if p := path.Join(dir, name); fileExists(hetquic.Files, p) {
			return loadFrom(hetquic.Files, p)
		}
	}
	return nil, fmt.Errorf("%s: no such file, nor a built-in experiment (hetquic exp list)", file)
}

func fileExists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// loadFrom reads the envelope of name in fsys and hands the file to its
// mode's backend, which decodes it whole and strictly.
func loadFrom(fsys fs.FS, name string) (*loaded, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	env, err := experiment.ReadEnvelope(name, data)
	if err != nil {
		return nil, err
	}
	l := &loaded{env: env}
	if env.Mode == experiment.ModeAgent && hasSweep(data) {
		return nil, fmt.Errorf("%s: sweep: %w", name, l.noShard())
	}
	switch env.Mode {
	case experiment.ModeSim:
		if l.simPlan, err = simexp.LoadPlan(fsys, name); err == nil {
			l.sim = l.simPlan.Specs[0]
		}
	case experiment.ModeVideo:
		if l.videoPlan, err = svc.LoadPlan(fsys, name); err == nil {
			l.video = l.videoPlan.Specs[0]
		}
	case experiment.ModeAgent:
		l.agent, err = agentexp.Load(fsys, name)
	case experiment.ModeRide:
		if l.ridePlan, err = ridereport.LoadPlan(fsys, name); err == nil {
			l.ride = l.ridePlan.Specs[0]
		}
	default:
		if l.plan, err = experiment.LoadPlan(fsys, name); err == nil {
			l.pcm = l.plan.Specs[0]
		}
	}
	if err != nil {
		return nil, err
	}
	return l, nil
}

// hasSweep reports whether an experiment file has a sweep: block, for mode
// agent, whose strict decoder would only call it an unknown field.
func hasSweep(data []byte) bool {
	var doc struct {
		Sweep yaml.Node `yaml:"sweep"`
	}
	return yaml.Unmarshal(data, &doc) == nil && doc.Sweep.Kind != 0
}

// shape is one line on what the experiment runs.
func (l *loaded) shape() string {
	switch {
	case l.sim != nil:
		points := ""
		if l.simPlan.Swept {
			points = fmt.Sprintf(" at %d points (%d runs)", len(l.simPlan.Points), l.simPlan.Runs())
		}
		return fmt.Sprintf("%d variants × %d seeds%s", len(l.sim.Variants), l.sim.Seeds, points)
	case l.video != nil:
		points := ""
		if l.videoPlan.Swept {
			points = fmt.Sprintf(" at %d points (%d runs)", len(l.videoPlan.Points), l.videoPlan.Runs())
		}
		return fmt.Sprintf("%d variants × %d seeds, %g s each%s", len(l.video.Variants), l.video.Seeds, l.video.DurationS, points)
	case l.agent != nil:
		return fmt.Sprintf("agent experiment %s, scale %g, %d run(s)", l.agent.Agent.Experiment, l.agent.Agent.Scale, l.agent.Agent.Repeat)
	case l.ride != nil:
		return fmt.Sprintf("RIDE (%s) vs RR, minRTT, Peekaboo on the test video, %d frames (0: all), seed %d", l.ride.Ride.Policy, l.ride.Ride.Frames, l.ride.Seed)
	}
	s := l.pcm
	points := ""
	if l.plan.Swept {
		points = fmt.Sprintf(" at %d points (%d runs)", len(l.plan.Points), l.plan.Runs())
	}
	return fmt.Sprintf("%d paths, %d strategies, %d rounds × %d seeds%s", len(s.PathNames()), len(s.Strategies), s.Rounds, s.Seeds, points)
}

// setSeeds overrides the number of seeds (--seeds).
func (l *loaded) setSeeds(n int) error {
	switch {
	case l.sim != nil:
		l.simPlan.SetSeeds(n)
	case l.pcm != nil:
		l.plan.SetSeeds(n)
	case l.video != nil:
		l.videoPlan.SetSeeds(n)
	default:
		return fmt.Errorf("--seeds: mode %s has no seeds to override (agent: its spec's agent.repeat; ride: its one seed, which a sweep: block can vary)", l.env.Mode)
	}
	return nil
}

// outcome is a finished experiment of any mode.
type outcome struct {
	tables  []results.Table
	summary results.Summary
	write   func(dir string) ([]string, error)
	text    func(w io.Writer) error // the terminal's table
	runs    int
}

// run runs the experiment through the runner with opt.
func (l *loaded) run(ctx context.Context, opt runner.Options) (*outcome, error) {
	switch {
	case l.agent != nil:
		res, err := agentexp.Run(ctx, l.agent, opt, nil)
		if err != nil {
			return nil, err
		}
		tables := res.Tables()
		return &outcome{
			tables: tables, summary: res.Summary(), runs: l.agent.Agent.Repeat, write: res.WriteAll,
			text: func(w io.Writer) error { return results.WriteTables(w, tables) },
		}, nil
	}
	return l.runPlan(ctx, opt)
}

func expRun(ctx context.Context, args []string, name string) error {
	fs := newFlagSet(name, expUsage, expHelp)
	out := fs.String("out", "", "output directory (default results/NAME, NAME from the experiment file)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU); results do not depend on it")
	seeds := fs.Int("seeds", 0, "seeds (runs per strategy or variant), overriding the file's (1-10000)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	asMD := fs.Bool("md", false, "print the report's Markdown tables to stdout and write no files unless --out is given; no progress")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	shardFlag := fs.String("shard", "", "run only shard i/n of the runs (0 ≤ i < n) and write them to --out, for hetquic exp merge")
	file, err := parseWithOperand(fs, args, "experiment file or name")
	if err != nil {
		return err
	}
	switch {
	case *asJSON && *asMD:
		return badInput(fmt.Errorf("%s: --json and --md exclude each other", name))
	case *seeds < 0 || *seeds > 10000:
		return badInput(fmt.Errorf("--seeds: %d is outside [1, 10000]", *seeds))
	case *workers < 0:
		return badInput(fmt.Errorf("--workers: %d is negative", *workers))
	}
	l, err := loadExperiment(file)
	if err != nil {
		return badInput(err)
	}
	if *seeds > 0 {
		if err := l.setSeeds(*seeds); err != nil {
			return badInput(err)
		}
	}
	opt := runner.Options{Workers: *workers, Progress: os.Stderr, Name: l.env.Name}
	if *quiet || *asMD {
		opt.Progress = nil
	} else {
		fmt.Fprintf(os.Stderr, "experiment %s (%s): %s\n", l.env.Name, l.env.Mode, l.shape())
	}
	start := time.Now() // for the last line only
	if *shardFlag != "" {
		return expRunShard(ctx, l, file, *shardFlag, *out, *asJSON || *asMD, opt)
	}
	o, err := l.run(ctx, opt)
	if err != nil {
		return err
	}
	if *asMD {
		if *out != "" {
			if _, err := o.write(*out); err != nil {
				return err
			}
		}
		return results.WriteTables(os.Stdout, o.tables)
	}
	dir, files, err := o.writeTo(*out, l.env.Name)
	if err != nil {
		return err
	}
	if *asJSON {
		data, err := results.MarshalSummary(o.summary)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := o.text(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\n%d runs in %.1f s; wrote %d files to %s (open %s)\n", o.runs, time.Since(start).Seconds(), len(files), dir, filepath.Join(dir, "report.md"))
	return nil
}

// writeTo writes the outcome into out, or results/NAME when out is empty,
// and returns the directory and the files written.
func (o *outcome) writeTo(out, name string) (string, []string, error) {
	dir := out
	if dir == "" {
		dir = filepath.Join("results", name)
	}
	files, err := o.write(dir)
	return dir, files, err
}

func expValidate(args []string, name string) error {
	fs := newFlagSet(name, "exp validate FILE|NAME", "Loads an experiment of any mode and what it names (scenario, topology, trace) and reports the first problem.")
	file, err := parseWithOperand(fs, args, "experiment file or name")
	if err != nil {
		return err
	}
	l, err := loadExperiment(file)
	if err != nil {
		return badInput(err)
	}
	fmt.Printf("%s: ok (mode %s: %s)\n", file, l.env.Mode, l.shape())
	return nil
}

// builtin is one built-in experiment.
type builtin struct {
	name, path string
	env        experiment.Envelope
}

// builtins lists every built-in experiment, by directory then name.
func builtins() ([]builtin, error) {
	var out []builtin
	for _, dir := range builtinDirs {
		entries, err := fs.ReadDir(hetquic.Files, dir)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if !strings.HasSuffix(e.Name(), ".yaml") {
				continue
			}
			p := path.Join(dir, e.Name())
			data, err := fs.ReadFile(hetquic.Files, p)
			if err != nil {
				return nil, err
			}
			env, err := experiment.ReadEnvelope(p, data)
			if err != nil {
				return nil, err
			}
			out = append(out, builtin{strings.TrimSuffix(e.Name(), ".yaml"), p, env})
		}
	}
	return out, nil
}

func expListCmd(args []string, name, mode string) error {
	fs := newFlagSet(name, "exp list [--mode MODE] [--md]", "Lists the built-in experiments: name, mode, what they reproduce.")
	m := fs.String("mode", mode, "only this mode ("+strings.Join(experiment.Modes, ", ")+")")
	md := fs.Bool("md", false, "a Markdown table (what docs/experiments.md pastes)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *m != "" && !slices.Contains(experiment.Modes, *m) {
		return badInput(fmt.Errorf("--mode: %q is not one of %v", *m, experiment.Modes))
	}
	return expList(os.Stdout, *m, *md)
}

// expList prints the built-in experiments of mode (all when empty), as
// aligned text or a Markdown table.
func expList(w io.Writer, mode string, md bool) error {
	bs, err := builtins()
	if err != nil {
		return err
	}
	t := results.Table{Header: []string{"name", "mode", "file", "what"}}
	for _, b := range bs {
		if mode != "" && b.env.Mode != mode {
			continue
		}
		if md {
			t.Rows = append(t.Rows, []string{"`" + b.name + "`", b.env.Mode, "`" + b.path + "`", firstSentence(b.env.Description)})
			continue
		}
		fmt.Fprintf(w, "%-26s %-8s %s\n", b.name, b.env.Mode, firstSentence(b.env.Description))
	}
	if md {
		return results.WriteTables(w, []results.Table{t})
	}
	return nil
}

// firstSentence is the part of a description before " — " or the end of
// its first sentence, at most 90 characters.
func firstSentence(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if i := strings.Index(s, " — "); i > 0 {
		s = s[:i]
	} else if i := strings.Index(s, ". "); i > 0 {
		s = s[:i]
	}
	if r := []rune(s); len(r) > 90 {
		s = string(r[:89]) + "…"
	}
	return s
}

// parseWithOperand parses flags that may come before or after the one
// operand (Go's flag package stops at the first operand).
func parseWithOperand(fs *flag.FlagSet, args []string, what string) (string, error) {
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
