// Package claims reads the papers' claims that "hetquic reproduce" checks and
// judges each against the summary.json of the experiment that measures it.
//
// Claims are data, not code: one YAML file per paper under claims/ (embedded
// in the binary), each claim naming a built-in experiment, a metric path into
// that experiment's summary.json, the paper's number and the conditions under
// which hetquic's number reproduces or refutes it. docs/claims.md is the
// reference for the format; a helper adding a paper's claims only adds a file.
package claims

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/internal/yamlfile"
)

// File is one paper's claims (claims/PAPER.yaml).
type File struct {
	Paper string `yaml:"paper"` // short id, e.g. "pcm-journal"; also the file's name
	Title string `yaml:"title"` // the paper's title as cited
	// Citation is the paper as a reference list cites it: authors, title,
	// venue, year. The results page's Source line prints it.
	Citation string  `yaml:"citation"`
	Source   string  `yaml:"source"` // where to read it, e.g. "shared/papers/pcm-quic-journal.txt"
	Claims   []Claim `yaml:"claims"`
	// Quick maps an experiment to the seeds "reproduce --quick" runs it
	// with (default: the experiment's own). Only experiments that are slow
	// at full size need an entry.
	Quick map[string]QuickRun `yaml:"quick"`
	// Full maps an experiment to the seeds the full run gives it when its
	// file has fewer than its claims need: a ride evaluation's file has one
	// seed per point, and its claims want an interval over several.
	Full map[string]QuickRun `yaml:"full"`
	// Sensitivity lists the settings the reproduction had to guess, each
	// with a plausible range: reproduce re-runs the experiment at every
	// value and says, per claim, whether its verdict holds across the
	// range or at which value it flips.
	Sensitivity []Sensitivity `yaml:"sensitivity"`
	// Unclaimed lists the paper's headline results that have no claim,
	// each with why (no experiment yet, needs a testbed): the page prints
	// them, so a reader sees what is not checked as well as what is.
	Unclaimed []Unclaimed `yaml:"unclaimed"`
	// Calibration lists the baselines' own numbers in the paper, checked
	// on the run before the claims that compare with them are judged.
	Calibration []Calibration `yaml:"calibration"`
}

// Unclaimed is a headline result of the paper without a claim.
type Unclaimed struct {
	Where string `yaml:"where"` // "Fig. 3"
	What  string `yaml:"what"`  // the result, in one sentence
	Why   string `yaml:"why"`   // why it has no claim
}

// Sensitivity is one guessed setting of one experiment and its plausible
// values. Param is a field as a sweep: block names it (docs/sweeps.md):
// the experiment file's own (variants[1].cc, scenario.speed_mps) or its
// scenario's (paths[0].down.rate_mbps).
type Sensitivity struct {
	Experiment string `yaml:"experiment"`
	Param      string `yaml:"param"`
	// Values are the points run, in order; the guess is one of them.
	Values []string `yaml:"values"`
	Guess  string   `yaml:"guess"` // the value the experiment uses
	Why    string   `yaml:"why"`   // what the paper leaves open
	// Seeds per value (default: the quick seeds, else the experiment's).
	Seeds int `yaml:"seeds"`
	// Spread marks values that are not guesses but replicates the
	// experiment could as well have used (policies trained with other
	// seeds): the line is the verdict's spread over them. Reproduce
	// sweeps them in the experiment's own run and judges the claims at
	// the guess, which the experiment file must write.
	Spread bool `yaml:"spread"`
}

// QuickRun is how "reproduce --quick" shrinks one experiment (or the full
// run grows it: File.Full).
type QuickRun struct {
	Seeds int `yaml:"seeds"`
}

