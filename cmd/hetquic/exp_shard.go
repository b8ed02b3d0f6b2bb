package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/experiment/realenv"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/internal/sweep"
	rideenv "github.com/hetquic/hetquic/ride/env"
	ridereport "github.com/hetquic/hetquic/ride/report"
	simexp "github.com/hetquic/hetquic/sim/exp"
	"github.com/hetquic/hetquic/sim/svc"
)

// expRunShard is exp run --shard: the runs of one shard, written to out for
// exp merge. Only modes offline, trace and real have runs to shard.
func expRunShard(ctx context.Context, l *loaded, file, shardFlag, out string, printing bool, opt runner.Options) error {
	shard, err := sweep.ParseShard(shardFlag)
	if err != nil {
		return badInput(err)
	}
	total, ok := l.planRuns()
	if !ok {
		return badInput(fmt.Errorf("--shard: %w", l.noShard()))
	}
	if out == "" || printing {
		return badInput(fmt.Errorf("--shard writes partial results: give --out, and no --json or --md"))
	}
	start := time.Now()
	n, err := l.runShardTo(ctx, shard, opt, out, file)
	if err != nil {
		return err
	}
	if opt.Progress != nil {
		fmt.Fprintf(os.Stderr, "shard %s: %d of %d runs in %.1f s; wrote %s (merge with hetquic exp merge)\n",
			shard, n, total, time.Since(start).Seconds(), out)
	}
	return nil
}

// expMerge joins shards written by exp run --shard. The result is the same,
// file for file, as one process running every shard would have written.
func expMerge(ctx context.Context, args []string) error {
	fs := newFlagSet("exp merge", "exp merge [--out DIR] [--spec FILE|NAME] SHARD_DIR…",
		"Joins the partial results of `hetquic exp run SPEC --shard i/n --out SHARD_DIR` into\n"+
			"the summary, CSV, figures and report one process would have written. A shard\n"+
			"given twice counts once; a missing run is an error naming it.")
	out := fs.String("out", "", "output directory (default results/NAME)")
	specFlag := fs.String("spec", "", "the experiment (default: as the shards name it)")
	workers := fs.Int("workers", 0, "parallelism for what merging recomputes (real mode's offline twin)")
	if err := parseFlagsAny(fs, args); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return badInput(fmt.Errorf("exp merge: no shard directories"))
	}
	h, err := sweep.ReadHeader(dirs[0])
	if err != nil {
		return badInput(err)
	}
	spec, seeds := cmp.Or(*specFlag, h.Spec), h.Seeds
	start := time.Now()
	l, err := loadExperiment(spec)
	if err != nil {
		return badInput(err)
	}
	if _, ok := l.planRuns(); !ok {
		return badInput(fmt.Errorf("exp merge: %s: %w", spec, l.noShard()))
	}
	if seeds > 0 {
		if err := l.setSeeds(seeds); err != nil { // the shards' seeds (exp run --seeds)
			return badInput(err)
		}
	}
	o, err := l.merge(ctx, dirs, *workers)
	if err != nil {
		return err
	}
	dir, files, err := o.writeTo(*out, l.env.Name)
	if err != nil {
		return err
	}
	if err := o.text(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nmerged %d shard directories, %d runs in %.1f s; wrote %d files to %s\n", len(dirs), o.runs, time.Since(start).Seconds(), len(files), dir)
	return nil
}

// expSlurm prints a job-array script for HPC clusters.
func expSlurm(_ context.Context, args []string) error {
	fs := newFlagSet("exp slurm", "exp slurm FILE|NAME --shards N [--out DIR] [--hetquic PATH] [--partition P] [--time T] [--mem-mb M]",
		"Prints a Slurm job-array script: one array task per shard (exp run --shard), and,\n"+
			"submitted again with MERGE=1 after the array, exp merge. The script's header says how.")
	shards := fs.Int("shards", 0, "number of shards (array tasks)")
	out := fs.String("out", "", "results directory as the compute nodes see it (default results/NAME)")
	bin := fs.String("hetquic", "", "the hetquic binary as the compute nodes see it (default: this one)")
	partition := fs.String("partition", "", "#SBATCH --partition (default: the site's)")
	limit := fs.String("time", "", "#SBATCH --time per shard, e.g. 00:30:00 (default: the site's)")
	mem := fs.Int("mem-mb", 0, "#SBATCH --mem in MB (default: the site's)")
	file, err := parseWithOperand(fs, args, "experiment file or name")
	if err != nil {
		return err
	}
	l, err := loadExperiment(file)
	if err != nil {
		return badInput(err)
	}
	total, ok := l.planRuns()
	if !ok {
		return badInput(fmt.Errorf("exp slurm: %w", l.noShard()))
	}
	if *bin == "" {
		if *bin, err = os.Executable(); err != nil {
			return err
		}
	}
	if *out == "" {
		*out = filepath.Join("results", l.env.Name)
	}
	if *shards > total {
		return badInput(fmt.Errorf("exp slurm: --shards %d is more than the experiment's %d runs", *shards, total))
	}
	script, err := sweep.Slurm(sweep.SlurmJob{Spec: file, Shards: *shards, Out: *out, Binary: *bin, Partition: *partition, Time: *limit, MemMB: *mem})
	if err != nil {
		return badInput(err)
	}
	_, err = os.Stdout.WriteString(script)
	return err
}

