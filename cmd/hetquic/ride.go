package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/ride"
	"github.com/hetquic/hetquic/ride/env"
	"github.com/hetquic/hetquic/ride/report"
)

func init() {
	register(command{name: "ride", summary: "RIDE 360° tile scheduling (thesis ch. 5): env server for gymnasium, evaluation", run: runRide})
}

const rideHelp = `RIDE schedules each viewed tile of a 360° video on a path of an LTE + Wi-Fi
multipath QUIC connection, or skips it (thesis chapter 5). hetquic simulates
the network; Python (python/, package hetquic_rl) trains the policy with PPO
through "ride env" and exports it for "ride eval". See docs/ride.md.`

func runRide(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "ride", rideHelp, []subcommand{
		{"eval", "evaluate RIDE (a weights file) against RR, minRTT and Peekaboo on the test video; figures and report", rideEval},
		{"env", "serve the environment on stdin/stdout (JSON lines, protocol " + env.ProtocolVersion + ")", rideEnv},
	}, args)
}

func rideEnv(_ context.Context, args []string) error {
	fs := newFlagSet("ride env", "ride env", `Serves one episode at a time over stdin/stdout, one JSON request and one
JSON response per line:
  {"op":"spec"}  {"op":"reset","seed":S,"video":V,"frames":F}  {"op":"step","action":A}  {"op":"close"}
A is -1 (skip the tile) or a path index. A bad request is answered
{"error":"..."} and the server goes on. docs/ride.md has the details.`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("ride env: unexpected argument %q", fs.Arg(0)))
	}
	return (&env.Server{}).Serve(os.Stdin, os.Stdout)
}

func rideEval(ctx context.Context, args []string) error {
	fs := newFlagSet("ride eval", "ride eval [--policy FILE] [--baselines=false] [--video V] [--frames N] [--seed S] [--workers N] [--out DIR] [--md | --json] [--quiet]",
		`Plays the test video (video 4) with RIDE's exported actor (--policy, a
hetquic-ride-mlp/1 JSON file from python -m hetquic_rl.train) and with RR,
minRTT and Peekaboo, each on the same simulated network, and writes
figures 5.7–5.10, frame_reward.csv and report.md into --out. Without
--policy only the baselines run. --md prints the two tables (markdown),
--json the per-policy summary, and neither writes files. --video 5 is the
validation video, which chooses among trained policies.`)
	policy := fs.String("policy", "", "RIDE weights (JSON); empty: baselines only")
	frames := fs.Int("frames", 0, "frames of the test video (0: all 1800)")
	seed := fs.Uint64("seed", 1, "seed of the network, the user's head movement and Peekaboo")
	out := fs.String("out", "", "output directory: new, empty or an earlier ride eval's (default results/ride-eval/RUN, linked by results/ride-eval/latest)")
	md := fs.Bool("md", false, "print the per-policy and claims tables (markdown) and write no files")
	asJSON := fs.Bool("json", false, "print the per-policy summary (JSON) and write no files")
	baselines := fs.Bool("baselines", true, "play RR, minRTT and Peekaboo too (false: only --policy, e.g. to choose among checkpoints)")
	workers := fs.Int("workers", 0, "policies played at once (default: one per CPU); results do not depend on it")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	video := fs.Int("video", env.TestVideo, fmt.Sprintf("video to play: %d test, %d validation, 0–3 training", env.TestVideo, env.ValidationVideo))
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := checkRideEvalFlags(fs.Args(), *frames, *workers, *video); err != nil {
		return badInput(err)
	}
	pols, err := ridePolicies(*policy, *baselines, *seed)
	if err != nil {
		return err
	}
	d := delivery{experiment: rideEvalName}
	if !*md && !*asJSON {
		if err := checkOutDir(*out); err != nil {
			return badInput(err)
		}
		if d.dir, d.fresh, err = prepareOutAs(*out, "ride-eval", rideEvalName); err != nil {
			return err
		}
	}
	opt := workpool.Options{Workers: *workers}
	if !*md && !*quiet {
		opt.Progress, opt.Name = os.Stderr, "ride eval"
		fmt.Fprintf(os.Stderr, "ride eval: %s on video %d, seed %d, %s\n", policyNames(pols), *video, *seed, framesText(*frames))
	}
	if d.dir != "" && !*quiet {
		fmt.Fprintf(os.Stderr, "writing to %s\n", d.dir)
	}
	ms, err := report.Evaluate(ctx, report.Config{Seed: *seed, Frames: *frames, Video: video}, pols, opt)
	if err != nil {
		if d.fresh {
			os.Remove(d.dir) // the evaluation's own directory, still empty
		}
		return err
	}
	sum := report.Summarize(results.NewHeader(rideEvalName, "ride", []uint64{*seed}), *frames, ms)
	switch {
	case *asJSON:
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(sum)
	case *md:
		return results.WriteTables(os.Stdout, report.Tables(ms))
	}
	header := fmt.Sprintf("Command: `hetquic ride eval %s`. Video %d, seed %d, frames %d (0: all).", strings.Join(args, " "), *video, *seed, *frames)
	return deliverRideEval(ctx, d, ms, &sum, header)
}