// Claim is one number (or one comparison) a paper states.
type Claim struct {
	ID    string `yaml:"id"`    // unique within the paper: [a-z0-9-]+
	Where string `yaml:"where"` // figure, table or section: "§5.1, Table 7"
	Claim string `yaml:"claim"` // what the paper says, in one sentence

	// Experiment is the built-in experiment (hetquic exp list) whose
	// summary.json holds the metric.
	Experiment string `yaml:"experiment"`
	// Metric is a path into summary.json (see Lookup); the claim's value
	// is Metric, divided by Over when Over is set, times Scale.
	Metric string   `yaml:"metric"`
	Over   string   `yaml:"over"`
	Scale  *float64 `yaml:"scale"`
	Unit   string   `yaml:"unit"`

	// PaperValue is the paper's number in the same unit as the claim's
	// value; nil for a qualitative claim ("S = 100 is best"), which then
	// says so in PaperText and is judged by its conditions alone.
	PaperValue *float64 `yaml:"paper_value"`
	PaperText  string   `yaml:"paper_text"` // how the paper states it, when not a plain number
	Setting    string   `yaml:"setting"`    // the paper's setting and ours, where they differ

	// Reproduced holds when hetquic's value reproduces the claim; Refuted,
	// optional, when it contradicts it (the opposite direction, not just
	// another size). Neither: "not reproduced".
	Reproduced Condition  `yaml:"reproduced"`
	Refuted    *Condition `yaml:"refuted"`
	// Note explains a difference: why a claim is not reproduced or
	// refuted, or what the experiment changes from the paper's setting.
	Note string `yaml:"note"`
	// Measured, for a claim whose experiment cannot run where reproduce
	// runs (the real agent through the emulator needs netns): the values
	// an earlier run measured, judged like a run's, with how and when.
	Measured *Measured `yaml:"measured"`

	// Baseline is what a trivial policy or a comparator scores on the same
	// metric by construction (round-robin's hit rate, never-skip's skip
	// ratio, a cache hit's fetch time): a claim whose interval cannot be
	// told from it, or whose test the baseline passes too, is "not a test".
	Baseline *Baseline `yaml:"baseline"`
	// Preconditions are what the claim is about and the run must show (a
	// handover happens, a queue builds): one that fails makes the claim
	// "not applicable" to the run.
	Preconditions []Precondition `yaml:"preconditions"`
	// Deterministic: the experiment has no randomness, so one run is the
	// value. Without it a single value is "inconclusive": one run of a
	// random experiment is not an interval.
	Deterministic bool `yaml:"deterministic"`
	// Range is the metric's possible values (a share: [0, 100] %): the
	// interval is cut to it, as the true mean cannot lie outside.
	Range []float64 `yaml:"range"`
	// Inconsistent names the paper's other sentence that states the
	// opposite: the claim is judged against its own sentence, and the
	// verdict is "paper inconsistent".
	Inconsistent *Inconsistent `yaml:"inconsistent"`
	// RestsOn names the file's calibrations of the baseline the claim
	// compares with: when one fails the claim is "inconclusive".
	RestsOn []string `yaml:"rests_on"`
}

// Measured is a claim's value from a recorded run: one value per run or
// seed (two or more give an interval), the command that measured it and
// the date, so a reader can run it again.
type Measured struct {
	Values  []float64 `yaml:"values"`
	Command string    `yaml:"command"`
	Date    string    `yaml:"date"`    // YYYY-MM-DD
	Machine string    `yaml:"machine"` // cores, load: what the numbers ran on
}

// Condition is a test on a value; every field set must hold. WithinRel and
// WithinAbs compare with the claim's PaperValue.
type Condition struct {
	WithinRel *float64  `yaml:"within_rel"` // |v − paper| ≤ within_rel·|paper|
	WithinAbs *float64  `yaml:"within_abs"` // |v − paper| ≤ within_abs
	AtLeast   *float64  `yaml:"at_least"`   // v ≥ at_least
	AtMost    *float64  `yaml:"at_most"`    // v ≤ at_most
	Between   []float64 `yaml:"between"`    // lo ≤ v ≤ hi
	paper     *float64  // the claim's PaperValue, set by Parse
}

