package claims

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Baseline is what a trivial policy, or the comparator by construction,
// scores on a claim's metric. Either Value (a number by construction:
// round-robin over four paths hits the best one 25 % of the time) or Metric
// (a row of the same summary: uniform-random's convergence point, read
// like the claim's metric, with over and the claim's scale).
type Baseline struct {
	What   string   `yaml:"what"` // the trivial policy, and why it scores that
	Value  *float64 `yaml:"value"`
	Metric string   `yaml:"metric"`
	Over   string   `yaml:"over"`
}

// Precondition is a fact the claim presumes and the run must show, read
// from the same summaries as the claim (the mean over seeds): a handover
// happens (handovers ≥ 1), a queue builds, the paths differ.
type Precondition struct {
	What   string    `yaml:"what"` // "the transfer crosses a handover"
	Metric string    `yaml:"metric"`
	Over   string    `yaml:"over"`
	Scale  *float64  `yaml:"scale"`
	Holds  Condition `yaml:"holds"`
}

// Inconsistent is the paper's other sentence that states the opposite of
// the claim.
type Inconsistent struct {
	Where string `yaml:"where"` // "§5.1.1, l. 679"
	Text  string `yaml:"text"`  // the other sentence, quoted
}

// checkJudging checks the fields that can overrule the interval's verdict.
func (c *Claim) checkJudging() error {
	if err := c.checkBaseline(); err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	for i := range c.Preconditions {
		if err := c.Preconditions[i].check(c.Measured != nil); err != nil {
			return fmt.Errorf("preconditions[%d]: %w", i, err)
		}
	}
	if err := checkRange(c.Range); err != nil {
		return err
	}
	if in := c.Inconsistent; in != nil && (strings.TrimSpace(in.Where) == "" || strings.TrimSpace(in.Text) == "") {
		return errors.New("inconsistent: where and text are both needed (the paper's other sentence)")
	}
	if c.Deterministic && c.Measured != nil && len(c.Measured.Values) > 1 {
		return errors.New("deterministic: a deterministic claim has one value, measured has several")
	}
	return nil
}

func (c *Claim) checkBaseline() error {
	b := c.Baseline
	switch {
	case b == nil:
		return nil
	case strings.TrimSpace(b.What) == "":
		return errors.New("what: missing (the trivial policy and why it scores that)")
	case (b.Value == nil) == (b.Metric == ""):
		return errors.New("value or metric: exactly one is needed")
	case b.Value != nil && (math.IsNaN(*b.Value) || math.IsInf(*b.Value, 0)):
		return fmt.Errorf("value: %g is not a finite number", *b.Value)
	case b.Metric != "" && c.Measured != nil:
		return errors.New("metric: a claim with measured values has no summary to read it from (give value)")
	case b.Over != "" && b.Metric == "":
		return errors.New("over: needs metric")
	}
	for _, p := range []string{b.Metric, b.Over} {
		if p == "" {
			continue
		}
		if _, err := parsePath(p); err != nil {
			return err
		}
	}
	return nil
}

func (p *Precondition) check(measured bool) error {
	switch {
	case strings.TrimSpace(p.What) == "":
		return errors.New("what: missing (the fact the claim presumes)")
	case measured:
		return errors.New("a claim with measured values has no run to check it on")
	case p.Holds.WithinRel != nil || p.Holds.WithinAbs != nil:
		return errors.New("holds: within_rel/within_abs need a paper value; use at_least, at_most or between")
	}
	if _, err := parsePath(p.Metric); err != nil {
		return fmt.Errorf("metric: %w", err)
	}
	if p.Over != "" {
		if _, err := parsePath(p.Over); err != nil {
			return fmt.Errorf("over: %w", err)
		}
	}
	if err := p.Holds.check(); err != nil {
		return fmt.Errorf("holds: %w", err)
	}
	return nil
}

// decide sets the interval and the verdict of a measured result: the
// interval's own verdict (Own), then, in this order, a failed
// precondition (not applicable), one run of a random experiment
// (inconclusive), a baseline the interval cannot be told
// from (not a test), the paper's contradiction (paper inconsistent).
func (c *Claim) decide(r *Result, summaries []any) {
	r.Lo, r.Hi = c.interval(r.Value, r.CI)
	r.Own = c.Verdict(r.Lo, r.Hi)
	r.Verdict = r.Own
	unmet, err := c.unmet(summaries)
	if err == nil && c.Baseline != nil {
		r.Base, err = c.baseline(summaries)
	}
	if err != nil {
		r.Verdict, r.Err = Failed, err
		return
	}
	switch {
	case len(unmet) > 0:
		r.Verdict, r.Why = NotApplicable, unmet
	case r.Base != nil && r.Own == Reproduced && c.Reproduced.inside(r.Base.Value):
		r.Verdict = NotATest
		r.Why = []string{c.trivialWhy(r)}
	case len(r.Values) == 1 && !c.Deterministic:
		r.Verdict = Inconclusive
		r.Why = []string{"one run of an experiment that is not deterministic: no interval to judge"}
	case r.Base != nil && c.trivial(r):
		r.Verdict = NotATest
		r.Why = []string{c.trivialWhy(r)}
	case c.Inconsistent != nil:
		r.Verdict = PaperInconsistent
		r.Why = []string{fmt.Sprintf("the paper also states the opposite (%s: %q); against its own sentence the verdict is %s",
			oneLine(c.Inconsistent.Where), oneLine(c.Inconsistent.Text), r.Own)}
	}
}

