package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/claims"
	"github.com/hetquic/hetquic/internal/results"
)

func init() {
	register(command{name: "reproduce", summary: "judge each paper's claims by its experiments: results/reproduce/RUN", run: runReproduce})
}

const reproduceHelp = `Runs the built-in experiments behind every claim of every paper hetquic
reproduces (claims/*.yaml; format in docs/claims.md) and writes one page,
DIR/index.md, and the same records as data, DIR/index.json: per claim the
paper's figure or table, the paper's number, hetquic's number, what a trivial
baseline scores, the setting and a verdict — reproduced, not reproduced,
refuted, inconclusive, not a test, not applicable or paper inconsistent — with
the reason. Each experiment's full results (report.md, summary.json, figures)
are in DIR/NAME/. Without --out, DIR is results/reproduce/RUN (RUN: the UTC
start time) and results/reproduce/latest links the newest, so an earlier
page is never overwritten; --out DIR must be new, empty or an earlier
reproduce's output.

The first line says about how long the run will take on this machine: from
the last run's times in the same output directory, else (a first run) from
the step costs the binary ships (cmd/hetquic/reproduce_costs.json, written
by "reproduce [--quick] --costs FILE" on a measuring run: each step's CPU
seconds, spread over this run's workers, or its wall seconds for the
real-time agent and real modes; a full run's step without a full
measurement is priced per point from --quick's), with the date they were
measured. --costs FILE records this run's costs there and prints them
instead of the counts. Each step prints the time spent and an estimate of
the time left. Runs go
--workers at a time: by default the cores the load average leaves free.
--quick runs the slow experiments with the fewer seeds their claims files
name and no sensitivity sweep, so the page takes minutes; what the full run
judges does not change. Each paper's baselines are calibrated first (its
claims file's calibration: entries): a claim resting on a baseline that
misses the paper's own number for it is inconclusive. --calibrate runs and
prints only those checks. --md prints the claims tables on stdout
(no timings: what a doc's generated block holds); --counts the verdict
counts per paper as a Markdown table. Exit status 1 when an experiment or a
sensitivity sweep fails or a summary lacks a claim's metric.`