// Verdict of one claim.
type Verdict string

// The verdicts, as the results page prints them.
const (
	Reproduced    Verdict = "reproduced"
	NotReproduced Verdict = "not reproduced"
	Refuted       Verdict = "refuted"
	// Inconclusive: the 95 % confidence interval over seeds straddles a
	// threshold, so more seeds could move the verdict either way.
	Inconclusive Verdict = "inconclusive"
	// Failed: the experiment did not run or its summary lacks the metric.
	Failed Verdict = "error"
	// NotATest: a trivial policy or the baseline by construction scores
	// the same, or passes the same test: the verdict could not fail.
	NotATest Verdict = "not a test"
	// NotApplicable: a precondition of the claim failed in the run (no
	// handover, no queue): the run lacks the effect the claim is about.
	NotApplicable Verdict = "not applicable"
	// PaperInconsistent: the paper states the claim and its opposite.
	PaperInconsistent Verdict = "paper inconsistent"
)

// Verdicts lists every verdict in the order the pages count them.
var Verdicts = []Verdict{Reproduced, NotReproduced, Refuted, Inconclusive, NotATest, NotApplicable, PaperInconsistent, Failed}

var idRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)

// Parse decodes and checks one claims file. name is used in errors.
func Parse(name string, data []byte) (*File, error) {
	var f File
	if err := yamlfile.Decode(name, data, &f); err != nil {
		return nil, err
	}
	if err := f.check(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &f, nil
}

func (f *File) check() error {
	if !idRE.MatchString(f.Paper) {
		return fmt.Errorf("paper: %q is not an id ([a-z0-9-]+)", f.Paper)
	}
	if strings.TrimSpace(f.Title) == "" {
		return errors.New("title: missing")
	}
	if strings.TrimSpace(f.Citation) == "" {
		return errors.New("citation: missing (authors, title, venue, year)")
	}
	if len(f.Claims) == 0 {
		return errors.New("claims: none")
	}
	for key, m := range map[string]map[string]QuickRun{"quick": f.Quick, "full": f.Full} {
		for name, q := range m {
			if q.Seeds < 1 {
				return fmt.Errorf("%s.%s.seeds: %d, want ≥ 1", key, name, q.Seeds)
			}
		}
	}
	seen := map[string]bool{}
	for i := range f.Claims {
		c := &f.Claims[i]
		if err := c.check(); err != nil {
			return fmt.Errorf("claims[%d] (%s): %w", i, c.ID, err)
		}
		if seen[c.ID] {
			return fmt.Errorf("claims[%d]: duplicate id %q", i, c.ID)
		}
		seen[c.ID] = true
	}
	for i, u := range f.Unclaimed {
		if strings.TrimSpace(u.Where) == "" || strings.TrimSpace(u.What) == "" || strings.TrimSpace(u.Why) == "" {
			return fmt.Errorf("unclaimed[%d]: where, what and why are all needed", i)
		}
	}
	for i, sn := range f.Sensitivity {
		if err := sn.check(f); err != nil {
			return fmt.Errorf("sensitivity[%d] (%s): %w", i, sn.Param, err)
		}
	}
	return f.checkCalibrations()
}

func (sn *Sensitivity) check(f *File) error {
	switch {
	case !slices.ContainsFunc(f.Claims, func(c Claim) bool { return c.Experiment == sn.Experiment && c.Measured == nil }):
		return fmt.Errorf("experiment: %q is not the experiment of a claim of this file that reproduce runs", sn.Experiment)
	case strings.TrimSpace(sn.Param) == "":
		return errors.New("param: missing")
	case len(sn.Values) < 2:
		return fmt.Errorf("values: %d, want at least two", len(sn.Values))
	case !slices.Contains(sn.Values, sn.Guess):
		return fmt.Errorf("guess: %q is not one of values %v", sn.Guess, sn.Values)
	case sn.Seeds < 0:
		return fmt.Errorf("seeds: %d, want ≥ 0", sn.Seeds)
	case sn.Spread && sn.Seeds != 0:
		return errors.New("seeds: a spread entry runs its experiment's seeds (its replicates and the claims' verdict are one run)")
	}
	return nil
}

var dateRE = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)

