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

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/scenario"
)

func init() {
	register(command{name: "exp", summary: "run, validate and list experiments of every mode (hetquic exp run FILE|NAME)", run: runExp})
	register(command{name: "demo", summary: "run the default experiment (offline pcm-table5) and write results/", run: runDemo})
}

const expUsage = `exp run FILE|NAME [--set FIELD=VALUE]… [--out DIR] [--workers N] [--seeds N] [--json | --md] [--quiet] [--shard i/n]
       hetquic exp validate FILE|NAME
       hetquic exp list [--mode MODE]
       hetquic exp merge [--out DIR] [--spec FILE|NAME] SHARD_DIR…
       hetquic exp slurm FILE|NAME --shards N [--out DIR] [--hetquic PATH] [--partition P] [--time T] [--mem-mb M]`

func runExp(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "exp", expHelp(), []subcommand{
		{"run", "run an experiment of any mode; table, CSV, JSON, figures, report", func(ctx context.Context, args []string) error { return expRun(ctx, args, "exp run") }},
		{"validate", "load an experiment and what it names, report the first problem", func(_ context.Context, args []string) error { return expValidate(args, "exp validate") }},
		{"list", "list the built-in experiments of every mode", func(_ context.Context, args []string) error { return expListCmd(args, "exp list", "") }},
		{"merge", "join the partial results of exp run --shard into one run's results", expMerge},
		{"slurm", "write a Slurm job-array script that runs an experiment's shards and merges them", expSlurm},
	}, args)
}

// expHelp is exp's help: every registered mode (modeSummaries) and how
// FILE and --out are read.
func expHelp() string {
	var b strings.Builder
	b.WriteString("An experiment file (see docs/experiments.md) names its mode and what it runs:\n")
	for _, m := range mode.Names() {
		fmt.Fprintf(&b, "  %-8s %s\n", m, modeSummaries[m])
	}
	return b.String() + expHelpTail
}

const expHelpTail = `FILE is a path; NAME is a built-in experiment (hetquic exp list), used when no
such file exists.

run writes CSV, summary.json, figures (PNG and SVG) and report.md into --out
(new, empty or an earlier run of the same experiment), else into a directory
of its own, results/NAME/RUN, with results/NAME/latest linking the newest;
--set FIELD=VALUE changes a field for this run; run --md prints only the report's Markdown tables (what
doc markers paste) and writes files only with --out.`

func runDemo(ctx context.Context, args []string) error {
	fs := newFlagSet("demo", "demo [--out DIR]", "Runs the built-in default experiment, PCM journal §5.1 offline (pcm-table5):\nits strategies × 20 seeds × 1000 rounds; prints the table, writes the report,\nsummary.json, figures and every round (rounds.csv.gz: 2.3 MB, 14 MB as plain CSV).")
	out := fs.String("out", "", "output directory (default results/pcm-table5/RUN, linked by results/pcm-table5/latest)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("demo takes no arguments, got %q (hetquic exp run NAME runs another experiment)", fs.Arg(0)))
	}
	runArgs := []string{"pcm-table5"}
	if *out != "" {
		runArgs = append(runArgs, "--out", *out)
	}
	return expRun(ctx, runArgs, "demo")
}

// loaded is an experiment of any mode, loaded and validated: its envelope
// and what its mode (internal/mode) made of the file.
type loaded struct {
	env mode.Envelope
	mode.Experiment
}

// loadExperiment loads FILE from disk, or the built-in experiment NAME
// when no such file exists, whatever its mode.
func loadExperiment(file string) (*loaded, error) {
	return loadOverridden(file, nil)
}

// loadOverridden is loadExperiment with the --set assignments applied to
// the file (or its scenario) before its mode reads it.
func loadOverridden(file string, sets []sweep.Assign) (*loaded, error) {
	fsys, name, err := resolveExperiment(file)
	if err != nil {
		return nil, err
	}
	over, err := sweep.Override(fsys, name, sets)
	if err != nil {
		return nil, fmt.Errorf("--set: %w", err)
	}
	l, err := loadFrom(over, name)
	if err != nil && len(sets) > 0 {
		return nil, fmt.Errorf("with --set %s: %w", assignsText(sets), err)
	}
	return l, err
}

func assignsText(sets []sweep.Assign) string {
	var parts []string
	for _, a := range sets {
		parts = append(parts, a.Key+"="+a.Value)
	}
	return strings.Join(parts, " ")
}

// assignFlag is the repeatable --set FIELD=VALUE.
type assignFlag []sweep.Assign

