package claims

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// Calibration is a baseline's own number in the paper (RR interrupts
// 10.3 % of I frames), checked on the run before the claims that compare a
// scheme with that baseline are judged. A claim names the calibrations it
// rests on (Claim.RestsOn); when one fails, the comparator is not the
// paper's, and the claim is "inconclusive" whatever its interval says.
type Calibration struct {
	ID         string   `yaml:"id"`    // unique within the file: [a-z0-9-]+
	What       string   `yaml:"what"`  // the baseline's number, in words
	Where      string   `yaml:"where"` // the paper's figure or table
	Experiment string   `yaml:"experiment"`
	Metric     string   `yaml:"metric"`
	Over       string   `yaml:"over"`
	Scale      *float64 `yaml:"scale"`
	Unit       string   `yaml:"unit"`
	PaperValue *float64 `yaml:"paper_value"`
	// Tolerance is how close the run's mean over seeds must come to the
	// paper's number (within_rel: 0.5 — within half).
	Tolerance Condition `yaml:"tolerance"`
	// Search names a setting of the experiment the file's sensitivity
	// entries sweep (ride.max_loss): the check is repeated at each of its
	// values, so the page says where the baseline would be calibrated.
	Search string `yaml:"search"`
	// Range is the metric's possible values, as a claim's: the interval
	// the page prints is cut to it (a share's stays in [0, 100] %).
	Range []float64 `yaml:"range"`
	// Note says, in a sentence the page prints under the table, why the
	// baseline cannot be calibrated here or what its calibration rests on
	// (a setting chosen to meet it, a narrow margin).
	Note string `yaml:"note"`
}

// CalResult is one calibration checked on one run.
type CalResult struct {
	Cal    *Calibration
	Value  float64 // the mean over seeds (NaN when Err is set)
	Lo, Hi float64 // its 95 % interval (the value itself for one run)
	Values []float64
	OK     bool // the mean lies within the tolerance
	Err    error
}

func (cal *Calibration) check(f *File) error {
	switch {
	case !idRE.MatchString(cal.ID):
		return fmt.Errorf("id: %q is not an id ([a-z0-9-]+)", cal.ID)
	case strings.TrimSpace(cal.What) == "" || strings.TrimSpace(cal.Where) == "":
		return errors.New("what and where: both are needed (the baseline's number and the paper's figure)")
	case cal.PaperValue == nil:
		return errors.New("paper_value: missing (the baseline's number in the paper)")
	case !slices.ContainsFunc(f.Claims, func(c Claim) bool { return c.Experiment == cal.Experiment && c.Measured == nil }):
		return fmt.Errorf("experiment: %q is not the experiment of a claim of this file that reproduce runs", cal.Experiment)
	case cal.Search != "" && !slices.ContainsFunc(f.Sensitivity, func(sn Sensitivity) bool {
		return sn.Experiment == cal.Experiment && sn.Param == cal.Search && !sn.Spread
	}):
		return fmt.Errorf("search: %q is not a sensitivity setting of %s in this file", cal.Search, cal.Experiment)
	}
	if _, err := parsePath(cal.Metric); err != nil {
		return fmt.Errorf("metric: %w", err)
	}
	if cal.Over != "" {
		if _, err := parsePath(cal.Over); err != nil {
			return fmt.Errorf("over: %w", err)
		}
	}
	if err := checkRange(cal.Range); err != nil {
		return err
	}
	cal.Tolerance.paper = cal.PaperValue
	if err := cal.Tolerance.check(); err != nil {
		return fmt.Errorf("tolerance: %w", err)
	}
	return nil
}

// checkCalibrations checks the file's calibrations and that every claim
// rests only on calibrations the file has.
func (f *File) checkCalibrations() error {
	ids := map[string]bool{}
	for i := range f.Calibration {
		cal := &f.Calibration[i]
		if err := cal.check(f); err != nil {
			return fmt.Errorf("calibration[%d] (%s): %w", i, cal.ID, err)
		}
		if ids[cal.ID] {
			return fmt.Errorf("calibration[%d]: duplicate id %q", i, cal.ID)
		}
		ids[cal.ID] = true
	}
	for i, c := range f.Claims {
		for _, id := range c.RestsOn {
			if !ids[id] {
				return fmt.Errorf("claims[%d] (%s): rests_on: %q is not a calibration of this file", i, c.ID, id)
			}
		}
		if len(c.RestsOn) > 0 && c.Measured != nil {
			return fmt.Errorf("claims[%d] (%s): rests_on: a claim with measured values has no run to calibrate", i, c.ID)
		}
	}
	return nil
}

// Check judges the calibration on decoded summary.json files of its
// experiment, one per seed: calibrated when the mean over seeds lies
// within the tolerance of the paper's number.
func (cal *Calibration) Check(summaries ...any) CalResult {
	m, err := measure(cal.Metric, cal.Over, cal.Scale, summaries)
	r := CalResult{Cal: cal, Value: m.value, Values: m.values, Lo: m.value, Hi: m.value, Err: err}
	if err != nil {
		r.Value, r.Lo, r.Hi = math.NaN(), math.NaN(), math.NaN()
		return r
	}
	if !math.IsNaN(m.ci) {
		r.Lo, r.Hi = m.value-m.ci, m.value+m.ci
	}
	r.Lo, r.Hi = cutToRange(r.Lo, r.Hi, cal.Range)
	r.OK = cal.Tolerance.Holds(m.value)
	return r
}

// Line says why the calibration failed, for the claims resting on it.
func (r CalResult) Line() string {
	if r.Err != nil {
		return fmt.Sprintf("the baseline could not be calibrated: %s (%s)", oneLine(r.Cal.What), oneLine(r.Err.Error()))
	}
	return fmt.Sprintf("the baseline is not calibrated: %s is %s%s here, needs %s (%s)",
		oneLine(r.Cal.What), fmtNum(r.Value), unitSuffix(r.Cal.Unit), r.Cal.Tolerance.String(), fmtNum(*r.Cal.PaperValue))
}

func unitSuffix(u string) string {
	if u == "" {
		return ""
	}
	return " " + u
}

// ApplyCalibrations makes r inconclusive when a calibration its claim
// rests on failed (cals: the file's, by id). A failed precondition (not
// applicable) and an error stay: the run lacks the effect or the value.
func ApplyCalibrations(r *Result, cals map[string]CalResult) {
	if r.Verdict == NotApplicable || r.Verdict == Failed {
		return
	}
	var why []string
	for _, id := range r.Claim.RestsOn {
		if cr, ok := cals[id]; ok && !cr.OK {
			why = append(why, cr.Line())
		}
	}
	if len(why) > 0 {
		r.Verdict, r.Why = Inconclusive, why
	}
}
