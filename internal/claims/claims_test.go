package claims

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
	"testing/fstest"
)

const good = `
paper: demo
title: A demo paper
citation: 'A. Author: "A demo paper", Demo Conf. 2024'
claims:
  - id: speedup
    where: Fig. 3
    claim: it is 2× faster
    experiment: demo-exp
    metric: rows[label=new].speed
    over: rows[label=old].speed
    paper_value: 2
    reproduced: {within_rel: 0.1}
    refuted: {at_most: 1}
`

func summary(t *testing.T, js string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestJudgeVerdicts(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Claims[0]
	c.Deterministic = true // one run is the value
	for _, tc := range []struct {
		newSpeed float64
		want     Verdict
		value    float64
	}{
		{21, Reproduced, 2.1},    // within 10 % of 2
		{22, Reproduced, 2.2},    // the edge
		{25, NotReproduced, 2.5}, // faster, but not as claimed
		{12, NotReproduced, 1.2}, // faster, by less
		{10, Refuted, 1},         // not faster at all
		{8, Refuted, 0.8},
	} {
		js := `{"rows":[{"label":"old","speed":10},{"label":"new","speed":` + jsonNum(tc.newSpeed) + `}]}`
		r := Judge(c, summary(t, js))
		if r.Err != nil || r.Verdict != tc.want || math.Abs(r.Value-tc.value) > 1e-12 {
			t.Errorf("new speed %g: got %v %g (%v), want %v %g", tc.newSpeed, r.Verdict, r.Value, r.Err, tc.want, tc.value)
		}
	}
	c.Deterministic = false
	if r := Judge(c, summary(t, `{"rows":[{"label":"old","speed":10},{"label":"new","speed":21}]}`)); r.Verdict != Inconclusive || r.Own != Reproduced || len(r.Why) != 1 {
		t.Errorf("one run, not deterministic: got %v (own %v, why %q), want inconclusive (own reproduced)", r.Verdict, r.Own, r.Why)
	}
	r := Judge(c, summary(t, `{"rows":[{"label":"old","speed":10}]}`))
	if r.Verdict != Failed || r.Err == nil || !strings.Contains(r.Err.Error(), "label=new") {
		t.Errorf("missing row: got %v %v, want an error naming the selector", r.Verdict, r.Err)
	}
}

// TestJudgeIntervals: a verdict holds for the whole 95 % interval over
// seeds; an interval that straddles a threshold is inconclusive.
func TestJudgeIntervals(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Claims[0] // reproduced: within 10 % of 2; refuted: ≤ 1
	for _, tc := range []struct {
		speeds []float64 // new's speed per seed; old's is 10
		want   Verdict
	}{
		{[]float64{20, 20.5, 19.5}, Reproduced},     // 2 ± 0.12: inside [1.8, 2.2]
		{[]float64{21.5, 22.5, 20.5}, Inconclusive}, // 2.15 ± 0.25: crosses 2.2
		{[]float64{30, 31, 29}, NotReproduced},      // 3 ± 0.25
		{[]float64{14, 15, 13}, NotReproduced},      // 1.4 ± 0.25: between the two
		{[]float64{11, 13, 9}, Inconclusive},        // 1.1 ± 0.5: crosses 1
		{[]float64{8, 8.5, 7.5}, Refuted},           // 0.8 ± 0.12
		{[]float64{22, 22, 22}, Reproduced},         // no spread: the point
		{[]float64{10, 40}, Inconclusive},           // 2.5 ± 19: everything
	} {
		var sums []any
		for _, sp := range tc.speeds {
			sums = append(sums, summary(t, `{"rows":[{"label":"old","speed":10},{"label":"new","speed":`+jsonNum(sp)+`}]}`))
		}
		r := Judge(c, sums...)
		if r.Err != nil || r.Verdict != tc.want {
			t.Errorf("speeds %v: got %v [%g, %g] (%v), want %v", tc.speeds, r.Verdict, r.Low(), r.High(), r.Err, tc.want)
		}
	}
}

// TestRatioOfMeans: a ratio claim divides the means, so a seed whose
// denominator is 0 does not void it, and its interval is the delta
// method's: 0 when numerator and denominator are proportional.
func TestRatioOfMeans(t *testing.T) {
	f, _ := Parse("demo.yaml", []byte(good))
	c := &f.Claims[0]
	row := func(old, new float64) any {
		return summary(t, `{"rows":[{"label":"old","speed":`+jsonNum(old)+`},{"label":"new","speed":`+jsonNum(new)+`}]}`)
	}
	r := Judge(c, row(0, 1), row(10, 20), row(20, 30))
	if r.Err != nil || math.Abs(r.Value-51.0/30) > 1e-12 || !(r.CI > 0) {
		t.Errorf("got %g ± %g (%v), want 1.7 with an interval", r.Value, r.CI, r.Err)
	}
	r = Judge(c, row(10, 20), row(20, 40), row(30, 60))
	if r.Err != nil || math.Abs(r.Value-2) > 1e-12 || r.CI > 1e-12 || r.Verdict != Reproduced {
		t.Errorf("proportional: got %g ± %g %v (%v), want 2 ± 0 reproduced", r.Value, r.CI, r.Verdict, r.Err)
	}
	if r := Judge(c, row(0, 1), row(0, 2)); r.Verdict != Failed || r.Err == nil {
		t.Errorf("all denominators 0: got %v %v, want an error", r.Verdict, r.Err)
	}
}

func jsonNum(v float64) string { b, _ := json.Marshal(v); return string(b) }

func TestLookup(t *testing.T) {
	s := summary(t, `{"a":{"b":[{"k":"x.y","v":1},{"k":2,"v":2},{"k":"d","v":3},{"k":"d","v":4}]},"n":null,"s":"str"}`)
	for _, tc := range []struct {
		path string
		want float64
		err  string
	}{
		{path: "a.b[0].v", want: 1},
		{path: "a.b[k=x.y].v", want: 1},
		{path: "a.b[k=2].v", want: 2},
		{path: "a.b[k=d].v", err: "2 elements"},
		{path: "a.b[k=z].v", err: "no element"},
		{path: "a.b[9].v", err: "no [9]"},
		{path: "a.c", err: `no field "c"`},
		{path: "a.b", err: "not a number"},
		{path: "n", err: "null"},
		{path: "s", err: "not a number"},
		{path: "s.x", err: "not an object"},
		{path: "a[0]", err: "not a list"},
		{path: "a..b", err: "bad step"},
		{path: "a.b[-1]", err: "not a number ≥ 0"},
		{path: "a.b[=x]", err: "no key"},
		{path: "", err: "empty path"},
	} {
		got, err := Lookup(s, tc.path)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%q: err %v, want one containing %q", tc.path, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%q: got %g, %v; want %g", tc.path, got, err, tc.want)
		}
	}
}