// shardModes are the modes whose runs shard (exp run --shard, exp merge,
// exp slurm, a sweep: block): docs/sweeps.md.
const shardModes = "offline, trace, real, sim, video and ride"

// noShard says why the experiment's mode does not shard.
func (l *loaded) noShard() error {
	why := "it has no independent runs"
	if l.env.Mode == experiment.ModeAgent {
		why = "it runs real agents on loopback one at a time and times that one network, so its runs cannot run apart"
	}
	return fmt.Errorf("mode %s does not shard or sweep: %s (modes %s do)", l.env.Mode, why, shardModes)
}

// planRuns reports whether the experiment's mode has runs to shard and how
// many it has.
func (l *loaded) planRuns() (int, bool) {
	switch {
	case l.plan != nil:
		return l.plan.Runs(), true
	case l.simPlan != nil:
		return l.simPlan.Runs(), true
	case l.videoPlan != nil:
		return l.videoPlan.Runs(), true
	case l.ridePlan != nil:
		return l.ridePlan.Runs(), true
	}
	return 0, false
}

// runPlan runs every run of a pcm, simulator or video experiment in this
// process.
func (l *loaded) runPlan(ctx context.Context, opt runner.Options) (*outcome, error) {
	if l.ridePlan != nil {
		runs, err := ridereport.RunShard(ctx, l.ridePlan, sweep.All, opt)
		if err != nil {
			return nil, err
		}
		return l.assembleRide(runs)
	}
	if l.videoPlan != nil {
		runs, err := svc.RunShard(ctx, l.videoPlan, sweep.All, opt)
		if err != nil {
			return nil, err
		}
		return l.assembleVideo(runs)
	}
	if l.simPlan != nil {
		runs, err := simexp.RunShard(ctx, l.simPlan, sweep.All, opt.Workers, opt.Progress)
		if err != nil {
			return nil, err
		}
		return l.assembleSim(runs)
	}
	part, err := l.runPCMShard(ctx, sweep.All, opt)
	if err != nil {
		return nil, err
	}
	return l.assemblePCM(ctx, part.Runs, opt.Workers)
}

// runShardTo runs the runs that shard owns and writes them to dir for exp
// merge; spec is the experiment as named on the command line. It returns
// how many runs it wrote.
func (l *loaded) runShardTo(ctx context.Context, shard sweep.Shard, opt runner.Options, dir, spec string) (int, error) {
	if l.ridePlan != nil {
		runs, err := ridereport.RunShard(ctx, l.ridePlan, shard, opt)
		if err != nil {
			return 0, err
		}
		return len(runs), ridereport.WritePartial(dir, spec, l.ridePlan, shard, runs)
	}
	if l.videoPlan != nil {
		runs, err := svc.RunShard(ctx, l.videoPlan, shard, opt)
		if err != nil {
			return 0, err
		}
		return len(runs), svc.WritePartial(dir, spec, l.videoPlan, shard, runs)
	}
	if l.simPlan != nil {
		runs, err := simexp.RunShard(ctx, l.simPlan, shard, opt.Workers, opt.Progress)
		if err != nil {
			return 0, err
		}
		return len(runs), simexp.WritePartial(dir, spec, l.simPlan, shard, runs)
	}
	part, err := l.runPCMShard(ctx, shard, opt)
	if err != nil {
		return 0, err
	}
	part.Spec = spec
	return len(part.Runs), experiment.WritePartial(dir, part)
}

// merge reads the shards in dirs and assembles the experiment's outcome.
func (l *loaded) merge(ctx context.Context, dirs []string, workers int) (*outcome, error) {
	if l.ridePlan != nil {
		runs, err := ridereport.ReadPartials(l.ridePlan, dirs)
		if err != nil {
			return nil, badInput(err)
		}
		return l.assembleRide(runs)
	}
	if l.videoPlan != nil {
		runs, err := svc.ReadPartials(l.videoPlan, dirs)
		if err != nil {
			return nil, badInput(err)
		}
		return l.assembleVideo(runs)
	}
	if l.simPlan != nil {
		runs, err := simexp.ReadPartials(l.simPlan, dirs)
		if err != nil {
			return nil, badInput(err)
		}
		return l.assembleSim(runs)
	}
	runs, err := experiment.ReadPartials(l.plan, dirs)
	if err != nil {
		return nil, badInput(err)
	}
	return l.assemblePCM(ctx, runs, workers)
}