func (m *Measured) check() error {
	switch {
	case len(m.Values) == 0:
		return errors.New("values: none")
	case strings.TrimSpace(m.Command) == "":
		return errors.New("command: missing (how to measure it again)")
	case !dateRE.MatchString(m.Date):
		return fmt.Errorf("date: %q, want YYYY-MM-DD", m.Date)
	}
	for _, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("values: %g is not a finite number", v)
		}
	}
	return nil
}

func (c *Claim) check() error {
	switch {
	case !idRE.MatchString(c.ID):
		return fmt.Errorf("id: %q is not an id ([a-z0-9-]+)", c.ID)
	case strings.TrimSpace(c.Where) == "":
		return errors.New("where: missing (figure, table or section)")
	case strings.TrimSpace(c.Claim) == "":
		return errors.New("claim: missing")
	case !idRE.MatchString(c.Experiment):
		return fmt.Errorf("experiment: %q is not an experiment name", c.Experiment)
	case c.PaperValue == nil && c.PaperText == "":
		return errors.New("paper_value or paper_text: one is needed")
	case c.Scale != nil && (*c.Scale == 0 || math.IsNaN(*c.Scale) || math.IsInf(*c.Scale, 0)):
		return fmt.Errorf("scale: %g must be finite and non-zero", *c.Scale)
	}
	if _, err := parsePath(c.Metric); err != nil {
		return fmt.Errorf("metric: %w", err)
	}
	if c.Over != "" {
		if _, err := parsePath(c.Over); err != nil {
			return fmt.Errorf("over: %w", err)
		}
	}
	if c.Measured != nil {
		if err := c.Measured.check(); err != nil {
			return fmt.Errorf("measured: %w", err)
		}
	}
	if err := c.checkJudging(); err != nil {
		return err
	}
	c.Reproduced.paper = c.PaperValue
	if err := c.Reproduced.check(); err != nil {
		return fmt.Errorf("reproduced: %w", err)
	}
	if c.Refuted != nil {
		c.Refuted.paper = c.PaperValue
		if err := c.Refuted.check(); err != nil {
			return fmt.Errorf("refuted: %w", err)
		}
	}
	return nil
}

func (d *Condition) check() error {
	n := 0
	for _, p := range []*float64{d.WithinRel, d.WithinAbs, d.AtLeast, d.AtMost} {
		if p != nil {
			if math.IsNaN(*p) || math.IsInf(*p, 0) {
				return fmt.Errorf("%g is not a finite number", *p)
			}
			n++
		}
	}
	if (d.WithinRel != nil && *d.WithinRel < 0) || (d.WithinAbs != nil && *d.WithinAbs < 0) {
		return errors.New("within_rel and within_abs must be ≥ 0")
	}
	if (d.WithinRel != nil || d.WithinAbs != nil) && d.paper == nil {
		return errors.New("within_rel/within_abs need the claim's paper_value")
	}
	if d.Between != nil {
		if len(d.Between) != 2 || !(d.Between[0] <= d.Between[1]) {
			return fmt.Errorf("between: %v, want [lo, hi] with lo ≤ hi", d.Between)
		}
		n++
	}
	if n == 0 {
		return errors.New("no condition (within_rel, within_abs, at_least, at_most or between)")
	}
	return nil
}

// roundoff keeps a value on the edge of a tolerance (2.2 against 2 ± 10 %)
// inside it whatever the last bits of its division.
const roundoff = 1e-9

