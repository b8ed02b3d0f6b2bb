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
	"strings"

	"github.com/hetquic/hetquic/internal/yamlfile"
)

// File is one paper's claims (claims/PAPER.yaml).
type File struct {
	Paper  string  `yaml:"paper"`  // short id, e.g. "pcm-journal"; also the file's name
	Title  string  `yaml:"title"`  // the paper's title as cited
	Source string  `yaml:"source"` // where to read it, e.g. "shared/papers/pcm-quic-journal.txt"
	Claims []Claim `yaml:"claims"`
	// Quick maps an experiment to the seeds "reproduce --quick" runs it
	// with (default: the experiment's own). Only experiments that are slow
	// at full size need an entry.
	Quick map[string]QuickRun `yaml:"quick"`
}

// QuickRun is how "reproduce --quick" shrinks one experiment.
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
	// Failed: the experiment did not run or its summary lacks the metric.
	Failed Verdict = "error"
)

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
	if len(f.Claims) == 0 {
		return errors.New("claims: none")
	}
	for name, q := range f.Quick {
		if q.Seeds < 1 {
			return fmt.Errorf("quick.%s.seeds: %d, want ≥ 1", name, q.Seeds)
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
	Paper   string
	Claim   *Claim
	Value   float64 // hetquic's value (NaN when Err is set)
	Verdict Verdict
	Err     error // why the claim could not be judged
}

// Judge evaluates claim c on the decoded summary.json of its experiment.
func Judge(c *Claim, summary any) Result {
	r := Result{Claim: c, Value: math.NaN()}
	v, err := c.Value(summary)
	if err != nil {
		r.Verdict, r.Err = Failed, err
		return r
	}
	r.Value = v
	switch {
	case c.Refuted != nil && c.Refuted.Holds(v):
		r.Verdict = Refuted
	case c.Reproduced.Holds(v):
		r.Verdict = Reproduced
	default:
		r.Verdict = NotReproduced
	}
	return r
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
	return files, nil
}
