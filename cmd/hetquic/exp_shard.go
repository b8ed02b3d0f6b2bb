package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/workpool"
)

// expRunShard is exp run --shard: the runs of one shard, written to out for
// exp merge; a mode without independent runs (agent) says why it has none.
func expRunShard(ctx context.Context, l *loaded, file, shardFlag, out string, printing bool, opt workpool.Options) error {
	shard, err := sweep.ParseShard(shardFlag)
	if err != nil {
		return badInput(err)
	}
	sh, err := l.sharded()
	if err != nil {
		return badInput(fmt.Errorf("--shard: %w", err))
	}
	if out == "" || printing {
		return badInput(fmt.Errorf("--shard writes partial results: give --out, and no --json or --md"))
	}
	start := time.Now()
	n, err := sh.RunShard(ctx, shard, opt, out, file)
	if err != nil {
		return err
	}
	if opt.Progress != nil {
		fmt.Fprintf(os.Stderr, "shard %s: %d of %d runs in %.1f s; wrote %s (merge with hetquic exp merge)\n",
			shard, n, sh.Runs(), time.Since(start).Seconds(), out)
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
	out := fs.String("out", "", "output directory: new, empty or an earlier result of the experiment (default results/NAME/RUN, linked by results/NAME/latest)")
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
	sh, err := l.sharded()
	if err != nil {
		return badInput(fmt.Errorf("exp merge: %s: %w", spec, err))
	}
	if seeds > 0 {
		if err := sh.SetSeeds(seeds); err != nil { // the shards' seeds (exp run --seeds)
			return badInput(err)
		}
	}
	if err := checkOutDir(*out); err != nil {
		return badInput(err)
	}
	o, err := sh.Merge(ctx, dirs, *workers)
	if errors.As(err, new(mode.InputError)) {
		return badInput(err)
	} else if err != nil {
		return err
	}
	d := delivery{experiment: l.env.Name}
	if d.dir, d.fresh, err = prepareOut(*out, l.env.Name, false); err != nil {
		return err
	}
	files, err := d.write(ctx, o)
	if err != nil {
		return err
	}
	if err := o.Text(os.Stdout); err != nil {
		return err
	}
	fmt.Printf("\nmerged %d shard directories, %d runs in %.1f s; wrote %d files to %s\n", len(dirs), o.Runs, time.Since(start).Seconds(), len(files), d.dir)
	return nil
}

// expSlurm prints a job-array script for HPC clusters.
func expSlurm(_ context.Context, args []string) error {
	fs := newFlagSet("exp slurm", "exp slurm FILE|NAME --shards N [--out DIR] [--hetquic PATH] [--partition P] [--time T] [--mem-mb M]",
		"Prints a Slurm job-array script: one array task per shard (exp run --shard), and,\n"+
			"submitted again with MERGE=1 after the array, exp merge. The script's header says how.")
	shards := fs.Int("shards", 0, "number of shards (array tasks)")
	out := fs.String("out", "", "results directory as the compute nodes see it (default results/NAME/RUN, RUN the time the script is written)")
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
	sh, err := l.sharded()
	if err != nil {
		return badInput(fmt.Errorf("exp slurm: %w", err))
	}
	total := sh.Runs()
	if *bin == "" {
		if *bin, err = os.Executable(); err != nil {
			return err
		}
	}
	if *out == "" { // a run directory of its own, named when the script is written
		*out = filepath.Join("results", l.env.Name, time.Now().UTC().Format(results.RunStampLayout))
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
