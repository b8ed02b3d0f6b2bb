package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hetquic/hetquic/experiment"
	"github.com/hetquic/hetquic/experiment/sweep"
)

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
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	asMD := fs.Bool("md", false, "print the report's Markdown tables to stdout")
	if err := parseFlagsAny(fs, args); err != nil {
		return err
	}
	dirs := fs.Args()
	if len(dirs) == 0 {
		return badInput(fmt.Errorf("exp merge: no shard directories"))
	}
	spec := *specFlag
	if spec == "" {
		var err error
		if spec, err = experiment.PartialSpec(dirs[0]); err != nil {
			return badInput(err)
		}
	}
	start := time.Now()
	plan, err := loadPlan(spec)
	if err != nil {
		return badInput(err)
	}
	runs, err := experiment.ReadPartials(plan, dirs)
	if err != nil {
		return badInput(err)
	}
	res, err := plan.Assemble(ctx, runs, *workers)
	if err != nil {
		return err
	}
	return writePlan(plan, res, *out, *asJSON, *asMD, time.Since(start))
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
	plan, err := loadPlan(file)
	if err != nil {
		return badInput(err)
	}
	if *bin == "" {
		if *bin, err = os.Executable(); err != nil {
			return err
		}
	}
	if *out == "" {
		*out = filepath.Join("results", plan.Name)
	}
	if *shards > plan.Runs() {
		return badInput(fmt.Errorf("exp slurm: --shards %d is more than the experiment's %d runs", *shards, plan.Runs()))
	}
	script, err := sweep.Slurm(sweep.SlurmJob{Spec: file, Shards: *shards, Out: *out, Binary: *bin, Partition: *partition, Time: *limit, MemMB: *mem})
	if err != nil {
		return badInput(err)
	}
	_, err = os.Stdout.WriteString(script)
	return err
}