func runReproduce(ctx context.Context, args []string) error {
	flags := newFlagSet("reproduce", "reproduce [--quick] [--out DIR] [--paper ID,…] [--md | --counts] [--workers N]", reproduceHelp)
	quick := flags.Bool("quick", false, "fewer seeds for the slow experiments (claims files' quick: entries)")
	outFlag := flags.String("out", "", "output directory: DIR/index.md, DIR/index.json and DIR/NAME/ per experiment (default results/reproduce/RUN, linked by results/reproduce/latest); new, empty or an earlier reproduce's")
	papers := flags.String("paper", "", "only these papers (comma-separated ids; default all)")
	md := flags.Bool("md", false, "print the claims tables on stdout instead of the verdict counts")
	counts := flags.Bool("counts", false, "print the verdict counts per paper as a Markdown table on stdout (no timings)")
	workers := flags.Int("workers", 0, "runs in parallel (default: the cores the load average leaves free, at least 1); results do not depend on it")
	claimsDir := flags.String("claims", "", "read claims from this directory instead of the built-in ones")
	calib := flags.Bool("calibrate", false, "run only what the papers' baseline calibrations read and print their tables on stdout (no page)")
	costs := flags.String("costs", "", "record each step's measured CPU and wall time as FILE's quick or full cost table (the one the binary ships is "+costsFile+") and print it on stdout")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if err := reproduceFlagsErr(flags.Args(), *md, *counts, *calib, *costs, *papers, *workers); err != nil {
		return badInput(err)
	}
	files, err := loadClaims(*claimsDir, *papers)
	if err != nil {
		return badInput(err)
	}
	runs := plan(files, *quick)
	if *calib {
		runs = calibrationOnly(runs, files)
	}
	dir, fresh, prev, err := reproduceOut(*outFlag, time.Now())
	if err != nil {
		return err
	}
	if !*calib {
		if err := pruneStale(dir, dirNames(runs)); err != nil {
			return err
		}
	}
	tree, err := materialize()
	if err != nil {
		return err
	}
	defer os.RemoveAll(tree)
	m := currentMachine(*workers)
	prog := newProgress(io.Discard, prev, runs, m.Workers, time.Now, shippedTable(), *quick)
	if !*md && !*counts {
		prog.w = os.Stderr
		prog.plan(m)
	}
	if err := runAll(ctx, runs, tree, dir, m.Workers, prog); err != nil {
		return err
	}
	if *calib {
		writeCalibrations(os.Stdout, files, runs)
		return runErrors(runs, dir)
	}
	page := judge(files, runs)
	command := "hetquic " + strings.Join(append([]string{"reproduce"}, args...), " ")
	if err := writeIndex(dir, command, m, time.Since(prog.start), page, runs, *quick); err != nil {
		return err
	}
	indexFile, jsonFile := filepath.Join(dir, "index.md"), filepath.Join(dir, "index.json")
	if fresh {
		if err := results.LinkLatest(dir); err != nil {
			fmt.Fprintf(os.Stderr, "hetquic: %s/%s not updated: %v\n", filepath.Dir(dir), results.LatestLink, err)
		}
	}
	switch {
	case *costs != "":
		if err := writeCosts(os.Stdout, *costs, command, prog.start.UTC().Format("2006-01-02"), m, runs, prog.weights, *quick); err != nil {
			return err
		}
	case *md:
		writePage(os.Stdout, page, runs, pageHead{quick: *quick})
	case *counts:
		writeCountsMD(os.Stdout, page)
	default:
		writeCounts(os.Stdout, page)
		fmt.Printf("\nwrote %s and %s in %s\n", indexFile, jsonFile, fmtDur(time.Since(prog.start)))
	}
	if n := page.count(claims.Failed); n > 0 {
		return fmt.Errorf("reproduce: %d claims could not be judged (see %s)", n, indexFile)
	}
	return runErrors(runs, indexFile)
}

// reproduceFlagsErr says what is wrong with reproduce's arguments, or nil.
func reproduceFlagsErr(rest []string, md, counts, calib bool, costs, papers string, workers int) error {
	switch {
	case len(rest) > 0:
		return fmt.Errorf("reproduce: unexpected argument %q", rest[0])
	case btoi(md)+btoi(counts)+btoi(calib)+btoi(costs != "") > 1:
		return errors.New("reproduce: --md, --counts, --calibrate and --costs exclude each other")
	case costs != "" && papers != "":
		return errors.New("reproduce: --costs records a whole run's costs, not --paper's")
	case workers < 0:
		return fmt.Errorf("--workers: %d is negative", workers)
	}
	return nil
}

// dirNames are the runs' directories under the output directory.
func dirNames(runs []claimRun) []string {
	var out []string
	for _, r := range runs {
		out = append(out, r.dirName())
	}
	return out
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// runAll runs every step in turn, each into DIR/its directory, printing
// its progress; it stops at once when ctx is cancelled.
func runAll(ctx context.Context, runs []claimRun, tree, dir string, workers int, prog *progress) error {
	for i := range runs {
		r := &runs[i]
		r.Workers = workers
		prog.step(i)
		cpu := cpuTime()
		r.run(ctx, tree, filepath.Join(dir, r.dirName()), mainRun(runs[:i], r.Name))
		r.CPU = cpuTime() - cpu
		if ctx.Err() != nil {
			return ctx.Err()
		}
		prog.finished(i, r.Elapsed)
	}
	return nil
}

// writeIndex writes the page, DIR/index.md, and its data, DIR/index.json.
func writeIndex(dir, command string, m machine, elapsed time.Duration, p page, runs []claimRun, quick bool) error {
	figs := figures(dir, runs)
	var index strings.Builder
	writePage(&index, p, runs, pageHead{quick: quick, machine: &m, figs: figs})
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "index.md"), []byte(index.String()), 0o644); err != nil {
		return err
	}
	return writeIndexJSON(filepath.Join(dir, "index.json"), command, m, elapsed, p, runs, figs)
}

