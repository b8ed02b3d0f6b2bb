package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/claims"
	"github.com/hetquic/hetquic/internal/results"
)

// TestClaimsNameBuiltinExperiments: every shipped claims file parses and
// each claim names an experiment that "hetquic exp validate" accepts.
func TestClaimsNameBuiltinExperiments(t *testing.T) {
	files, err := claims.LoadAll(hetquic.Files, "claims")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		for _, c := range f.Claims {
			if seen[c.Experiment] {
				continue
			}
			seen[c.Experiment] = true
			if _, stderr, code := runCLI(t, "exp", "validate", c.Experiment); code != 0 {
				t.Errorf("%s: claim %s: experiment %q: %s", f.Paper, c.ID, c.Experiment, strings.TrimSpace(stderr))
			}
		}
		for _, sn := range f.Sensitivity {
			e, err := readExpFile(sn.Experiment)
			if err != nil {
				t.Fatal(err)
			}
			if v, ok := e.fileValue(sn.Param); ok && !sameValue(v, sn.Guess) {
				t.Errorf("%s: sensitivity %s × %s: guess %s, but the experiment uses %s", f.Paper, sn.Experiment, sn.Param, sn.Guess, v)
			}
		}
		for name := range f.Quick {
			if !seen[name] {
				t.Errorf("%s: quick entry %q is not an experiment of its claims", f.Paper, name)
			}
		}
	}
}