// checkRideEvalFlags refuses ride eval's operands and out-of-range flags.
func checkRideEvalFlags(operands []string, frames, workers, video int) error {
	switch {
	case len(operands) > 0:
		return fmt.Errorf("ride eval: unexpected argument %q", operands[0])
	case frames < 0:
		return fmt.Errorf("ride eval: --frames %d must be ≥ 0", frames)
	case workers < 0:
		return fmt.Errorf("ride eval: --workers %d is negative", workers)
	case video < 0 || video >= env.Videos:
		return fmt.Errorf("ride eval: --video %d: want 0…%d", video, env.Videos-1)
	}
	return nil
}

// ridePolicies are the policies ride eval plays: the actor in file (none
// when empty) and, with baselines, RR, minRTT and Peekaboo.
func ridePolicies(file string, baselines bool, seed uint64) ([]ride.Policy, error) {
	var pols []ride.Policy
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, badInput(err)
		}
		m, err := ride.ReadMLP(f)
		f.Close()
		if err != nil {
			return nil, badInput(fmt.Errorf("%s: %w", file, err))
		}
		m.Label = "ride"
		pols = append(pols, m)
	}
	if baselines {
		base, err := report.Baselines(seed)
		if err != nil {
			return nil, err
		}
		pols = append(pols, base...)
	}
	if len(pols) == 0 {
		return nil, badInput(fmt.Errorf("ride eval: --baselines=false without --policy leaves nothing to play"))
	}
	return pols, nil
}

// deliverRideEval writes the evaluation's figures, CSVs, report and
// summary.json into d's directory and prints its table.
func deliverRideEval(ctx context.Context, d delivery, ms []env.Metrics, sum *report.Summary, header string) error {
	o := &mode.Outcome{Write: func(_ context.Context, dir string) ([]string, error) {
		files, err := report.Write(dir, ms, header)
		if err != nil {
			return nil, err
		}
		f := filepath.Join(dir, "summary.json")
		return append(files, f), results.WriteSummaryFile(f, sum)
	}}
	files, err := d.write(ctx, o)
	if err != nil {
		return err
	}
	if err := results.WriteTables(os.Stdout, report.Tables(ms)); err != nil {
		return err
	}
	fmt.Printf("\nwrote %d files to %s (open %s)\n", len(files), d.dir, filepath.Join(d.dir, "report.md"))
	return nil
}

// rideEvalName is what ride eval's summary.json names as its experiment.
const rideEvalName = "ride eval"

// policyNames lists the policies an evaluation plays, for its first line.
func policyNames(pols []ride.Policy) string {
	names := make([]string, len(pols))
	for i, p := range pols {
		names[i] = p.Name()
	}
	return strings.Join(names, ", ")
}

// framesText is --frames for a reader (0 plays the whole video).
func framesText(frames int) string {
	if frames == 0 {
		return "all frames"
	}
	return fmt.Sprintf("%d frames", frames)
}