func (a *assignFlag) String() string { return assignsText(*a) }

func (a *assignFlag) Set(s string) error {
	v, err := sweep.ParseAssign(s)
	if err != nil {
		return err
	}
	*a = append(*a, v)
	return nil
}

// resolveExperiment is the file system and name of FILE on disk, or of the
// built-in experiment NAME when no such file exists.
func resolveExperiment(file string) (fs.FS, string, error) {
	if _, err := os.Stat(file); err == nil {
		abs, err := hostPath(file)
		if err != nil {
			return nil, "", err
		}
		return hostFS{}, abs, nil
	}
	name := strings.TrimSuffix(file, ".yaml") + ".yaml"
	for _, dir := range builtinDirs {
		if p := path.Join(dir, name); fileExists(hetquic.Files, p) {
			return hetquic.Files, p, nil
		}
	}
	var names []string
	if bs, err := builtins(); err == nil {
		for _, b := range bs {
			names = append(names, b.name)
		}
	}
	return nil, "", fmt.Errorf("%s: no such file, nor a built-in experiment%s (hetquic exp list)", file, didYouMean(strings.TrimSuffix(file, ".yaml"), names))
}

func fileExists(fsys fs.FS, name string) bool {
	_, err := fs.Stat(fsys, name)
	return err == nil
}

// loadFrom reads the envelope of name in fsys and hands the file to its
// mode, which decodes it whole and strictly.
func loadFrom(fsys fs.FS, name string) (*loaded, error) {
	env, e, err := mode.Load(fsys, name)
	if err != nil {
		if l, ok, ierr := loadInline(fsys, name, err); ok {
			return l, ierr
		}
		if isScenario(fsys, name) {
			return nil, fmt.Errorf("%s is a scenario file (the network), not an experiment: check it with hetquic scenario validate; an experiment names it with scenario: FILE", name)
		}
		return nil, err
	}
	return &loaded{env, e}, nil
}

// loadInline reads an experiment whose mode names its scenario by file but
// whose file writes it inline (the decoder's "cannot unmarshal !!map into
// string" at scenario:): the inline scenario is read as a file of its own
// beside the experiment. ok is false when err is not that case.
func loadInline(fsys fs.FS, name string, err error) (*loaded, bool, error) {
	if !strings.Contains(err.Error(), "!!map into string") {
		return nil, false, nil
	}
	inl, moved, ierr := sweep.InlineScenario(fsys, name)
	if ierr != nil || !moved {
		return nil, false, nil
	}
	env, e, lerr := mode.Load(inl, name)
	if lerr != nil {
		return nil, true, fmt.Errorf("%w (the inline scenario read as %s)", lerr, path.Base(sweep.InlineScenarioName(name)))
	}
	return &loaded{env, e}, true, nil
}

// isScenario reports whether name is a valid scenario file (paths, no
// experiment fields), which exp validate and exp run say instead of the
// experiment decoder's "unknown field paths".
func isScenario(fsys fs.FS, name string) bool {
	_, err := scenario.Load(fsys, name)
	return err == nil
}

// sharded is the experiment's runs to shard, or why it has none.
func (l *loaded) sharded() (mode.Sharded, error) {
	if s, ok := l.Experiment.(mode.Sharded); ok {
		return s, nil
	}
	return nil, mode.NoShardError(l.env.Mode)
}

