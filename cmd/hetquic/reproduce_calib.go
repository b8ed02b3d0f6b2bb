package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/hetquic/hetquic/internal/claims"
)

// calLine is one calibration of a paper's baseline as the page shows it:
// checked on the run the claims are judged on, and, where the calibration
// names a searched setting, at each of that sensitivity sweep's values.
type calLine struct {
	claims.CalResult
	Run *claimRun
	// At lists the search's values and the check at each (nil: no
	// search, or --quick, which runs no sensitivity sweep).
	At     []string
	Search []claims.CalResult
	// Guess is the search's value the experiment itself uses.
	Guess string
}

// calibrate checks every calibration of f on its experiment's main run
// (value at) and on its search sweep, before any claim is judged.
func calibrate(f *claims.File, runs []claimRun) []calLine {
	var out []calLine
	for i := range f.Calibration {
		cal := &f.Calibration[i]
		run := mainRun(runs, cal.Experiment)
		l := calLine{CalResult: checkCal(cal, run, run.At), Run: run}
		if sw := findRun(runs, cal.Experiment, cal.Search); cal.Search != "" && sw != nil && !sw.Main {
			l.At, l.Guess = sw.Vals, sw.Guess
			for k := range sw.Vals {
				l.Search = append(l.Search, checkCal(cal, sw, k))
			}
		}
		out = append(out, l)
	}
	return out
}

func checkCal(cal *claims.Calibration, run *claimRun, i int) claims.CalResult {
	if run.Err != nil {
		nan := math.NaN()
		return claims.CalResult{Cal: cal, Value: nan, Lo: nan, Hi: nan, Err: run.Err}
	}
	return cal.Check(run.Summaries[i]...)
}

// calsAt are f's calibrations as a claim judged on value i of run sees
// them: those of run's experiment checked at that value, the others as
// the main runs checked them.
func calsAt(f *claims.File, lines []calLine, run *claimRun, i int) map[string]claims.CalResult {
	out := map[string]claims.CalResult{}
	for k, l := range lines {
		cal := &f.Calibration[k]
		if run != nil && cal.Experiment == run.Name && !run.Main {
			out[cal.ID] = checkCal(cal, run, i)
			continue
		}
		out[cal.ID] = l.CalResult
	}
	return out
}

// calibrateCommand is the command that checks a paper's baselines alone.
func calibrateCommand(paper string) string {
	return "hetquic reproduce --calibrate --paper " + paper
}

// writeCalibration is a paper's calibration table: each baseline's number
// in the paper and here, the tolerance, where the searched setting would
// meet it, and whether it is calibrated.
func writeCalibration(w io.Writer, pr paperResult) {
	if len(pr.Cals) == 0 {
		return
	}
	fmt.Fprintf(w, "Baselines calibrated before the claims are judged (`%s`; a claim resting on a baseline that is not calibrated is **inconclusive**):\n\n", calibrateCommand(pr.File.Paper))
	fmt.Fprintf(w, "| calibration | where | paper | hetquic (mean [95 %% CI]) | tolerance | across the guessed setting | calibrated |\n|---|---|---|---|---|---|---|\n")
	for _, l := range pr.Cals {
		cal := l.Cal
		ours := "—"
		if l.Err == nil {
			ours = formatNum(l.Value)
			if l.Lo != l.Hi {
				ours += fmt.Sprintf(" [%s, %s]", formatNum(l.Lo), formatNum(l.Hi))
			}
			ours = withUnit(ours, cal.Unit) + ", " + l.Run.ran()
		}
		ok := "**no**"
		if l.OK {
			ok = "yes"
		}
		fmt.Fprintf(w, "| %s: %s | %s | %s | %s | %s | %s | %s |\n", cal.ID, cell(cal.What), cell(cal.Where),
			withUnit(formatNum(*cal.PaperValue), cal.Unit), cell(ours), cell(cal.Tolerance.String()), cell(searchCell(l)), ok)
	}
	fmt.Fprintln(w)
	for _, l := range pr.Cals {
		if l.Cal.Note != "" {
			fmt.Fprintf(w, "- **%s**: %s\n", l.Cal.ID, oneLine(l.Cal.Note))
		}
	}
	if slices.ContainsFunc(pr.Cals, func(l calLine) bool { return l.Cal.Note != "" }) {
		fmt.Fprintln(w)
	}
	for _, line := range searchVerdicts(pr.Cals) {
		fmt.Fprintf(w, "%s\n\n", line)
	}
}