func TestParseRejects(t *testing.T) {
	base := strings.TrimSpace(good)
	for _, tc := range []struct{ old, new, err string }{
		{"paper: demo", "paper: Demo Paper", `paper: "Demo Paper" is not an id`},
		{"title: A demo paper", "title: ''", "title: missing"},
		{"citation: 'A. Author: \"A demo paper\", Demo Conf. 2024'", "citation: ''", "citation: missing"},
		{"    where: Fig. 3\n", "", "where: missing"},
		{"id: speedup", "id: Speed", `id: "Speed"`},
		{"metric: rows[label=new].speed", "metric: rows[x", "metric:"},
		{"over: rows[label=old].speed", "over: rows..speed", "over:"},
		{"    paper_value: 2\n", "    paper_text: twice\n", "within_rel/within_abs need the claim's paper_value"},
		{"    paper_value: 2\n", "", "paper_value or paper_text"},
		{"{within_rel: 0.1}", "{}", "reproduced: no condition"},
		{"{within_rel: 0.1}", "{within_rel: -1}", "must be ≥ 0"},
		{"{at_most: 1}", "{between: [2, 1]}", "refuted: between"},
		{"{at_most: 1}", "{at_most: .nan}", "not a finite number"},
		{"experiment: demo-exp", "experiment: ../x", "not an experiment name"},
		{"    claim: it is 2× faster\n", "    claim: it is 2× faster\n    typo: 1\n", `unknown field "typo"`},
		{"    claim: it is 2× faster\n", "    claim: x\n    measured: {values: [2], command: hetquic exp run x, date: 24-1-1}\n", "measured: date"},
		{"    claim: it is 2× faster\n", "    claim: x\n    measured: {values: [], command: c, date: 2024-01-01}\n", "measured: values: none"},
		{"    claim: it is 2× faster\n", "    claim: x\n    measured: {values: [1], date: 2024-01-01}\n", "measured: command: missing"},
		{"claims:\n", "sensitivity:\n  - {experiment: other, param: a, values: [1, 2], guess: 1}\nclaims:\n", "is not the experiment of a claim"},
		{"claims:\n", "sensitivity:\n  - {experiment: demo-exp, param: a, values: [1, 2], guess: 3}\nclaims:\n", `guess: "3" is not one of values`},
		{"claims:\n", "sensitivity:\n  - {experiment: demo-exp, param: a, values: [1], guess: 1}\nclaims:\n", "want at least two"},
		{"claims:\n", "full:\n  demo-exp: {seeds: 0}\nclaims:\n", "full.demo-exp.seeds: 0, want ≥ 1"},
		{"claims:\n", "sensitivity:\n  - {experiment: demo-exp, param: a, values: [1, 2], guess: 1, spread: true, seeds: 2}\nclaims:\n", "a spread entry runs its experiment's seeds"},
		{"claims:\n", "quick:\n  demo-exp: {seeds: -1}\nclaims:\n", "quick.demo-exp.seeds: -1"},
		{"    claim: it is 2× faster\n", "    claim: x\n    baseline: {value: 1}\n", "baseline: what: missing"},
		{"    claim: it is 2× faster\n", "    claim: x\n    baseline: {what: w}\n", "baseline: value or metric: exactly one"},
		{"    claim: it is 2× faster\n", "    claim: x\n    baseline: {what: w, value: 1, metric: a}\n", "baseline: value or metric: exactly one"},
		{"    claim: it is 2× faster\n", "    claim: x\n    baseline: {what: w, metric: 'rows[x'}\n", "baseline:"},
		{"    claim: it is 2× faster\n", "    claim: x\n    preconditions: [{metric: a, holds: {at_least: 1}}]\n", "preconditions[0]: what: missing"},
		{"    claim: it is 2× faster\n", "    claim: x\n    preconditions: [{what: w, metric: a, holds: {}}]\n", "preconditions[0]: holds: no condition"},
		{"    claim: it is 2× faster\n", "    claim: x\n    preconditions: [{what: w, metric: a, holds: {within_rel: 0.1}}]\n", "need a paper value"},
		{"    claim: it is 2× faster\n", "    claim: x\n    range: [1, 1]\n", "range: [1 1], want [lo, hi]"},
		{"    claim: it is 2× faster\n", "    claim: x\n    inconsistent: {where: l. 3}\n", "inconsistent: where and text"},
		{"    claim: it is 2× faster\n", "    claim: x\n    measured: {values: [1], command: c, date: 2024-01-01}\n    baseline: {what: w, metric: a}\n", "no summary to read it from"},
		{"claims:\n", "unclaimed:\n  - {where: Fig. 2, what: w}\nclaims:\n", "unclaimed[0]: where, what and why"},
	} {
		in := strings.Replace(base, tc.old, tc.new, 1)
		if in == base {
			t.Fatalf("test case %q does not change the input", tc.old)
		}
		_, err := Parse("demo.yaml", []byte(in))
		if err == nil || !strings.Contains(err.Error(), tc.err) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q → %q: err %v, want one line containing %q", tc.old, tc.new, err, tc.err)
		}
		if err != nil && !strings.HasPrefix(err.Error(), "demo.yaml") {
			t.Errorf("error %q does not name the file", err)
		}
	}
	dup := base + "\n" + strings.SplitN(base, "claims:\n", 2)[1]
	if _, err := Parse("demo.yaml", []byte(dup)); err == nil || !strings.Contains(err.Error(), `duplicate id "speedup"`) {
		t.Errorf("duplicate id: err %v", err)
	}
}