// runErrors is the first run that failed, as the command's error; see
// names where its error is written.
func runErrors(runs []claimRun, see string) error {
	for _, r := range runs {
		if r.Err != nil {
			return fmt.Errorf("reproduce: %s could not be swept (see %s): %s", r.label(), see, oneLine(r.Err.Error()))
		}
	}
	return nil
}

// loadClaims reads the built-in claims (or dir's) and keeps the papers
// named in ids (comma-separated; "" keeps all).
func loadClaims(dir, ids string) ([]*claims.File, error) {
	var src fs.FS = hetquic.Files
	sub := "claims"
	if dir != "" {
		src, sub = os.DirFS(dir), "."
	}
	files, err := claims.LoadAll(src, sub)
	if err != nil || ids == "" {
		return files, err
	}
	return selectPapers(files, strings.Split(ids, ","))
}

func selectPapers(files []*claims.File, ids []string) ([]*claims.File, error) {
	var out []*claims.File
	for _, id := range ids {
		i := slices.IndexFunc(files, func(f *claims.File) bool { return f.Paper == id })
		if i < 0 {
			var have []string
			for _, f := range files {
				have = append(have, f.Paper)
			}
			return nil, fmt.Errorf("--paper: no claims for %q (have %s)", id, strings.Join(have, ", "))
		}
		out = append(out, files[i])
	}
	return out, nil
}