// Holds reports whether v meets every test of the condition, within_rel and
// within_abs against the claim's paper_value.
func (d *Condition) Holds(v float64) bool {
	ref := math.NaN()
	if d.paper != nil {
		ref = *d.paper
	}
	return d.HoldsAgainst(v, ref)
}

// HoldsAgainst is Holds with within_rel and within_abs measured from ref
// instead of the paper's value: a golden test's pins compare a summary
// with the stored golden summary this way.
func (d *Condition) HoldsAgainst(v, ref float64) bool {
	if math.IsNaN(v) {
		return false
	}
	ok := true
	if d.WithinRel != nil {
		ok = ok && math.Abs(v-ref) <= *d.WithinRel*math.Abs(ref)+roundoff
	}
	if d.WithinAbs != nil {
		ok = ok && math.Abs(v-ref) <= *d.WithinAbs+roundoff
	}
	if d.AtLeast != nil {
		ok = ok && v >= *d.AtLeast
	}
	if d.AtMost != nil {
		ok = ok && v <= *d.AtMost
	}
	if d.Between != nil {
		ok = ok && v >= d.Between[0] && v <= d.Between[1]
	}
	return ok
}

// String renders the condition for the results page: "within 10 % of the
// paper", "≥ 2".
func (d *Condition) String() string {
	var parts []string
	if d.WithinRel != nil {
		parts = append(parts, fmt.Sprintf("within %g %% of the paper", 100**d.WithinRel))
	}
	if d.WithinAbs != nil {
		parts = append(parts, fmt.Sprintf("within ±%g of the paper", *d.WithinAbs))
	}
	if d.AtLeast != nil {
		parts = append(parts, fmt.Sprintf("≥ %g", *d.AtLeast))
	}
	if d.AtMost != nil {
		parts = append(parts, fmt.Sprintf("≤ %g", *d.AtMost))
	}
	if d.Between != nil {
		parts = append(parts, fmt.Sprintf("in [%g, %g]", d.Between[0], d.Between[1]))
	}
	return strings.Join(parts, " and ")
}

// Result is one judged claim.
type Result struct {
	Paper string
	Claim *Claim
	// Value is hetquic's value: the mean over seeds (NaN when Err is set);
	// CI the half-width of its 95 % Student-t interval (NaN for one seed),
	// Values the per-seed values it came from.
	Value   float64
	CI      float64
	Values  []float64
	Verdict Verdict
	Err     error // why the claim could not be judged
	// Lo and Hi are the interval the verdict is of: Value ± CI cut to the
	// claim's Range, the value itself for one run.
	Lo, Hi float64
	// Own is the verdict of the interval against the claim's conditions
	// alone, before a baseline, precondition or the paper's other sentence
	// changed it into Verdict.
	Own Verdict
	// Base is the baseline's score (nil without one).
	Base *Interval
	// Why says what made Verdict differ from Own: the precondition that
	// failed, the one run, the baseline.
	Why []string
}

// Interval is a value with the ends of its 95 % interval.
type Interval struct{ Value, Lo, Hi float64 }

// Low and High are the ends of the 95 % interval (the value itself for one
// run).
func (r Result) Low() float64  { return r.Lo }
func (r Result) High() float64 { return r.Hi }

// Judge evaluates claim c on decoded summary.json files of its experiment,
// one per seed: the mean of the claim's value and its 95 % Student-t
// interval, and the verdict of that interval (Verdict), then the checks
// that can overrule it (decide). A ratio claim (over:) is the ratio of the
// two means, its interval by the delta method (paired seeds), so that a
// seed whose denominator is 0 does not void it.
func Judge(c *Claim, summaries ...any) Result {
	m, err := measure(c.Metric, c.Over, c.Scale, summaries)
	r := Result{Claim: c, Value: m.value, CI: m.ci, Values: m.values, Lo: math.NaN(), Hi: math.NaN()}
	if err != nil {
		// A run without the effect may lack the value too (no recovery
		// to time, a comparator of 0): the failed precondition says why.
		if unmet, uerr := c.unmet(summaries); uerr == nil && len(unmet) > 0 {
			r.Verdict, r.Why = NotApplicable, append(unmet, "no value: "+err.Error())
			return r
		}
		r.Verdict, r.Err = Failed, err
		return r
	}
	c.decide(&r, summaries)
	return r
}