func TestLoadAllNamesFileAfterPaper(t *testing.T) {
	fsys := fstest.MapFS{"claims/other.yaml": {Data: []byte(good)}}
	if _, err := LoadAll(fsys, "claims"); err == nil || !strings.Contains(err.Error(), `want the file's name "other"`) {
		t.Errorf("err %v", err)
	}
	fsys = fstest.MapFS{"claims/demo.yaml": {Data: []byte(good)}, "claims/README": {Data: []byte("x")}}
	files, err := LoadAll(fsys, "claims")
	if err != nil || len(files) != 1 || files[0].Paper != "demo" {
		t.Errorf("got %v, %v", files, err)
	}
}

// TestLoadAllSharedSensitivity: two papers' claims on one experiment may
// share a sensitivity entry (reproduce runs it once) only with the same
// values and guess.
func TestLoadAllSharedSensitivity(t *testing.T) {
	entry := func(paper, values, guess string) []byte {
		return []byte(strings.Replace(good, "paper: demo", "paper: "+paper, 1) +
			"sensitivity:\n  - {experiment: demo-exp, param: a, values: " + values + ", guess: " + guess + ", spread: true}\n")
	}
	fsys := fstest.MapFS{"c/a.yaml": {Data: entry("a", "[1, 2]", "1")}, "c/b.yaml": {Data: entry("b", "[1, 2]", "1")}}
	files, err := LoadAll(fsys, "c")
	if err != nil || len(files) != 2 || !files[1].Sensitivity[0].Spread {
		t.Fatalf("same entry in two files: %v", err)
	}
	fsys["c/b.yaml"] = &fstest.MapFile{Data: entry("b", "[1, 3]", "1")}
	if _, err := LoadAll(fsys, "c"); err == nil || !strings.Contains(err.Error(), "b: sensitivity demo-exp × a: values [1 3] (guess 1) differ from a's [1 2]") {
		t.Errorf("differing entries: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(good))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error: %q", err)
			}
			return
		}
		for i := range c.Claims {
			// A parsed claim's paths parse and its conditions judge without panicking.
			Judge(&c.Claims[i], map[string]any{})
		}
	})
}