// plan lists the experiments of the claims, sorted, with the seeds the
// full run gives them (a claims file's full: entry, else the experiment's
// own) or --quick gives them (the smallest any claims file asks for), then
// one run per sensitivity entry (once when two files name the same
// setting). A spread entry's replicates are swept in the experiment's own
// run, its claims judged at the guess. Claims with measured values need
// no run.
func plan(files []*claims.File, quick bool) []claimRun {
	seeds, full := map[string]int{}, map[string]int{}
	for _, f := range files {
		for _, c := range f.Claims {
			if _, ok := seeds[c.Experiment]; !ok && c.Measured == nil {
				seeds[c.Experiment] = 0
			}
		}
	}
	for _, f := range files {
		for name, q := range f.Full {
			if _, ok := seeds[name]; ok {
				full[name] = max(full[name], q.Seeds)
				seeds[name] = full[name]
			}
		}
	}
	if quick {
		for _, f := range files {
			for name, q := range f.Quick {
				if s, ok := seeds[name]; ok && (s == 0 || q.Seeds < s) {
					seeds[name] = q.Seeds
				}
			}
		}
	}
	var runs []claimRun
	for name, s := range seeds {
		runs = append(runs, claimRun{Name: name, Main: true, Seeds: s, Full: full[name]})
	}
	slices.SortFunc(runs, func(a, b claimRun) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range files {
		for _, sn := range f.Sensitivity {
			runs = planSensitivity(runs, sn, seeds[sn.Experiment], full[sn.Experiment], quick)
		}
	}
	return runs
}

// planSensitivity adds sensitivity entry sn to runs: a spread entry's
// replicates become the experiment's own run; a guessed setting gets a
// sweep of its own (none under --quick), at the fewer of the entry's
// seeds and the run's (n), once when two papers name it.
func planSensitivity(runs []claimRun, sn claims.Sensitivity, n, full int, quick bool) []claimRun {
	if m := mainRun(runs, sn.Experiment); sn.Spread && m != nil && (m.Param == "" || m.Param == sn.Param) {
		// The replicates and the verdict's run are one sweep.
		m.Param, m.Vals, m.Guess = sn.Param, sn.Values, sn.Guess
		m.At = slices.Index(sn.Values, sn.Guess)
		return runs
	}
	if quick {
		return runs // --quick runs no sensitivity sweep: the page says so under each claim
	}
	if sn.Seeds > 0 && (n == 0 || sn.Seeds < n) {
		n = sn.Seeds
	}
	if r := findRun(runs, sn.Experiment, sn.Param); r != nil { // another paper's claims share it
		if n > 0 && (r.Seeds == 0 || n < r.Seeds) {
			r.Seeds = n
		}
		return runs
	}
	return append(runs, claimRun{Name: sn.Experiment, Param: sn.Param, Vals: sn.Values, Guess: sn.Guess, Seeds: n, Full: full})
}

// dirName is where a run's results go under --out.
func (r *claimRun) dirName() string {
	if r.Param == "" {
		return r.Name
	}
	return r.Name + "-sweep-" + strings.NewReplacer("[", "", "]", "", ".", "-").Replace(r.Param)
}

func (r *claimRun) label() string {
	if r.Param == "" {
		return r.Name
	}
	return r.Name + " × " + r.Param
}

// ran says what ran: "10 seeds (1–10)", "3 of the file's 10 seeds (1–3)", "one run".
func (r *claimRun) ran() string {
	switch {
	case r.Seedless:
		return "one run (the mode has no seeds)"
	case r.Seeds == 1:
		return fmt.Sprintf("1 seed (%d) of the full run's %d", r.First, r.Full)
	case r.Seeds < r.Full:
		return fmt.Sprintf("%d of the full run's %d seeds (%d–%d)", r.Seeds, r.Full, r.First, r.First+uint64(r.Seeds)-1)
	}
	return fmt.Sprintf("%d seeds (%d–%d)", r.Seeds, r.First, r.First+uint64(r.Seeds)-1)
}

type paperResult struct {
	File    *claims.File
	Results []claims.Result
	Runs    []*claimRun // the run behind each result (nil: measured)
	// Sens[i] are claim i's lines on its guessed settings.
	Sens [][]string
	// Cals are the paper's baseline calibrations, checked first.
	Cals []calLine
}

type page []paperResult

func (p page) count(v claims.Verdict) int {
	n := 0
	for _, pr := range p {
		n += pr.counts()[v]
	}
	return n
}

// mainRun is the run of experiment name whose values its claims judge.
func mainRun(runs []claimRun, name string) *claimRun {
	i := slices.IndexFunc(runs, func(r claimRun) bool { return r.Name == name && r.Main })
	if i < 0 {
		return nil
	}
	return &runs[i]
}

func findRun(runs []claimRun, name, param string) *claimRun {
	i := slices.IndexFunc(runs, func(r claimRun) bool { return r.Name == name && r.Param == param })
	if i < 0 {
		return nil
	}
	return &runs[i]
}

func judge(files []*claims.File, runs []claimRun) page {
	var p page
	for _, f := range files {
		pr := paperResult{File: f, Sens: make([][]string, len(f.Claims)), Cals: calibrate(f, runs)}
		for i := range f.Claims {
			c := &f.Claims[i]
			if c.Measured != nil {
				r := claims.JudgeValues(c, c.Measured.Values)
				r.Paper = f.Paper
				pr.Results, pr.Runs = append(pr.Results, r), append(pr.Runs, nil)
				continue
			}
			run := mainRun(runs, c.Experiment)
			r := judgeRun(c, run, run.At)
			claims.ApplyCalibrations(&r, calsAt(f, pr.Cals, run, run.At))
			r.Paper = f.Paper
			pr.Results, pr.Runs = append(pr.Results, r), append(pr.Runs, run)
			for _, sn := range f.Sensitivity {
				if sn.Experiment == c.Experiment {
					sr := findRun(runs, sn.Experiment, sn.Param)
					cals := func(k int) map[string]claims.CalResult { return calsAt(f, pr.Cals, sr, k) }
					pr.Sens[i] = append(pr.Sens[i], sensitivity(c, &sn, sr, cals))
				}
			}
		}
		p = append(p, pr)
	}
	return p
}

// judgeRun judges c on value i of run (its seeds).
func judgeRun(c *claims.Claim, run *claimRun, i int) claims.Result {
	if run.Err != nil {
		return claims.Result{Claim: c, Value: math.NaN(), CI: math.NaN(), Verdict: claims.Failed, Err: run.Err}
	}
	return claims.Judge(c, run.Summaries[i]...)
}

// sensitivity is claim c's line on one guessed setting: its verdict at
// every value of the range, and where it flips (for a spread entry: over
// the replicates, such as policies trained with other seeds).
func sensitivity(c *claims.Claim, sn *claims.Sensitivity, run *claimRun, cals func(int) map[string]claims.CalResult) string {
	head := fmt.Sprintf("sensitivity: `%s` (guessed %s", sn.Param, shortValue(sn.Guess))
	if sn.Spread {
		head = fmt.Sprintf("spread over `%s` (the experiment's %s", sn.Param, shortValue(sn.Guess))
	}
	if sn.Why != "" {
		head += "; " + strings.TrimSuffix(oneLine(sn.Why), ".")
	}
	head += ")"
	if run == nil {
		return head + ": not swept (--quick runs no sensitivity sweep; `hetquic reproduce` does)"
	}
	if run.Err != nil {
		return head + ": could not be swept: " + oneLine(run.Err.Error())
	}
	verdicts := make([]claims.Verdict, len(sn.Values))
	var at []string
	lo, hi := math.Inf(1), math.Inf(-1)
	for i, v := range sn.Values {
		r := judgeRun(c, run, i)
		claims.ApplyCalibrations(&r, cals(i))
		verdicts[i] = r.Verdict
		num := formatNum(r.Value)
		if sn.Spread && !math.IsNaN(r.CI) {
			num += fmt.Sprintf(" [%s, %s]", formatNum(r.Low()), formatNum(r.High()))
		}
		lo, hi = math.Min(lo, r.Value), math.Max(hi, r.Value)
		at = append(at, fmt.Sprintf("%s → %s (%s)", shortValue(v), num, r.Verdict))
	}
	first, last := shortValue(sn.Values[0]), shortValue(sn.Values[len(sn.Values)-1])
	summary := fmt.Sprintf("**%s** at every value %s–%s", verdicts[0], first, last)
	var flips []string
	for i := 1; i < len(verdicts); i++ {
		if verdicts[i] != verdicts[i-1] {
			flips = append(flips, fmt.Sprintf("%s → %s at %s", verdicts[i-1], verdicts[i], shortValue(sn.Values[i])))
		}
	}
	if len(flips) > 0 {
		summary = "flips: " + strings.Join(flips, ", ")
	}
	if sn.Spread {
		summary += fmt.Sprintf(", means %s … %s", formatNum(lo), formatNum(hi))
	}
	return fmt.Sprintf("%s over %s: %s [%s]", head, run.ran(), summary, strings.Join(at, "; "))
}

// shortValue is a swept value as the page prints it: a file (a policy) by
// its name without the directory and extension.
func shortValue(v string) string {
	if !strings.Contains(v, "/") {
		return v
	}
	return strings.TrimSuffix(path.Base(v), path.Ext(v))
}

// counts is the number of the paper's claims per verdict.
func (pr paperResult) counts() map[claims.Verdict]int {
	n := map[claims.Verdict]int{}
	for _, r := range pr.Results {
		n[r.Verdict]++
	}
	return n
}

func writeCounts(w io.Writer, p page) {
	fmt.Fprintf(w, "%-16s %6s", "paper", "claims")
	for _, v := range claims.Verdicts {
		fmt.Fprintf(w, " %*s", max(len(v), 5), v)
	}
	fmt.Fprintln(w)
	for _, pr := range p {
		n := pr.counts()
		fmt.Fprintf(w, "%-16s %6d", pr.File.Paper, len(pr.Results))
		for _, v := range claims.Verdicts {
			fmt.Fprintf(w, " %*d", max(len(v), 5), n[v])
		}
		fmt.Fprintln(w)
	}
}

// writeCountsMD is the counts as a Markdown table, with a total row.
func writeCountsMD(w io.Writer, p page) {
	fmt.Fprint(w, "| paper | claims |")
	for _, v := range claims.Verdicts {
		fmt.Fprintf(w, " %s |", v)
	}
	fmt.Fprint(w, "\n|---|---|"+strings.Repeat("---|", len(claims.Verdicts))+"\n")
	total, all := map[claims.Verdict]int{}, 0
	for _, pr := range p {
		n := pr.counts()
		fmt.Fprintf(w, "| %s | %d |", pr.File.Paper, len(pr.Results))
		for _, v := range claims.Verdicts {
			fmt.Fprintf(w, " %d |", n[v])
			total[v] += n[v]
		}
		all += len(pr.Results)
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "| **all** | %d |", all)
	for _, v := range claims.Verdicts {
		fmt.Fprintf(w, " %d |", total[v])
	}
	fmt.Fprintln(w)
}

// pageHead is what the full page adds to the deterministic tables: the
// machine and version (nil: the tables alone, as a doc block holds them)
// and each experiment's figure.
type pageHead struct {
	quick   bool
	machine *machine
	figs    map[string]string
}

// writePage writes the results page. With head.machine it adds the title,
// the version line, the experiments with their seeds and timings and the
// figures; without it the text is deterministic.
func writePage(w io.Writer, p page, runs []claimRun, head pageHead) {
	full := head.machine != nil
	if full {
		writeHeader(w, p, runs, head)
	}
	for _, pr := range p {
		writePaper(w, pr, head)
	}
	if full {
		fmt.Fprintf(w, "## Experiments\n\n| experiment | ran | time | results |\n|---|---|---|---|\n")
		for _, r := range runs {
			res := fmt.Sprintf("[report](%s/report.md), [summary.json](%s/summary.json)", r.dirName(), r.dirName())
			if r.Err != nil {
				res = "failed: " + cell(oneLine(r.Err.Error()))
			}
			ran := r.ran()
			if r.Param != "" {
				ran = fmt.Sprintf("%d values × %s", len(r.Vals), ran)
			}
			if r.Main && r.Param != "" {
				ran += fmt.Sprintf("; the claims judged at %s", shortValue(r.Guess))
			}
			if r.Reused {
				ran += fmt.Sprintf("; at %s, the experiment's own value, the runs above", shortValue(r.Guess))
			}
			fmt.Fprintf(w, "| %s | %s | %.1f s | %s |\n", r.label(), ran, r.Elapsed.Seconds(), res)
		}
	}
}

func writeHeader(w io.Writer, p page, runs []claimRun, head pageHead) {
	cmd := "hetquic reproduce"
	if head.quick {
		cmd += " --quick"
	}
	fmt.Fprintf(w, "# Reproducing the papers\n\nWritten by `%s` (%s). Each claim below is a paper's number, hetquic's number for the same\n"+
		"metric from the named experiment — the mean over its seeds with the 95 %% Student-t interval, cut to the metric's range — and a verdict\n"+
		"by the conditions of `claims/PAPER.yaml`: a verdict holds for every value in the interval, and a claim whose\n"+
		"interval straddles a threshold, or that rests on one run of a random experiment, is **inconclusive**. A claim whose trivial\n"+
		"baseline scores the same or passes the same test is **not a test**; one whose run lacks the effect the claim is about is\n"+
		"**not applicable**; one the paper also contradicts is **paper inconsistent** (format and verdict rules: docs/claims.md).\n"+
		"The same records as data: [index.json](index.json).\n\n", cmd, head.machine)
	writeCountsMD(w, p)
	fmt.Fprintln(w)
	var fewer []string
	for _, r := range runs {
		if r.Main && !r.Seedless && r.Seeds < r.Full {
			fewer = append(fewer, fmt.Sprintf("`%s` (%d of %d seeds)", r.Name, r.Seeds, r.Full))
		}
	}
	if head.quick {
		fmt.Fprintf(w, "**Quick run** (`--quick`): the slow experiments ran fewer seeds (below), and no sensitivity sweep ran, so no\n"+
			"verdict's sensitivity line and no calibration's search across a guessed setting is on this page; `hetquic reproduce` runs them.\n\n")
	}
	if len(fewer) > 0 {
		fmt.Fprintf(w, "**Verdicts that depend on the seed count**: these experiments ran fewer seeds than the full run — %s.\n"+
			"Their claims' intervals are wider; a decided verdict holds at the 95 %% level, but an inconclusive one may be\n"+
			"decided by `hetquic reproduce` (all seeds).\n\n", strings.Join(fewer, ", "))
	}
}

func writePaper(w io.Writer, pr paperResult, head pageHead) {
	f := pr.File
	hdr := "###"
	if head.machine != nil {
		hdr = "##"
	}
	fmt.Fprintf(w, "%s %s (`%s`)\n\n", hdr, f.Title, f.Paper)
	src := strings.TrimSuffix(oneLine(f.Citation), ".") + "."
	if f.Source != "" {
		src += " Text: " + oneLine(f.Source) + "."
	}
	fmt.Fprintf(w, "Source: %s\n\n", src)
	n := pr.counts()
	var cs []string
	for _, v := range claims.Verdicts {
		if n[v] > 0 {
			cs = append(cs, fmt.Sprintf("%d %s", n[v], v))
		}
	}
	fmt.Fprintf(w, "%d claims: %s.\n\n", len(pr.Results), strings.Join(cs, ", "))
	writeCalibration(w, pr)
	fmt.Fprintf(w, "| claim | where | paper | hetquic (mean [95 %% CI]) | trivial baseline | reproduced if | refuted if | experiment | verdict |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range pr.Results {
		c := r.Claim
		ref := "—"
		if c.Refuted != nil {
			ref = c.Refuted.String()
		}
		fmt.Fprintf(w, "| %s: %s | %s | %s | %s | %s | %s | %s | %s | **%s** |\n", c.ID, cell(c.Claim), cell(c.Where),
			cell(paperNumber(c)), cell(ourNumber(r)), cell(baseNumber(r)), cell(c.Reproduced.String()), cell(ref), c.Experiment, r.Verdict)
	}
	fmt.Fprintln(w)
	shown := map[string]bool{}
	for i, r := range pr.Results {
		fmt.Fprintf(w, "- **%s** — %s\n", r.Claim.ID, strings.Join(explain(r, pr.Runs[i]), "; "))
		for _, s := range pr.Sens[i] {
			fmt.Fprintf(w, "  - %s\n", s)
		}
		if fig := head.figs[r.Claim.Experiment]; fig != "" && !shown[fig] {
			shown[fig] = true
			caption := r.Claim.Experiment + ": its figure"
			if path.Base(fig) == "sweep.png" {
				caption = r.Claim.Experiment + ": its main metric per seed, per variant (the seed sweep's figure)"
			}
			fmt.Fprintf(w, "\n  *%s:*\n\n  ![%s](%s)\n\n", caption, caption, fig)
		}
	}
	fmt.Fprintln(w)
	if len(f.Unclaimed) > 0 {
		fmt.Fprintf(w, "Results of the paper without a claim here:\n\n")
		for _, u := range f.Unclaimed {
			fmt.Fprintf(w, "- %s: %s — %s\n", oneLine(u.Where), strings.TrimSuffix(oneLine(u.What), "."), strings.TrimSuffix(oneLine(u.Why), ".")+".")
		}
		fmt.Fprintln(w)
	}
}

// baseNumber is the trivial baseline's score, "—" for a claim without one.
func baseNumber(r claims.Result) string {
	b := r.Claim.Baseline
	if b == nil {
		return "—"
	}
	if r.Base == nil {
		return oneLine(b.What)
	}
	v := formatNum(r.Base.Value)
	if r.Base.Lo != r.Base.Hi {
		v += fmt.Sprintf(" [%s, %s]", formatNum(r.Base.Lo), formatNum(r.Base.Hi))
	}
	return oneLine(b.What) + ": " + withUnit(v, r.Claim.Unit)
}

// explain is a claim's line under the table: the setting, what ran and
// why the verdict is what it is, from the numbers (no fixed text that a
// run with other seeds could contradict), then the claims file's note.
func explain(r claims.Result, run *claimRun) []string {
	c := r.Claim
	var parts []string
	if c.Setting != "" {
		parts = append(parts, "setting: "+strings.TrimSuffix(oneLine(c.Setting), "."))
	}
	switch {
	case c.Measured != nil:
		m := c.Measured
		s := fmt.Sprintf("measured %s by `%s`", m.Date, oneLine(m.Command))
		if m.Machine != "" {
			s += " (" + oneLine(m.Machine) + ")"
		}
		parts = append(parts, fmt.Sprintf("%s, %d runs", s, len(m.Values)))
	case run != nil:
		parts = append(parts, "hetquic ran "+run.ran())
	}
	if r.Err != nil {
		return append(parts, "error: "+oneLine(r.Err.Error()))
	}
	parts = append(parts, reason(r))
	if c.Note != "" && r.Verdict != claims.Reproduced {
		parts = append(parts, "note: "+strings.TrimSuffix(oneLine(c.Note), "."))
	}
	return parts
}

// reason says, from the interval, why the verdict is what it is.
func reason(r claims.Result) string {
	c := r.Claim
	iv, in := "its value "+formatNum(r.Value), "satisfies"
	if c.Deterministic && math.IsNaN(r.CI) {
		iv = "its value " + formatNum(r.Value) + " (deterministic: one run is the value)"
	}
	if !math.IsNaN(r.CI) {
		iv, in = fmt.Sprintf("its 95 %% interval [%s, %s]", formatNum(r.Low()), formatNum(r.High())), "is everywhere"
	}
	why := strings.Join(r.Why, "; ")
	switch r.Verdict {
	case claims.NotATest, claims.NotApplicable, claims.PaperInconsistent:
		return fmt.Sprintf("%s: %s (by the claim's conditions alone, %s gives %s)", r.Verdict, why, strings.TrimPrefix(iv, "its "), r.Own)
	case claims.Inconclusive:
		if why != "" {
			return fmt.Sprintf("inconclusive: %s (by the claim's conditions alone, %s gives %s)", why, strings.TrimPrefix(iv, "its "), r.Own)
		}
	}
	switch r.Verdict {
	case claims.Refuted:
		return fmt.Sprintf("refuted: %s lies where the claim is refuted (%s)", iv, c.Refuted.String())
	case claims.Reproduced:
		return fmt.Sprintf("reproduced: %s %s %s", iv, in, c.Reproduced.String())
	case claims.Inconclusive:
		return fmt.Sprintf("inconclusive: %s straddles a threshold (reproduced if %s%s)", iv, c.Reproduced.String(), refutedIf(c))
	}
	return fmt.Sprintf("not reproduced: %s is outside both reproduced if %s%s", iv, c.Reproduced.String(), refutedIf(c))
}

func refutedIf(c *claims.Claim) string {
	if c.Refuted == nil {
		return ""
	}
	return "; refuted if " + c.Refuted.String()
}

func paperNumber(c *claims.Claim) string {
	if c.PaperText != "" {
		return c.PaperText
	}
	return withUnit(formatNum(*c.PaperValue), c.Unit)
}

func ourNumber(r claims.Result) string {
	if r.Err != nil {
		return "—"
	}
	v := formatNum(r.Value)
	switch {
	case !math.IsNaN(r.CI):
		v += fmt.Sprintf(" [%s, %s]", formatNum(r.Low()), formatNum(r.High()))
	case r.Claim.Deterministic:
		v += " (deterministic)"
	default:
		v += " (one run)"
	}
	return withUnit(v, r.Claim.Unit)
}

func withUnit(v, unit string) string {
	if unit == "" {
		return v
	}
	return v + " " + unit
}

// formatNum prints four significant digits (what the summaries' seed-to-seed
// noise supports), without an exponent up to a million.
func formatNum(v float64) string {
	if a := math.Abs(v); a >= 1000 && a < 1e6 {
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// cell makes text safe inside a Markdown table cell.
func cell(s string) string { return strings.ReplaceAll(oneLine(s), "|", `\|`) }