// measurement is a metric's mean over seeds, its 95 % half-width (NaN for
// one seed) and the per-seed values.
type measurement struct {
	value, ci float64
	values    []float64
}

// measure reads metric (divided by over, times scale) from every summary.
func measure(metric, over string, scale *float64, summaries []any) (measurement, error) {
	m := measurement{value: math.NaN(), ci: math.NaN()}
	var nums, dens []float64
	for _, s := range summaries {
		v, err := Lookup(s, metric)
		if err != nil {
			return m, err
		}
		nums = append(nums, v)
		if over != "" {
			d, err := Lookup(s, over)
			if err != nil {
				return m, err
			}
			dens = append(dens, d)
		}
	}
	if len(nums) == 0 {
		return m, errors.New("no values to judge")
	}
	if over == "" {
		m.value, m.values = stats.Mean(nums), nums
		if len(nums) > 1 {
			m.ci = stats.CI95(nums)
		}
		return m.scaled(scale), nil
	}
	md := stats.Mean(dens)
	if md == 0 {
		return m, fmt.Errorf("%s is 0: cannot divide by it", over)
	}
	m.value = stats.Mean(nums) / md
	if len(nums) > 1 {
		m.ci = ratioCI(nums, dens, m.value)
	}
	for i := range nums {
		m.values = append(m.values, nums[i]/dens[i])
	}
	return m.scaled(scale), nil
}

func (m measurement) scaled(scale *float64) measurement {
	if scale == nil {
		return m
	}
	out := measurement{value: m.value * *scale, ci: m.ci * math.Abs(*scale)}
	for _, v := range m.values {
		out.values = append(out.values, v**scale)
	}
	return out
}

// ratioCI is the half-width of the 95 % interval of ratio = mean(n)/mean(d)
// by the delta method: Var ≈ (s²_n − 2·ratio·s_nd + ratio²·s²_d) / (k·mean(d)²).
func ratioCI(n, d []float64, ratio float64) float64 {
	k := float64(len(n))
	mn, md := stats.Mean(n), stats.Mean(d)
	var snn, sdd, snd float64
	for i := range n {
		a, b := n[i]-mn, d[i]-md
		snn, sdd, snd = snn+a*a, sdd+b*b, snd+a*b
	}
	snn, sdd, snd = snn/(k-1), sdd/(k-1), snd/(k-1)
	v := (snn - 2*ratio*snd + ratio*ratio*sdd) / (k * md * md)
	return stats.TQuantile(0.975, len(n)-1) * math.Sqrt(math.Max(v, 0))
}