// trivialClaim is a hit-rate claim whose baseline is round-robin's 25 %
// by construction, whose precondition is a queue and which rests on the
// calibration of a comparator.
const trivialClaim = `
paper: demo
title: A demo paper
citation: 'A. Author: "A demo paper", Demo Conf. 2024'
claims:
  - id: hit
    where: Fig. 3
    claim: the scheme picks the best path at least 20 % of the time
    experiment: demo-exp
    metric: rows[label=new].hit
    unit: "%"
    paper_value: 25
    range: [0, 100]
    reproduced: {at_least: 20}
    refuted: {at_most: 10}
    baseline: {what: round-robin over four paths, value: 25}
    preconditions:
      - {what: a queue builds, metric: queue, holds: {at_least: 1}}
    rests_on: [comparator]
calibration:
  - {id: comparator, what: the comparator's own number, where: Fig. 2, experiment: demo-exp, metric: cal, paper_value: 91, tolerance: {within_abs: 1}}
`

func hitSummaries(t *testing.T, queue, cal float64, hits ...float64) []any {
	var out []any
	for _, h := range hits {
		out = append(out, summary(t, `{"queue":`+jsonNum(queue)+`,"cal":`+jsonNum(cal)+`,"rows":[{"label":"new","hit":`+jsonNum(h)+`}]}`))
	}
	return out
}

// TestJudgeOverrules: a baseline that passes the test, a failed
// precondition, an uncalibrated baseline and a one-run value each
// overrule the interval's own verdict, and say why; a share's interval
// stays in [0, 100].
func TestJudgeOverrules(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(trivialClaim))
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Claims[0]
	for _, tc := range []struct {
		name       string
		queue, cal float64
		hits       []float64
		base       float64
		want, own  Verdict
		why        string
	}{
		{"baseline passes the test", 5, 91, []float64{60, 62, 61}, 25, NotATest, Reproduced, "passes the same test"},
		{"baseline passes, one run", 5, 91, []float64{60}, 25, NotATest, Reproduced, "passes the same test"},
		{"overlaps the baseline", 5, 91, []float64{5, 45, 25}, 15, NotATest, Inconclusive, "cannot be told from"},
		{"apart from the baseline", 5, 91, []float64{60, 62, 61}, 15, Reproduced, Reproduced, ""},
		{"refuted stays", 5, 91, []float64{2, 3, 2.5}, 2.5, Refuted, Refuted, ""},
		{"no queue", 0, 91, []float64{60, 62, 61}, 25, NotApplicable, Reproduced, "a queue builds"},
		{"comparator off", 5, 79, []float64{60, 62, 61}, 25, Inconclusive, Reproduced, "not calibrated"},
		{"one run", 5, 91, []float64{60}, 15, Inconclusive, Reproduced, "one run"},
	} {
		*c.Baseline.Value = tc.base
		sums := hitSummaries(t, tc.queue, tc.cal, tc.hits...)
		r := Judge(c, sums...)
		ApplyCalibrations(&r, map[string]CalResult{"comparator": f.Calibration[0].Check(sums...)})
		if r.Err != nil || r.Verdict != tc.want || r.Own != tc.own || !strings.Contains(strings.Join(r.Why, ";"), tc.why) {
			t.Errorf("%s: got %v (own %v, why %q, err %v), want %v (own %v) saying %q", tc.name, r.Verdict, r.Own, r.Why, r.Err, tc.want, tc.own, tc.why)
		}
	}
	r := Judge(c, hitSummaries(t, 5, 91, 99, 100, 100)...)
	if r.High() > 100 || r.Low() < 0 || r.High() != 100 {
		t.Errorf("share near 100: interval [%g, %g], want it cut at 100", r.Low(), r.High())
	}
}