func TestReproducePage(t *testing.T) {
	out := t.TempDir()
	stdout, stderr, code := runCLI(t, "reproduce", "--paper", "pcm-journal", "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, err := os.ReadFile(filepath.Join(out, "index.md"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := claims.LoadAll(hetquic.Files, "claims")
	for _, f := range files {
		if f.Paper != "pcm-journal" {
			continue
		}
		for _, c := range f.Claims {
			var row string
			for _, l := range strings.Split(string(page), "\n") {
				if strings.HasPrefix(l, "| "+c.ID+": ") {
					row = l
				}
			}
			if !slices.ContainsFunc(claims.Verdicts, func(v claims.Verdict) bool { return strings.HasSuffix(row, "| **"+string(v)+"** |") }) {
				t.Errorf("claim %s: row %q has no verdict", c.ID, row)
			}
		}
	}
	if !strings.Contains(stdout, "pcm-journal") || !strings.Contains(stdout, "index.md") {
		t.Errorf("stdout %q lacks the counts", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "pcm-table5", "summary.json")); err != nil {
		t.Error(err)
	}
}

// TestReproduceReportsUnjudgedClaims: a claim whose metric the summary
// lacks is an error on the page and exit status 1, not a silent pass.
func TestReproduceReportsUnjudgedClaims(t *testing.T) {
	dir, out := claimsDir(t, `claims:
  - {id: a, where: Fig. 1, claim: c, experiment: pcm-ab, metric: 'strategies[label=nope].mean_tct_ms', paper_value: 1, reproduced: {at_least: 0}}
`), t.TempDir()
	_, stderr, code := runCLI(t, "reproduce", "--claims", dir, "--out", out)
	if code != 1 || !strings.Contains(stderr, "1 claims could not be judged") {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	page, _ := os.ReadFile(filepath.Join(out, "index.md"))
	if !strings.Contains(string(page), "| **error** |") || !strings.Contains(string(page), "label=nope") {
		t.Errorf("page does not name the problem:\n%s", page)
	}
	_, stderr, code = runCLI(t, "reproduce", "--paper", "no-such-paper")
	if code != 2 || !strings.Contains(stderr, `no claims for "no-such-paper"`) {
		t.Errorf("unknown paper: exit %d, stderr %q", code, stderr)
	}
}

// TestReproduceIntervalsAndSensitivity: a claim's value is the mean over
// the seeds that ran, with its interval; --quick says which experiments
// ran fewer seeds and that it swept no guessed setting; the full run's
// sensitivity entry gives each claim a line with its verdict at every
// value of the guessed setting.
func TestReproduceIntervalsAndSensitivity(t *testing.T) {
	dir, out := claimsDir(t, `quick:
  pcm-ab: {seeds: 3}
sensitivity:
  - {experiment: pcm-ab, param: rounds, values: [100, 1000], guess: 1000, why: the paper does not say}
claims:
  - {id: a, where: Fig. 1, claim: c, experiment: pcm-ab, metric: 'strategies[label=hetquic-a0.8].mean_tct_ms', paper_value: 1, reproduced: {at_least: 0}, refuted: {at_most: -1}}
`), t.TempDir()
	_, stderr, code := runCLI(t, "reproduce", "--quick", "--claims", dir, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	page, _ := os.ReadFile(filepath.Join(out, "index.md"))
	for _, want := range []string{
		"| inconclusive |",                               // the counts' column
		"Source: A. B: \"X\", Y 2024.",                   // the citation
		"hetquic ran 3 of the full run's 20 seeds (1–3)", // what ran, not the file's setting
		"`pcm-ab` (3 of 20 seeds)",                       // which verdicts depend on the seed count
		"reproduced: its 95 % interval [",                // why, from the numbers
		"**Quick run** (`--quick`)",                      // the page says what quick leaves out
		"sensitivity: `rounds` (guessed 1000; the paper does not say): not swept (--quick runs no sensitivity sweep",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("quick page lacks %q:\n%s", want, page)
		}
	}
	full := t.TempDir()
	if _, stderr, code := runCLI(t, "reproduce", "--claims", dir, "--out", full); code != 0 {
		t.Fatalf("full run: exit %d: %s", code, stderr)
	}
	page, _ = os.ReadFile(filepath.Join(full, "index.md"))
	for _, want := range []string{
		"sensitivity: `rounds` (guessed 1000; the paper does not say) over 20 seeds (1–20): **reproduced** at every value 100–1000",
		"at 1000, the experiment's own value, the runs above", // the guess's points not run twice
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("full page lacks %q:\n%s", want, page)
		}
	}
}

// TestReproducePlan: a full: entry gives an experiment more seeds than its
// file (a ride evaluation's one) and --quick fewer; a spread entry's
// replicates are swept in the experiment's own run, its claims judged at
// the guess; a sensitivity entry two papers share runs once, at the seeds
// of the smaller, and --quick runs none.
func TestReproducePlan(t *testing.T) {
	parse := func(body string) *claims.File {
		f, err := claims.Parse("x.yaml", []byte("paper: x\ntitle: X\ncitation: c\n"+body+
			"claims:\n  - {id: a, where: w, claim: c, experiment: ride-eval, metric: m, paper_value: 1, reproduced: {at_least: 0}}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	loss := "  - {experiment: ride-eval, param: ride.max_loss, values: [0, 0.002], guess: 0.002%s}\n"
	files := []*claims.File{
		parse("full:\n  ride-eval: {seeds: 5}\nquick:\n  ride-eval: {seeds: 3}\nsensitivity:\n" +
			"  - {experiment: ride-eval, param: ride.policy, values: [a, b, c], guess: b, spread: true}\n" + fmt.Sprintf(loss, "")),
		parse("sensitivity:\n" + fmt.Sprintf(loss, ", seeds: 2")),
	}
	runs := plan(files, false)
	if len(runs) != 2 || !runs[0].Main || runs[0].Param != "ride.policy" || runs[0].At != 1 || runs[1].Main || runs[1].Param != "ride.max_loss" {
		t.Fatalf("runs %+v, want the evaluation over the replicates (judged at b) and one sweep", runs)
	}
	if runs[0].Seeds != 5 || runs[0].Full != 5 || runs[1].Seeds != 2 {
		t.Errorf("seeds %d (full %d) and %d, want 5 (5) and 2", runs[0].Seeds, runs[0].Full, runs[1].Seeds)
	}
	quick := plan(files, true)
	if len(quick) != 1 || !quick[0].Main || quick[0].Param != "ride.policy" || quick[0].Seeds != 3 || quick[0].Full != 5 {
		t.Errorf("--quick: runs %+v, want only the evaluation over the replicates, 3 of 5 seeds", quick)
	}
}

// TestSpreadLine: a spread entry's line names each replicate by its file,
// with its interval over the seeds and its verdict, and the range of the
// replicates' means.
func TestSpreadLine(t *testing.T) {
	f, err := claims.Parse("x.yaml", []byte(`paper: x
title: X
citation: c
sensitivity:
  - {experiment: e, param: ride.policy, values: [../p/s1.json, ../p/s2.json], guess: ../p/s2.json, spread: true, why: training seeds}
claims:
  - {id: a, where: w, claim: c, experiment: e, metric: v, paper_value: 2, reproduced: {within_rel: 0.25}, refuted: {at_most: 1}}
`))
	if err != nil {
		t.Fatal(err)
	}
	sum := func(v float64) any { return map[string]any{"v": v} }
	run := &claimRun{Name: "e", Param: "ride.policy", Seeds: 3, First: 1, Full: 5,
		Summaries: [][]any{{sum(2), sum(2.1), sum(1.9)}, {sum(0.5), sum(0.6), sum(0.7)}}}
	got := sensitivity(&f.Claims[0], &f.Sensitivity[0], run, func(int) map[string]claims.CalResult { return nil })
	want := "spread over `ride.policy` (the experiment's s2; training seeds) over 3 of the full run's 5 seeds (1–3): " +
		"flips: reproduced → refuted at s2, means 0.6 … 2 [s1 → 2 [1.752, 2.248] (reproduced); s2 → 0.6 [0.3516, 0.8484] (refuted)]"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// TestCalibrationJudgesFirst: a claim resting on a baseline that misses
// its paper number is inconclusive on the main run; the calibration table
// says where the searched setting meets the paper, and the sensitivity
// line judges the claim there with the baseline calibrated at that value.
func TestCalibrationJudgesFirst(t *testing.T) {
	f, err := claims.Parse("x.yaml", []byte(`paper: x
title: X
citation: c
sensitivity:
  - {experiment: e, param: loss, values: ["0", "1"], guess: "0", why: unstated}
calibration:
  - {id: rr, what: RR's rate, where: Fig. 1, experiment: e, metric: rr, unit: "%", paper_value: 10, tolerance: {within_rel: 0.5}, search: loss, note: "RR  sends\n every tile twice"}
claims:
  - {id: a, where: w, claim: c, experiment: e, metric: v, over: rr, paper_value: 2, reproduced: {within_rel: 0.25}, refuted: {at_most: 1}, rests_on: [rr]}
`))
	if err != nil {
		t.Fatal(err)
	}
	sum := func(v, rr float64) any { return map[string]any{"v": v, "rr": rr} }
	runs := []claimRun{
		{Name: "e", Main: true, Seeds: 3, First: 1, Full: 3, Summaries: [][]any{{sum(40, 20), sum(42, 21), sum(38, 19)}}},
		{Name: "e", Param: "loss", Vals: []string{"0", "1"}, Guess: "0", Seeds: 3, First: 1, Full: 3,
			Summaries: [][]any{{sum(40, 20), sum(42, 21), sum(38, 19)}, {sum(20, 10), sum(21, 10.5), sum(19, 9.5)}}},
	}
	p := judge([]*claims.File{f}, runs)
	r := p[0].Results[0]
	if r.Verdict != claims.Inconclusive || r.Own != claims.Reproduced || !strings.Contains(strings.Join(r.Why, ";"), "not calibrated: RR's rate is 20 %") {
		t.Errorf("main run: %v (own %v, why %q), want inconclusive naming the uncalibrated baseline", r.Verdict, r.Own, r.Why)
	}
	var b strings.Builder
	writeCalibration(&b, p[0])
	for _, want := range []string{"`hetquic reproduce --calibrate --paper x`", "| rr: RR's rate | Fig. 1 | 10 % | 20 [17.52, 22.48] %, 3 seeds (1–3) |", "`loss`: calibrated at 1 [0 → 20; 1 → 10]", "| **no** |",
		"Across `loss`, 1 calibrates every baseline searched over it", "| **no** |\n\n- **rr**: RR sends every tile twice\n\nAcross"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("calibration table lacks %q:\n%s", want, b.String())
		}
	}
	if s := p[0].Sens[0][0]; !strings.Contains(s, "flips: inconclusive → reproduced at 1") {
		t.Errorf("sensitivity line %q: want the claim judged at the calibrated value", s)
	}
	if got := calibrationOnly(append(runs, claimRun{Name: "other", Main: true}), []*claims.File{f}); len(got) != 2 {
		t.Errorf("--calibrate plans %d runs, want the experiment and its search sweep", len(got))
	}
}

// claimsDir writes a claims file of paper x, with body after its header,
// into a new directory for reproduce --claims.
func claimsDir(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	head := "paper: x\ntitle: X\ncitation: 'A. B: \"X\", Y 2024'\n"
	if err := os.WriteFile(filepath.Join(dir, "x.yaml"), []byte(head+body), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestReproduceIndexJSON: index.json holds one record per claim with its
// value, interval, conditions, baseline and verdict, and the version line;
// a trivial baseline that passes the test makes the claim "not a test".
func TestReproduceIndexJSON(t *testing.T) {
	dir, out := claimsDir(t, `claims:
  - {id: a, where: Fig. 1, claim: c, experiment: pcm-ab, metric: 'strategies[label=hetquic-a0.8].mean_tct_ms', paper_value: 1, reproduced: {at_least: 0}, baseline: {what: a policy that does nothing, value: 5}}
`), t.TempDir()
	_, stderr, code := runCLI(t, "reproduce", "--claims", dir, "--out", out, "--workers", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(out, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var idx indexJSON
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	if len(idx.Claims) != 1 || len(idx.Counts) != 1 || len(idx.Runs) != 1 {
		t.Fatalf("index.json: %d claims, %d papers, %d runs, want 1 each", len(idx.Claims), len(idx.Counts), len(idx.Runs))
	}
	c := idx.Claims[0]
	if c.Verdict != string(claims.NotATest) || c.Own != string(claims.Reproduced) || c.Value == nil || c.Low == nil || c.Baseline == nil || len(c.Values) != 20 || c.Reproduced != "≥ 0" {
		t.Errorf("record %+v: want not a test (own reproduced) with value, interval, 20 values, baseline and condition", c)
	}
	if idx.Machine.Workers != 1 || !strings.HasPrefix(idx.Machine.Version, "hetquic ") || idx.Counts[0].Counts["not a test"] != 1 {
		t.Errorf("machine %+v, counts %v", idx.Machine, idx.Counts[0].Counts)
	}
	page, _ := os.ReadFile(filepath.Join(out, "index.md"))
	if !strings.Contains(string(page), "hetquic ") || !strings.Contains(string(page), "cores, load") || !strings.Contains(string(page), "| not a test |") {
		t.Errorf("page lacks the version line or the counts:\n%s", page)
	}
	if !strings.Contains(stderr, "[1/1] pcm-ab… elapsed") {
		t.Errorf("stderr lacks the step's progress line: %q", stderr)
	}
}

// TestShareWorkers: reproduce runs as many runs at once as the load
// leaves cores free, at least one.
func TestShareWorkers(t *testing.T) {
	for _, tc := range []struct {
		cores int
		load  float64
		want  int
	}{{2, 0.3, 2}, {2, 1.2, 1}, {2, 21, 1}, {16, 3.5, 13}, {4, -1, 4}} {
		if got := shareWorkers(tc.cores, tc.load); got != tc.want {
			t.Errorf("%d cores at load %g: %d workers, want %d", tc.cores, tc.load, got, tc.want)
		}
	}
}

// TestProgressETA: the estimate comes from the last run's times where it
// had the step, else from the seconds per point of the steps done.
func TestProgressETA(t *testing.T) {
	dir := t.TempDir()
	old := indexJSON{Machine: machine{Workers: 2}, Runs: []runJSON{{Label: "a", Elapsed: 10}}}
	data, _ := json.Marshal(old)
	file := filepath.Join(dir, "index.json")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	runs := []claimRun{{Name: "a", Seeds: 2}, {Name: "b", Seeds: 4}, {Name: "c", Seeds: 2}}
	now := time.Unix(0, 0)
	var buf bytes.Buffer
	p := newProgress(&buf, file, runs, 1, func() time.Time { return now }, costTable{}, false)
	p.step(0)
	now = now.Add(20 * time.Second)
	p.finished(0, 20*time.Second)
	p.step(1) // b: no last time, no point done without one
	now = now.Add(40 * time.Second)
	p.finished(1, 40*time.Second)
	p.step(2) // c: 2 points at b's 10 s per point
	want := "reproduce: [1/3] a… elapsed 0s, ETA unknown yet\n" +
		"reproduce: [2/3] b… elapsed 20s, ETA unknown yet\n" +
		"reproduce: [3/3] c… elapsed 1m00s, ETA 20s\n"
	if buf.String() != want {
		t.Errorf("got\n%swant\n%s", buf.String(), want)
	}
	if p.last["a"] != 20 {
		t.Errorf("a's last time %g s at 2 workers, want 20 s at 1", p.last["a"])
	}
}

// TestReproduceOutDir: without --out each run gets results/reproduce/RUN,
// and results/reproduce/latest links the newest.
func TestReproduceOutDir(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	dir, fresh, prev, err := reproduceOut("", now)
	if err != nil || !fresh || dir != filepath.Join("results", "reproduce", "20261128T120000Z") || prev != filepath.Join("results", "reproduce", "latest", "index.json") {
		t.Fatalf("default: %q fresh %v prev %q err %v", dir, fresh, prev, err)
	}
	if err := results.LinkLatest(dir); err != nil {
		t.Fatal(err)
	}
	if again, _, _, _ := reproduceOut("", now); again == dir {
		t.Errorf("a second run in the same second reuses %s", dir)
	}
	if target, err := os.Readlink(filepath.Join("results", "reproduce", "latest")); err != nil || target != "20261128T120000Z" {
		t.Errorf("latest links %q (%v)", target, err)
	}
}

// TestReproduceOutFlag: --out takes a new or empty directory, or an
// earlier reproduce's, and refuses one holding anything else.
func TestReproduceOutFlag(t *testing.T) {
	t.Chdir(t.TempDir())
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	if err := os.MkdirAll("foreign", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("foreign", "rounds.csv"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := reproduceOut("foreign", now); err == nil || !strings.Contains(err.Error(), "not an earlier reproduce's output") {
		t.Errorf("foreign --out: err %v, want a refusal", err)
	}
	if err := os.WriteFile(filepath.Join("foreign", "index.json"), []byte(`{"command": "hetquic reproduce --quick"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := reproduceOut("foreign", now); err != nil {
		t.Errorf("an earlier reproduce page without the mark: %v", err)
	}
	if _, _, _, err := reproduceOut("new", now); err != nil {
		t.Errorf("new --out: %v", err)
	}
	if err := os.WriteFile(filepath.Join("new", "index.md"), []byte("# page\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if d, fresh, prev, err := reproduceOut("new", now); err != nil || fresh || d != "new" || prev != filepath.Join("new", "index.json") {
		t.Errorf("an earlier reproduce's --out: %q fresh %v prev %q err %v", d, fresh, prev, err)
	}
}

// TestReproduceCalibrateCommand: --calibrate runs only what the
// calibrations read, prints their table and writes no page; a claim
// resting on a calibration that misses is inconclusive on the page.
func TestReproduceCalibrateCommand(t *testing.T) {
	dir, out := claimsDir(t, `calibration:
  - {id: base, what: "the a = 0.8 default's mean TCT", where: Fig. 14, experiment: pcm-ab, metric: 'strategies[label=hetquic-a0.8].mean_tct_ms', unit: ms, paper_value: 1, tolerance: {within_rel: 0.1}}
claims:
  - {id: a, where: Fig. 1, claim: c, experiment: pcm-ab, metric: 'strategies[label=hetquic-a0.2].mean_tct_ms', paper_value: 1, reproduced: {at_least: 0}, rests_on: [base]}
`), t.TempDir()
	stdout, stderr, code := runCLI(t, "reproduce", "--calibrate", "--claims", dir, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "| base: the a = 0.8 default's mean TCT | Fig. 14 | 1 ms |") || !strings.Contains(stdout, "| **no** |") {
		t.Errorf("--calibrate printed %q, want the calibration's row, not calibrated", stdout)
	}
	if _, err := os.Stat(filepath.Join(out, "index.md")); err == nil {
		t.Error("--calibrate wrote a page")
	}
	page := t.TempDir()
	if _, stderr, code := runCLI(t, "reproduce", "--claims", dir, "--out", page); code != 0 {
		t.Fatalf("page: exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(filepath.Join(page, "index.md"))
	if !strings.Contains(string(data), "inconclusive: the baseline is not calibrated: the a = 0.8 default's mean TCT is") {
		t.Errorf("page lacks the uncalibrated baseline's verdict:\n%s", data)
	}
}

// TestSearchVerdicts: a searched setting calibrates the paper's baselines
// only at a value where every one of them meets the paper.
func TestSearchVerdicts(t *testing.T) {
	line := func(ok ...bool) calLine {
		l := calLine{CalResult: claims.CalResult{Cal: &claims.Calibration{Search: "loss"}}, At: []string{"0", "1", "2"}}
		for _, o := range ok {
			l.Search = append(l.Search, claims.CalResult{OK: o})
		}
		return l
	}
	guessed := func(l calLine, g string) calLine {
		l.Guess = g
		return l
	}
	for _, tc := range []struct {
		lines []calLine
		want  string
	}{
		{[]calLine{line(false, true, true), line(false, false, true)}, "Across `loss`, 2 calibrates every baseline"},
		{[]calLine{line(false, true, false), line(false, false, true)}, "Across `loss`, no value calibrates every baseline"},
		{[]calLine{{CalResult: claims.CalResult{Cal: &claims.Calibration{Search: "loss"}}}}, ""},
		{[]calLine{guessed(line(false, true, true), "1"), guessed(line(false, true, false), "1")}, "Across `loss`, 1 calibrates every baseline searched over it, and 1 is the experiment's own value"},
		{[]calLine{guessed(line(false, true, true), "0"), guessed(line(false, true, false), "0")}, "Across `loss`, 1 calibrates every baseline searched over it (the claims' sensitivity lines"},
	} {
		got := strings.Join(searchVerdicts(tc.lines), "\n")
		if (tc.want == "" && got != "") || !strings.Contains(got, tc.want) {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

// TestPruneStale: in an earlier reproduce's directory the steps its page
// recorded that this run lacks are removed, the others and anything the
// page did not record stay.
func TestPruneStale(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a", "a-sweep-x", "mine"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	idx := `{"command": "hetquic reproduce", "runs": [{"dir": "a"}, {"dir": "a-sweep-x"}, {"dir": "../escape"}]}`
	if err := os.WriteFile(filepath.Join(dir, "index.json"), []byte(idx), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := pruneStale(dir, []string{"a"}); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{"a": true, "a-sweep-x": false, "mine": true} {
		if _, err := os.Stat(filepath.Join(dir, d)); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", d, err == nil, want)
		}
	}
}