// searchVerdicts says, per searched setting, whether one of its values
// calibrates every baseline searched over it at once, which is what the
// paper's comparisons need (one setting for all of its baselines).
func searchVerdicts(lines []calLine) []string {
	var params []string
	common := map[string][]string{}
	guess := map[string]string{}
	for _, l := range lines {
		if l.Search == nil {
			continue
		}
		p := l.Cal.Search
		if _, ok := common[p]; !ok {
			params = append(params, p)
			common[p] = slices.Clone(l.At)
			guess[p] = l.Guess
		}
		common[p] = slices.DeleteFunc(common[p], func(v string) bool {
			k := slices.Index(l.At, v)
			return k < 0 || !l.Search[k].OK
		})
	}
	var out []string
	for _, p := range params {
		vals := common[p]
		if g := guess[p]; g != "" && slices.ContainsFunc(vals, func(v string) bool { return sameValue(v, g) }) {
			out = append(out, fmt.Sprintf("Across `%s`, %s calibrates every baseline searched over it, and %s is the experiment's own value: the claims below are judged there.", p, strings.Join(short(vals), ", "), shortValue(g)))
			continue
		}
		if len(vals) > 0 {
			out = append(out, fmt.Sprintf("Across `%s`, %s calibrates every baseline searched over it (the claims' sensitivity lines show them there; the verdicts above are at the experiment's own value).", p, strings.Join(short(vals), ", ")))
			continue
		}
		out = append(out, fmt.Sprintf("Across `%s`, no value calibrates every baseline searched over it at once.", p))
	}
	return out
}

func short(vals []string) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = shortValue(v)
	}
	return out
}

// searchCell says where in the searched setting's range the baseline
// meets the paper, with the value at each point.
func searchCell(l calLine) string {
	switch {
	case l.Cal.Search == "":
		return "—"
	case l.Search == nil:
		return fmt.Sprintf("`%s` not searched (--quick runs no sensitivity sweep)", l.Cal.Search)
	}
	var at, meets []string
	for k, r := range l.Search {
		v := "error"
		if r.Err == nil {
			v = formatNum(r.Value)
		}
		at = append(at, fmt.Sprintf("%s → %s", shortValue(l.At[k]), v))
		if r.OK {
			meets = append(meets, shortValue(l.At[k]))
		}
	}
	head := fmt.Sprintf("`%s`: calibrated at none of the values", l.Cal.Search)
	if len(meets) > 0 {
		head = fmt.Sprintf("`%s`: calibrated at %s", l.Cal.Search, strings.Join(meets, ", "))
	}
	return head + " [" + strings.Join(at, "; ") + "]"
}

// calibrationOnly is the plan of --calibrate: the runs the papers'
// calibrations read (their experiments and search sweeps), nothing else.
func calibrationOnly(runs []claimRun, files []*claims.File) []claimRun {
	need := map[string]bool{}
	for _, f := range files {
		for _, cal := range f.Calibration {
			need[cal.Experiment] = true
			need[cal.Experiment+"\x00"+cal.Search] = true
		}
	}
	var out []claimRun
	for _, r := range runs {
		if (r.Main && need[r.Name]) || (!r.Main && need[r.Name+"\x00"+r.Param]) {
			out = append(out, r)
		}
	}
	return out
}

// writeCalibrations prints every paper's calibration table (--calibrate).
func writeCalibrations(w io.Writer, files []*claims.File, runs []claimRun) {
	for _, f := range files {
		if len(f.Calibration) == 0 {
			continue
		}
		fmt.Fprintf(w, "### %s (`%s`)\n\n", f.Title, f.Paper)
		writeCalibration(w, paperResult{File: f, Cals: calibrate(f, runs)})
	}
}
