package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/claims"
)

func init() {
	register(command{name: "reproduce", summary: "run every paper's experiments and judge each claim: results/index.md", run: runReproduce})
}

const reproduceHelp = `Runs the built-in experiments behind every claim of every paper hetquic
reproduces (claims/*.yaml; format in docs/claims.md) and writes one page,
DIR/index.md: per claim the paper's figure or table, the paper's number,
hetquic's number, the setting and a verdict — reproduced, not reproduced or
refuted — with the reason where one is known. Each experiment's full results
(report.md, summary.json, figures) are in DIR/NAME/.

--quick runs the slow experiments with the fewer seeds their claims files
name, so the page takes minutes. --md prints the claims tables on stdout
(no timings: what a doc's generated block holds). Exit status 1 when an
experiment fails or a summary lacks a claim's metric.`

func runReproduce(ctx context.Context, args []string) error {
	flags := newFlagSet("reproduce", "reproduce [--quick] [--out DIR] [--paper ID,…] [--md]", reproduceHelp)
	quick := flags.Bool("quick", false, "fewer seeds for the slow experiments (claims files' quick: entries)")
	out := flags.String("out", "results", "output directory: DIR/index.md and DIR/NAME/ per experiment")
	papers := flags.String("paper", "", "only these papers (comma-separated ids; default all)")
	md := flags.Bool("md", false, "print the claims tables on stdout instead of the verdict counts")
	claimsDir := flags.String("claims", "", "read claims from this directory instead of the built-in ones")
	if err := parseFlags(flags, args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return badInput(fmt.Errorf("reproduce: unexpected argument %q", flags.Arg(0)))
	}
	var src fs.FS = hetquic.Files
	dir := "claims"
	if *claimsDir != "" {
		src, dir = os.DirFS(*claimsDir), "."
	}
	files, err := claims.LoadAll(src, dir)
	if err != nil {
		return badInput(err)
	}
	if *papers != "" {
		files, err = selectPapers(files, strings.Split(*papers, ","))
		if err != nil {
			return badInput(err)
		}
	}
	runs := plan(files, *quick)
	for i := range runs {
		r := &runs[i]
		if !*md {
			fmt.Fprintf(os.Stderr, "reproduce: %s (%d of %d)…\n", r.Name, i+1, len(runs))
		}
		r.run(ctx, filepath.Join(*out, r.Name))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	page := judge(files, runs)
	var index strings.Builder
	writePage(&index, page, runs, *quick, true)
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	indexFile := filepath.Join(*out, "index.md")
	if err := os.WriteFile(indexFile, []byte(index.String()), 0o644); err != nil {
		return err
	}
	if *md {
		writePage(os.Stdout, page, runs, *quick, false)
	} else {
		writeCounts(os.Stdout, page)
		fmt.Printf("\nwrote %s\n", indexFile)
	}
	if n := page.count(claims.Failed); n > 0 {
		return fmt.Errorf("reproduce: %d claims could not be judged (see %s)", n, indexFile)
	}
	return nil
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

// claimRun is one experiment that reproduce runs: once, whatever the number
// of claims that read its summary.
type claimRun struct {
	Name    string
	Seeds   int // 0: the experiment's own
	Summary any
	Err     error
	Elapsed time.Duration
}

// plan lists the experiments of the claims, sorted, with the seeds --quick
// gives them (the smallest any claims file asks for).
func plan(files []*claims.File, quick bool) []claimRun {
	seeds := map[string]int{}
	for _, f := range files {
		for _, c := range f.Claims {
			if _, ok := seeds[c.Experiment]; !ok {
				seeds[c.Experiment] = 0
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
		runs = append(runs, claimRun{Name: name, Seeds: s})
	}
	slices.SortFunc(runs, func(a, b claimRun) int { return strings.Compare(a.Name, b.Name) })
	return runs
}

// run runs the experiment through the CLI's "exp run" and reads its summary.json.
func (r *claimRun) run(ctx context.Context, dir string) {
	args := []string{"exp", "run", r.Name, "--out", dir, "--quiet"}
	if r.Seeds > 0 {
		args = append(args, "--seeds", strconv.Itoa(r.Seeds))
	}
	start := time.Now()
	_, err := captureOutput(func() error { return dispatch(ctx, args) })
	r.Elapsed = time.Since(start)
	if err != nil {
		r.Err = fmt.Errorf("hetquic %s: %w", strings.Join(args, " "), err)
		return
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		r.Err = err
		return
	}
	if err := json.Unmarshal(data, &r.Summary); err != nil {
		r.Err = fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
}

type paperResult struct {
	File    *claims.File
	Results []claims.Result
}

type page []paperResult

func (p page) count(v claims.Verdict) int {
	n := 0
	for _, pr := range p {
		n += pr.counts()[v]
	}
	return n
}

func judge(files []*claims.File, runs []claimRun) page {
	var p page
	for _, f := range files {
		pr := paperResult{File: f}
		for i := range f.Claims {
			c := &f.Claims[i]
			run := runs[slices.IndexFunc(runs, func(r claimRun) bool { return r.Name == c.Experiment })]
			if run.Err != nil {
				pr.Results = append(pr.Results, claims.Result{Paper: f.Paper, Claim: c, Value: math.NaN(), Verdict: claims.Failed, Err: run.Err})
				continue
			}
			r := claims.Judge(c, run.Summary)
			r.Paper = f.Paper
			pr.Results = append(pr.Results, r)
		}
		p = append(p, pr)
	}
	return p
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
	fmt.Fprintf(w, "%-16s %6s %10s %14s %7s %5s\n", "paper", "claims", "reproduced", "not reproduced", "refuted", "error")
	for _, pr := range p {
		n := pr.counts()
		fmt.Fprintf(w, "%-16s %6d %10d %14d %7d %5d\n", pr.File.Paper, len(pr.Results),
			n[claims.Reproduced], n[claims.NotReproduced], n[claims.Refuted], n[claims.Failed])
	}
}

// writePage writes the results page. full adds the title, the experiments
// with their seeds and timings; without it the text is deterministic.
func writePage(w io.Writer, p page, runs []claimRun, quick, full bool) {
	if full {
		cmd := "hetquic reproduce"
		if quick {
			cmd += " --quick"
		}
		fmt.Fprintf(w, "# Reproducing the papers\n\nWritten by `%s`. Each claim below is a paper's number, hetquic's number for the same\n"+
			"metric from the named experiment's `summary.json`, and a verdict by the conditions of `claims/PAPER.yaml`\n"+
			"(format and verdict rules: docs/claims.md).\n\n", cmd)
		fmt.Fprintf(w, "| paper | claims | reproduced | not reproduced | refuted | error |\n|---|---|---|---|---|---|\n")
		for _, pr := range p {
			n := pr.counts()
			fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d |\n", pr.File.Paper, len(pr.Results),
				n[claims.Reproduced], n[claims.NotReproduced], n[claims.Refuted], n[claims.Failed])
		}
		fmt.Fprintln(w)
	}
	for _, pr := range p {
		f := pr.File
		hdr := "##"
		if !full {
			hdr = "###"
		}
		fmt.Fprintf(w, "%s %s (`%s`)\n\n", hdr, f.Title, f.Paper)
		if f.Source != "" {
			fmt.Fprintf(w, "Source: %s\n\n", f.Source)
		}
		fmt.Fprintf(w, "| claim | where | paper | hetquic | reproduced if | experiment | verdict |\n|---|---|---|---|---|---|---|\n")
		for _, r := range pr.Results {
			c := r.Claim
			fmt.Fprintf(w, "| %s: %s | %s | %s | %s | %s | %s | **%s** |\n", c.ID, cell(c.Claim), cell(c.Where),
				cell(paperNumber(c)), cell(ourNumber(r)), cell(c.Reproduced.String()), c.Experiment, r.Verdict)
		}
		fmt.Fprintln(w)
		for _, r := range pr.Results {
			c := r.Claim
			var parts []string
			if c.Setting != "" {
				parts = append(parts, "setting: "+strings.TrimSuffix(oneLine(c.Setting), "."))
			}
			if r.Err != nil {
				parts = append(parts, "error: "+oneLine(r.Err.Error()))
			} else if c.Note != "" && r.Verdict != claims.Reproduced {
				parts = append(parts, "why: "+strings.TrimSuffix(oneLine(c.Note), "."))
			}
			if c.Refuted != nil && r.Verdict == claims.Refuted {
				parts = append(parts, "refuted because hetquic's value is "+c.Refuted.String())
			}
			if len(parts) > 0 {
				fmt.Fprintf(w, "- **%s** — %s\n", c.ID, strings.Join(parts, "; "))
			}
		}
		fmt.Fprintln(w)
	}
	if full {
		fmt.Fprintf(w, "## Experiments\n\n| experiment | seeds | time | results |\n|---|---|---|---|\n")
		for _, r := range runs {
			seeds := "as specified"
			if r.Seeds > 0 {
				seeds = fmt.Sprintf("%d (--quick)", r.Seeds)
			}
			res := fmt.Sprintf("[report](%s/report.md), [summary.json](%s/summary.json)", r.Name, r.Name)
			if r.Err != nil {
				res = "failed: " + cell(oneLine(r.Err.Error()))
			}
			fmt.Fprintf(w, "| %s | %s | %.1f s | %s |\n", r.Name, seeds, r.Elapsed.Seconds(), res)
		}
	}
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
	return withUnit(formatNum(r.Value), r.Claim.Unit)
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