// TestJudgeInconsistent: a claim the paper also contradicts is judged
// against its own sentence, and the verdict says the paper states both.
func TestJudgeInconsistent(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(good+`    inconsistent: {where: "§5, l. 679", text: "the old one is fastest"}
`))
	if err != nil {
		t.Fatal(err)
	}
	c := &f.Claims[0]
	r := Judge(c, summary(t, `{"rows":[{"label":"old","speed":10},{"label":"new","speed":20}]}`), summary(t, `{"rows":[{"label":"old","speed":10},{"label":"new","speed":20.2}]}`), summary(t, `{"rows":[{"label":"old","speed":10},{"label":"new","speed":19.8}]}`))
	if r.Verdict != PaperInconsistent || r.Own != Reproduced || !strings.Contains(r.Why[0], "l. 679") {
		t.Errorf("got %v (own %v, why %q), want paper inconsistent (own reproduced) naming the other sentence", r.Verdict, r.Own, r.Why)
	}
}

// TestCalibrationCheck: a calibration holds when the mean over seeds lies
// within its tolerance of the paper's number; a claim resting on a failed
// one is inconclusive and names it, a not-applicable claim stays so.
func TestCalibrationCheck(t *testing.T) {
	f, err := Parse("demo.yaml", []byte(trivialClaim))
	if err != nil {
		t.Fatal(err)
	}
	cal := &f.Calibration[0]
	for _, tc := range []struct {
		cal float64
		ok  bool
	}{{91, true}, {90, true}, {92.5, false}, {79, false}} {
		if got := cal.Check(hitSummaries(t, 5, tc.cal, 60, 61)...); got.OK != tc.ok || got.Value != tc.cal {
			t.Errorf("cal %g: ok %v (value %g), want %v", tc.cal, got.OK, got.Value, tc.ok)
		}
	}
	if got := cal.Check(summary(t, `{}`)); got.OK || got.Err == nil || !strings.Contains(got.Line(), "could not be calibrated") {
		t.Errorf("missing metric: ok %v, err %v, line %q; want a failed calibration naming why", got.OK, got.Err, got.Line())
	}
	cal.Range = []float64{0, 100}
	spread := []any{summary(t, `{"cal": 0}`), summary(t, `{"cal": 0}`), summary(t, `{"cal": 9}`)}
	if got := cal.Check(spread...); got.Lo != 0 || !(got.Hi > 9) || got.Value != 3 {
		t.Errorf("a share's interval across 0, 0, 9: %g [%g, %g], want 3 with the low end cut to 0", got.Value, got.Lo, got.Hi)
	}
	cal.Range = []float64{0, math.Inf(1)} // a ratio's open upper end
	if got := cal.Check(spread...); got.Lo != 0 || !(got.Hi > 9) || math.IsInf(got.Hi, 0) {
		t.Errorf("range [0, +Inf] across 0, 0, 9: [%g, %g], want the low end cut to 0 and the high one kept", got.Lo, got.Hi)
	}
	cal.Range = nil
	if got := cal.Check(spread...); !(got.Lo < 0) {
		t.Errorf("without a range the interval's low end is %g, want it below 0 (the cut above is the range's)", got.Lo)
	}
	r := Result{Claim: &f.Claims[0], Verdict: NotApplicable}
	ApplyCalibrations(&r, map[string]CalResult{"comparator": cal.Check(hitSummaries(t, 0, 79, 60)...)})
	if r.Verdict != NotApplicable {
		t.Errorf("not applicable claim on a failed calibration: %v, want it to stay not applicable", r.Verdict)
	}
}

// TestCalibrationParse: a calibration needs the paper's number and an
// experiment of the file; a claim rests only on the file's calibrations.
func TestCalibrationParse(t *testing.T) {
	for _, tc := range []struct{ from, to, want string }{
		{"rests_on: [comparator]", "rests_on: [other]", `"other" is not a calibration`},
		{"experiment: demo-exp, metric: cal", "experiment: nope, metric: cal", "not the experiment of a claim"},
		{"paper_value: 91, tolerance", "tolerance", "paper_value: missing"},
		{"what: the comparator's own number, where: Fig. 2,", "what: the comparator's own number,", "what and where"},
		{"tolerance: {within_abs: 1}", "tolerance: {within_abs: 1}, search: x.y", "not a sensitivity setting"},
		{"tolerance: {within_abs: 1}", "tolerance: {within_abs: 1}, range: [100, 0]", "range: [100 0], want [lo, hi]"},
	} {
		src := strings.Replace(trivialClaim, tc.from, tc.to, 1)
		if src == trivialClaim {
			t.Fatalf("%q not in the demo file", tc.from)
		}
		if _, err := Parse("demo.yaml", []byte(src)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s → %s: err %v, want one saying %q", tc.from, tc.to, err, tc.want)
		}
	}
}