// interval is value ± ci cut to the claim's range; the value itself when
// there is no interval (one run).
func (c *Claim) interval(value, ci float64) (lo, hi float64) {
	lo, hi = value, value
	if !math.IsNaN(ci) {
		lo, hi = value-ci, value+ci
	}
	return cutToRange(lo, hi, c.Range)
}

// checkRange accepts no range or [lo, hi] with lo < hi; an end may be
// infinite (.inf in YAML: a ratio of non-negative means is [0, .inf]).
func checkRange(r []float64) error {
	if r != nil && (len(r) != 2 || !(r[0] < r[1])) {
		return fmt.Errorf("range: %v, want [lo, hi] with lo < hi", r)
	}
	return nil
}

// cutToRange cuts an interval to the metric's possible values: the true
// mean cannot lie outside them, so the cut interval covers it at least as
// often as the uncut one.
func cutToRange(lo, hi float64, r []float64) (float64, float64) {
	if r == nil {
		return lo, hi
	}
	return math.Max(lo, r[0]), math.Min(hi, r[1])
}

// unmet lists the preconditions that fail in the run: the facts the claim
// presumes.
func (c *Claim) unmet(summaries []any) ([]string, error) {
	var facts []string
	for _, p := range c.Preconditions {
		m, err := measure(p.Metric, p.Over, p.Scale, summaries)
		if err != nil {
			return nil, fmt.Errorf("precondition %q: %w", p.What, err)
		}
		if !p.Holds.Holds(m.value) {
			facts = append(facts, fmt.Sprintf("precondition failed: %s (%s is %s, needs %s)", oneLine(p.What), p.Metric, fmtNum(m.value), p.Holds.String()))
		}
	}
	return facts, nil
}

// baseline scores the claim's baseline: its value, or its metric's mean
// and interval over the same summaries, in the claim's unit.
func (c *Claim) baseline(summaries []any) (*Interval, error) {
	b := c.Baseline
	if b.Value != nil {
		return &Interval{Value: *b.Value, Lo: *b.Value, Hi: *b.Value}, nil
	}
	m, err := measure(b.Metric, b.Over, c.Scale, summaries)
	if err != nil {
		return nil, fmt.Errorf("baseline %q: %w", b.What, err)
	}
	lo, hi := c.interval(m.value, m.ci)
	return &Interval{Value: m.value, Lo: lo, Hi: hi}, nil
}

// trivial reports whether the claim's test cannot tell hetquic from its
// baseline: the test passes and the baseline would pass it too, or the
// two intervals overlap while the verdict is reproduced or undecided. A
// refutation or a miss stays: the trivial policy's score then is the news.
func (c *Claim) trivial(r *Result) bool {
	if r.Own != Reproduced && r.Own != Inconclusive {
		return false
	}
	overlap := r.Lo <= r.Base.Hi+roundoff && r.Base.Lo <= r.Hi+roundoff
	return overlap || (r.Own == Reproduced && c.Reproduced.inside(r.Base.Value))
}

// inside reports whether v lies strictly inside the values the condition
// holds on: a comparator's ratio of 1 on the edge of "≤ 1" does not pass
// "A beats B", a policy that is B.
func (d *Condition) inside(v float64) bool {
	lo, hi := d.bounds()
	return v > lo && v < hi
}

func (c *Claim) trivialWhy(r *Result) string {
	b := fmt.Sprintf("%s scores %s", oneLine(c.Baseline.What), fmtNum(r.Base.Value))
	if r.Base.Lo != r.Base.Hi {
		b += fmt.Sprintf(" [%s, %s]", fmtNum(r.Base.Lo), fmtNum(r.Base.Hi))
	}
	if r.Lo <= r.Base.Hi+roundoff && r.Base.Lo <= r.Hi+roundoff {
		return b + ", which hetquic's interval cannot be told from"
	}
	return b + fmt.Sprintf(", which passes the same test (%s)", c.Reproduced.String())
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// fmtNum prints four significant digits.
func fmtNum(v float64) string { return fmt.Sprintf("%.4g", v) }