// JudgeValues judges claim c on its per-seed values (already divided and
// scaled: a claims file's measured values).
func JudgeValues(c *Claim, vals []float64) Result {
	r := Result{Claim: c, Values: vals, Value: math.NaN(), CI: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
	if len(vals) == 0 {
		r.Verdict, r.Err = Failed, errors.New("no values to judge")
		return r
	}
	r.Value = stats.Mean(vals)
	if len(vals) > 1 {
		r.CI = stats.CI95(vals)
	}
	c.decide(&r, nil)
	return r
}

// Verdict of the interval [lo, hi] of hetquic's value: refuted, reproduced
// or not reproduced when every value in it has that verdict, inconclusive
// when it straddles a threshold. Each condition is an interval of values
// (its tests intersected), so a condition holds on all of [lo, hi] exactly
// when it holds at both ends.
func (c *Claim) Verdict(lo, hi float64) Verdict {
	if math.IsNaN(lo) || math.IsNaN(hi) {
		return Failed
	}
	if c.Refuted != nil {
		switch c.Refuted.cover(lo, hi) {
		case all:
			return Refuted
		case some:
			return Inconclusive
		}
	}
	switch c.Reproduced.cover(lo, hi) {
	case all:
		return Reproduced
	case some:
		return Inconclusive
	}
	return NotReproduced
}

type coverage int

const (
	none coverage = iota
	some
	all
)

// cover says how much of [lo, hi] the condition holds on.
func (d *Condition) cover(lo, hi float64) coverage {
	a, b := d.bounds()
	switch {
	case a > b || hi < a-roundoff || lo > b+roundoff:
		return none
	case lo >= a-roundoff && hi <= b+roundoff:
		return all
	}
	return some
}

// bounds is the interval of values the condition holds on (a > b: none).
func (d *Condition) bounds() (lo, hi float64) {
	lo, hi = math.Inf(-1), math.Inf(1)
	clip := func(a, b float64) { lo, hi = math.Max(lo, a), math.Min(hi, b) }
	if d.paper != nil {
		p := *d.paper
		if d.WithinRel != nil {
			clip(p-*d.WithinRel*math.Abs(p), p+*d.WithinRel*math.Abs(p))
		}
		if d.WithinAbs != nil {
			clip(p-*d.WithinAbs, p+*d.WithinAbs)
		}
	}
	if d.AtLeast != nil {
		clip(*d.AtLeast, math.Inf(1))
	}
	if d.AtMost != nil {
		clip(math.Inf(-1), *d.AtMost)
	}
	if d.Between != nil {
		clip(d.Between[0], d.Between[1])
	}
	return lo, hi
}

// Value computes the claim's value from a decoded summary.json.
func (c *Claim) Value(summary any) (float64, error) {
	v, err := Lookup(summary, c.Metric)
	if err != nil {
		return math.NaN(), err
	}
	if c.Over != "" {
		d, err := Lookup(summary, c.Over)
		if err != nil {
			return math.NaN(), err
		}
		if d == 0 {
			return math.NaN(), fmt.Errorf("%s is 0: cannot divide by it", c.Over)
		}
		v /= d
	}
	if c.Scale != nil {
		v *= *c.Scale
	}
	return v, nil
}

// LoadAll parses every *.yaml file in dir of fsys, sorted by name. Each
// file's name must be its paper id, so two files cannot claim one paper.
func LoadAll(fsys fs.FS, dir string) ([]*File, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var files []*File
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".yaml" {
			continue
		}
		name := path.Join(dir, e.Name())
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		f, err := Parse(name, data)
		if err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(e.Name(), ".yaml"); f.Paper != want {
			return nil, fmt.Errorf("%s: paper: %q, want the file's name %q", name, f.Paper, want)
		}
		files = append(files, f)
	}
	return files, checkShared(files)
}

// checkShared: two files may name the same experiment's setting (one
// sweep serves both papers' claims, reproduce runs it once), but then with
// the same values and guess.
func checkShared(files []*File) error {
	type key struct{ exp, param string }
	first := map[key]*File{}
	for _, f := range files {
		for _, sn := range f.Sensitivity {
			k := key{sn.Experiment, sn.Param}
			g, ok := first[k]
			if !ok {
				first[k] = f
				continue
			}
			i := slices.IndexFunc(g.Sensitivity, func(o Sensitivity) bool { return o.Experiment == k.exp && o.Param == k.param })
			o := g.Sensitivity[i]
			if !slices.Equal(o.Values, sn.Values) || o.Guess != sn.Guess {
				return fmt.Errorf("%s: sensitivity %s × %s: values %v (guess %s) differ from %s's %v (guess %s)",
					f.Paper, k.exp, k.param, sn.Values, sn.Guess, g.Paper, o.Values, o.Guess)
			}
		}
	}
	return nil
}