// runPCMShard runs the part of a pcm experiment's runs that shard owns.
func (l *loaded) runPCMShard(ctx context.Context, shard sweep.Shard, opt runner.Options) (*experiment.Partial, error) {
	newEnv := experiment.LocalEnv
	if l.pcm.Mode == experiment.ModeReal {
		newEnv = realenv.NewEnv
	}
	return experiment.ExecuteShard(ctx, l.plan, shard, opt, newEnv)
}

// assemblePCM turns every run of a pcm experiment (from one process or
// merged shards) into its outcome.
func (l *loaded) assemblePCM(ctx context.Context, runs map[int]*experiment.Run, workers int) (*outcome, error) {
	res, err := l.plan.Assemble(runs)
	if err != nil {
		return nil, err
	}
	if l.pcm.Mode == experiment.ModeReal {
		for _, r := range res {
			if err := realenv.AddOffline(ctx, r, workers); err != nil {
				return nil, err
			}
		}
	}
	o := &outcome{runs: l.plan.Runs(), write: func(dir string) ([]string, error) { return experiment.WritePlan(dir, l.plan, res) }}
	if l.plan.Swept {
		sum, err := experiment.SummarizePlan(l.plan, res)
		if err != nil {
			return nil, err
		}
		o.tables, o.summary = []results.Table{experiment.SweepOutcome(l.plan, sum).Table()}, sum
		o.text = func(w io.Writer) error { return results.WriteTables(w, o.tables) }
		return o, nil
	}
	sum := experiment.Summarize(res[0])
	o.tables, o.summary, o.text = sum.Tables(), sum, sum.WriteTable
	return o, nil
}

// assembleSim turns every run of a simulator experiment into its outcome.
func (l *loaded) assembleSim(runs map[int]*simexp.RunResult) (*outcome, error) {
	p := l.simPlan
	res, err := p.Assemble(runs)
	if err != nil {
		return nil, err
	}
	o := &outcome{runs: p.Runs(), write: func(dir string) ([]string, error) { return simexp.WritePlan(dir, p, res) }}
	if p.Swept {
		sum := simexp.SummarizePlan(p, res)
		o.tables, o.summary = []results.Table{simexp.SweepOutcome(p, sum).Table()}, sum
		o.text = func(w io.Writer) error { return results.WriteTables(w, o.tables) }
		return o, nil
	}
	sf := res[0].SummaryFile()
	o.tables, o.summary = simexp.Tables(l.sim, sf.Summaries), sf
	o.text = func(w io.Writer) error { return simText(w, sf.Summaries) }
	return o, nil
}

// assembleVideo turns every run of a video (QC-MAB) experiment into its
// outcome.
func (l *loaded) assembleVideo(runs map[int]*svc.Result) (*outcome, error) {
	p := l.videoPlan
	sums, err := p.Assemble(runs)
	if err != nil {
		return nil, err
	}
	o := &outcome{runs: p.Runs(), write: func(dir string) ([]string, error) { return svc.WritePlan(dir, p, sums) }}
	if p.Swept {
		sum := svc.SummarizePlan(p, sums)
		o.tables, o.summary = []results.Table{svc.SweepOutcome(p, sum).Table()}, sum
	} else {
		o.tables, o.summary = sums[0].Tables(), sums[0]
	}
	o.text = func(w io.Writer) error { return results.WriteTables(w, o.tables) }
	return o, nil
}

// assembleRide turns every run of a ride evaluation into its outcome.
func (l *loaded) assembleRide(runs map[int]*rideenv.Metrics) (*outcome, error) {
	p := l.ridePlan
	ms, err := p.Assemble(runs)
	if err != nil {
		return nil, err
	}
	o := &outcome{runs: p.Runs(), write: func(dir string) ([]string, error) { return ridereport.WritePlan(dir, p, ms) }}
	if p.Swept {
		sum := ridereport.SummarizePlan(p, ms)
		o.tables, o.summary = []results.Table{ridereport.SweepOutcome(p, sum).Table()}, sum
	} else {
		sum := p.Summary(0, ms[0])
		o.tables, o.summary = ridereport.Tables(ms[0]), &sum
	}
	o.text = func(w io.Writer) error { return results.WriteTables(w, o.tables) }
	return o, nil
}
