package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/runner"
	"github.com/hetquic/hetquic/sim/svc"
)

// qcmabOperand returns the experiment operand of "exp run" args when it
// names a chapter-4 (QC-MAB) experiment — a built-in one, or a file named
// qcmab-*.yaml — which runs on the simulator's video model (sim/svc)
// rather than on the PCM experiment model.
func qcmabOperand(args []string) (string, bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--out" || a == "-out" || a == "--workers" || a == "-workers" || a == "--seeds" || a == "-seeds":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a, svc.IsBuiltin(a) || strings.HasPrefix(filepath.Base(a), "qcmab-") && strings.HasSuffix(a, ".yaml")
		}
	}
	return "", false
}

const qcmabUsage = `exp run qcmab-NAME|qcmab-FILE.yaml [--seeds N] [--out DIR] [--workers N] [--json | --md] [--quiet]`

// loadQCMAB loads a built-in chapter-4 experiment or a qcmab-*.yaml file.
func loadQCMAB(name string) (*svc.Spec, error) {
	if svc.IsBuiltin(name) {
		return svc.LoadBuiltin(name)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	return svc.Parse(name, data)
}

// parseQCMAB parses the flags and the experiment operand and loads it.
func parseQCMAB(fs *flag.FlagSet, args []string) (*svc.Spec, string, error) {
	name, err := parseWithOperand(fs, args, "experiment name")
	if err != nil {
		return nil, "", err
	}
	spec, err := loadQCMAB(name)
	return spec, name, badInput(err)
}

// qcmabValidate is "exp validate qcmab-…".
func qcmabValidate(args []string) error {
	fs := newFlagSet("exp validate", "exp validate qcmab-NAME|qcmab-FILE.yaml", "Loads a chapter-4 experiment and reports the first problem.")
	spec, name, err := parseQCMAB(fs, args)
	if err != nil {
		return err
	}
	fmt.Printf("%s: ok (mode sim: qcmab video, %d variants × %d seeds, %g s each)\n", name, len(spec.Variants), spec.Seeds, spec.DurationS)
	return nil
}

// qcmabRun is "exp run qcmab-…": every variant on every seed, summary.json,
// rows.csv, figures (PNG+SVG) and report.md; --md prints only the tables.
func qcmabRun(ctx context.Context, args []string) error {
	fs := newFlagSet("exp run", qcmabUsage, "Runs a thesis chapter-4 experiment (QC-MAB, sim/svc; see qcmab/README.md).")
	out := fs.String("out", "", "output directory (default results/NAME)")
	workers := fs.Int("workers", 0, "runs in parallel (default: one per CPU); results do not depend on it")
	seeds := fs.Int("seeds", 0, "seeds (default: the experiment's)")
	asJSON := fs.Bool("json", false, "print summary.json to stdout instead of the table")
	asMD := fs.Bool("md", false, "print the report's Markdown tables to stdout and write no files unless --out is given")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	spec, _, err := parseQCMAB(fs, args)
	if err != nil {
		return err
	}
	if *seeds < 0 || *seeds > 1000 {
		return badInput(fmt.Errorf("exp run: --seeds %d, want 1–1000", *seeds))
	}
	if *seeds > 0 {
		spec.Seeds = *seeds
	}
	if *asJSON && *asMD {
		return badInput(fmt.Errorf("exp run: --json and --md exclude each other"))
	}
	var progress io.Writer = os.Stderr
	if *quiet || *asMD || *asJSON {
		progress = nil
	}
	sum, err := svc.Execute(ctx, spec, runner.Options{Workers: *workers, Progress: progress})
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" && !*asMD {
		dir = filepath.Join("results", spec.Name)
	}
	if dir != "" {
		if err := svc.WriteAll(dir, spec, sum); err != nil {
			return err
		}
	}
	switch {
	case *asMD:
		return results.WriteTables(os.Stdout, sum.Tables())
	case *asJSON:
		data, err := results.MarshalSummary(sum)
		if err != nil {
			return err
		}
		_, err = os.Stdout.Write(data)
		return err
	}
	if err := results.WriteTables(os.Stdout, sum.Tables()); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s\n", svc.ReportPath(dir))
	return nil
}