func expRun(ctx context.Context, args []string, name string) error {
	fs := newFlagSet(name, expUsage, expHelp())
	out := fs.String("out", "", "output directory (default results/NAME, NAME from the experiment file)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU); results do not depend on it")
	seeds := fs.Int("seeds", 0, "seeds (runs per strategy or variant), overriding the file's (1-10000)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	asMD := fs.Bool("md", false, "print the report's Markdown tables to stdout and write no files unless --out is given; no progress")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	shardFlag := fs.String("shard", "", "run only shard i/n of the runs (0 ≤ i < n) and write them to --out, for hetquic exp merge")
	var sets assignFlag
	fs.Var(&sets, "set", "FIELD=VALUE: change one field of the experiment or its scenario for this run, named as in a sweep: block (rounds, paths[1].down.delay_ms; repeatable)")
	file, err := parseWithOperand(fs, args, "experiment file or name")
	if err != nil {
		return err
	}
	seedsSet := false
	fs.Visit(func(f *flag.Flag) { seedsSet = seedsSet || f.Name == "seeds" })
	if err := checkRunFlags(name, *asJSON, *asMD, seedsSet, *seeds, *workers, len(sets) > 0, *shardFlag != "", *out); err != nil {
		return badInput(err)
	}
	l, err := loadOverridden(file, sets)
	if err != nil {
		return badInput(err)
	}
	if seedsSet {
		if err := l.SetSeeds(*seeds); err != nil {
			return badInput(err)
		}
	}
	var dir string
	fresh := false
	if *shardFlag == "" {
		if dir, fresh, err = prepareOut(*out, l.env.Name, *asMD); err != nil {
			return err
		}
	}
	opt := workpool.Options{Workers: *workers, Progress: os.Stderr, Name: l.env.Name}
	if *quiet || *asMD {
		opt.Progress = nil
	} else {
		fmt.Fprintf(os.Stderr, "experiment %s (%s): %s\n", l.env.Name, l.env.Mode, l.Describe())
	}
	start := time.Now() // for the last line only
	if *shardFlag != "" {
		return expRunShard(ctx, l, file, *shardFlag, *out, *asJSON || *asMD, opt)
	}
	if dir != "" && !*quiet && !*asMD {
		fmt.Fprintf(os.Stderr, "writing to %s\n", dir)
	}
	o, err := l.Run(ctx, opt)
	if err != nil {
		if fresh {
			os.Remove(dir) // the run's own directory, still empty
		}
		return err
	}
	d := delivery{dir: dir, fresh: fresh, json: *asJSON, md: *asMD, tablesOnly: name == "demo", experiment: l.env.Name, start: start}
	return d.deliver(ctx, o)
}

// checkRunFlags refuses exp run's flags that contradict each other or are
// out of range, before anything is loaded.
func checkRunFlags(name string, asJSON, asMD, seedsSet bool, seeds, workers int, set, shard bool, out string) error {
	switch {
	case asJSON && asMD:
		return fmt.Errorf("%s: --json and --md exclude each other", name)
	case seedsSet && (seeds < 1 || seeds > 10000):
		return fmt.Errorf("--seeds: %d is outside [1, 10000]", seeds)
	case workers < 0:
		return fmt.Errorf("--workers: %d is negative", workers)
	case set && shard:
		return fmt.Errorf("--set with --shard: write the change into the file, so that exp merge reads the same plan")
	}
	return checkOutDir(out)
}

// delivery is what exp run does with an outcome: where it writes and what
// it prints.
type delivery struct {
	dir        string
	fresh      bool // dir is a new results/NAME/RUN: link latest to it
	json, md   bool
	tablesOnly bool // demo: print the report's tables (what the README shows)
	experiment string
	start      time.Time // for the last line only
}

// deliver writes o's files and prints what the flags ask for.
func (d delivery) deliver(ctx context.Context, o *mode.Outcome) error {
	if d.md {
		if d.dir != "" {
			if _, _, err := writeTo(ctx, o, d.dir, d.experiment); err != nil {
				return err
			}
		}
		return results.WriteTables(os.Stdout, o.Tables)
	}
	files, err := d.write(ctx, o)
	if err != nil {
		return err
	}
	dir := d.dir
	if d.json {
		results.Stamp(o.Summary)
		data, err := results.MarshalSummary(o.Summary)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	text := o.Text
	if d.tablesOnly {
		text = mode.TablesText(o.Tables)
	}
	if err := text(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\n%d runs in %.1f s; wrote %d files to %s (open %s)\n", o.Runs, time.Since(d.start).Seconds(), len(files), dir, filepath.Join(dir, "report.md"))
	return nil
}

// write writes o's files into d.dir and, when it is a fresh run directory,
// links results/NAME/latest to it; a fresh directory left empty by a
// failed write is removed.
func (d delivery) write(ctx context.Context, o *mode.Outcome) ([]string, error) {
	_, files, err := writeTo(ctx, o, d.dir, d.experiment)
	if err != nil {
		if d.fresh {
			os.Remove(d.dir)
		}
		return nil, err
	}
	if d.fresh {
		if err := results.LinkLatest(d.dir); err != nil {
			fmt.Fprintf(os.Stderr, "hetquic: %s/%s not updated: %v\n", filepath.Dir(d.dir), results.LatestLink, err)
		}
	}
	return files, nil
}

// prepareOut is where a run writes, settled before it runs: --out (claimed:
// writable, and new, empty or this experiment's), nothing for --md without
// --out, else a fresh results/NAME/RUN (fresh: the caller links latest).
func prepareOut(out, name string, mdOnly bool) (dir string, fresh bool, err error) {
	if mdOnly && out == "" {
		return "", false, nil
	}
	return prepareOutAs(out, name, name)
}

// prepareOutAs is prepareOut for a command whose results directory,
// results/DIRNAME/RUN, is named otherwise than the experiment its
// summary.json records (ride eval: results/ride-eval, "ride eval").
func prepareOutAs(out, dirName, experiment string) (dir string, fresh bool, err error) {
	if out != "" {
		if err := results.ClaimOutDir(out, experiment, dirName); err != nil {
			return "", false, badInput(err)
		}
		return out, false, nil
	}
	dir, err = results.NewRunDir(dirName, time.Now())
	return dir, err == nil, err
}

// checkOutDir refuses an --out that cannot become a results directory (a
// regular file), before anything runs.
func checkOutDir(out string) error {
	if out == "" {
		return nil
	}
	if st, err := os.Stat(out); err == nil && !st.IsDir() {
		return fmt.Errorf("--out: %s is a file, not a directory", out)
	}
	return nil
}

// writeTo writes the outcome into out, or results/NAME when out is empty,
// and returns the directory and the files written. The files are written
// into a fresh directory beside it and then renamed into it, entry by
// entry, so a command killed while writing leaves the old results whole
// (and a .NAME.partial-* directory), never old and new files mixed. What
// the new results do not hold stays (the shards/ of exp slurm's merge).
func writeTo(ctx context.Context, o *mode.Outcome, out, name string) (string, []string, error) {
	dir := out
	if dir == "" {
		dir = filepath.Join("results", name)
	}
	if err := checkOutDir(dir); err != nil {
		return dir, nil, err
	}
	parent, base := filepath.Split(filepath.Clean(dir))
	if parent == "" {
		parent = "."
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return dir, nil, err
	}
	tmp, err := os.MkdirTemp(parent, "."+base+".partial-")
	if err != nil {
		return dir, nil, err
	}
	defer os.RemoveAll(tmp)
	files, err := o.Write(ctx, tmp)
	if err == nil {
		err = moveEntries(tmp, dir)
	}
	if err != nil {
		return dir, nil, err
	}
	for i, f := range files {
		if rel, err := filepath.Rel(tmp, f); err == nil {
			files[i] = filepath.Join(dir, rel)
		}
	}
	return dir, files, nil
}

// moveEntries renames every entry of from into to, an entry of the same
// name moved aside first and removed after.
func moveEntries(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	aside := filepath.Join(from, ".old")
	if err := os.Mkdir(aside, 0o755); err != nil {
		return err
	}
	for _, e := range entries {
		dst := filepath.Join(to, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			if err := os.Rename(dst, filepath.Join(aside, e.Name())); err != nil {
				return err
			}
		}
		if err := os.Rename(filepath.Join(from, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
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
	fmt.Printf("%s: ok (mode %s: %s)\n", file, l.env.Mode, l.Describe())
	return nil
}

// builtin is one built-in experiment.
type builtin struct {
	name, path string
	env        mode.Envelope
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
			env, err := mode.ReadEnvelope(p, data)
			if err != nil {
				return nil, err
			}
			out = append(out, builtin{strings.TrimSuffix(e.Name(), ".yaml"), p, env})
		}
	}
	return out, nil
}

func expListCmd(args []string, name, only string) error {
	fs := newFlagSet(name, "exp list [--mode MODE] [--md]", "Lists the built-in experiments: name, mode, what they reproduce.")
	m := fs.String("mode", only, "only this mode ("+strings.Join(mode.Names(), ", ")+")")
	md := fs.Bool("md", false, "a Markdown table (what docs/experiments.md pastes)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *m != "" && !slices.Contains(mode.Names(), *m) {
		return badInput(fmt.Errorf("--mode: %q is not one of %v", *m, mode.Names()))
	}
	return expList(os.Stdout, *m, *md)
}

// expList prints the built-in experiments of mode (all when empty), as
// aligned text or a Markdown table.
func expList(w io.Writer, only string, md bool) error {
	bs, err := builtins()
	if err != nil {
		return err
	}
	t := results.Table{Header: []string{"name", "mode", "file", "what"}}
	for _, b := range bs {
		if only != "" && b.env.Mode != only {
			continue
		}
		if md {
			t.Rows = append(t.Rows, []string{"`" + b.name + "`", b.env.Mode, "`" + b.path + "`", oneLine(b.env.Description)})
			continue
		}
		fmt.Fprintf(w, "%-26s %-8s %s\n", b.name, b.env.Mode, oneLine(b.env.Description))
	}
	if md {
		return results.WriteTables(w, []results.Table{t})
	}
	return nil
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
