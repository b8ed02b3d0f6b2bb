package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/hetquic/hetquic/internal/claims"
	"github.com/hetquic/hetquic/internal/results"
)

// machine is what the page's version line records: the build, the cores
// and the load average before the run, and the workers sized from them.
type machine struct {
	Version string  `json:"version"`
	Cores   int     `json:"cores"`
	Load    float64 `json:"load1"` // 1-minute load average before the run (NaN: unknown)
	Workers int     `json:"workers"`
}

// shareWorkers is how many runs reproduce starts at once: the cores that
// the load leaves free, at least one. On a shared machine more would
// oversubscribe the cores, and every job, this one included, would slow
// by more than it gains.
func shareWorkers(cores int, load float64) int {
	if math.IsNaN(load) || load < 0 {
		return max(cores, 1)
	}
	return max(cores-int(math.Floor(load)), 1)
}

func (m machine) String() string {
	load := "unknown"
	if !math.IsNaN(m.Load) {
		load = strconv.FormatFloat(m.Load, 'f', 2, 64)
	}
	return fmt.Sprintf("%s; %d cores, load %s before the run; %d workers", m.Version, m.Cores, load, m.Workers)
}

func currentMachine(workers int) machine {
	p := results.CurrentProvenance()
	m := machine{Version: p.Hetquic.String(), Cores: p.Cores, Load: math.NaN()}
	if len(p.LoadAvg) > 0 {
		m.Load = p.LoadAvg[0]
	}
	m.Workers = workers
	if m.Workers == 0 {
		m.Workers = shareWorkers(m.Cores, m.Load)
	}
	return m
}

// indexJSON is DIR/index.json: the page as data, one record per claim.
type indexJSON struct {
	Command string      `json:"command"`
	Machine machine     `json:"machine"`
	Date    string      `json:"date"`
	Elapsed float64     `json:"elapsed_s"`
	Counts  []paperJSON `json:"papers"`
	Claims  []claimJSON `json:"claims"`
	// Calibrations are the baselines' own numbers, checked before the
	// claims resting on them were judged.
	Calibrations []calJSON `json:"calibrations"`
	Runs         []runJSON `json:"runs"`
}

type calJSON struct {
	Paper      string    `json:"paper"`
	ID         string    `json:"id"`
	What       string    `json:"what"`
	Where      string    `json:"where"`
	Experiment string    `json:"experiment"`
	Metric     string    `json:"metric"`
	PaperValue float64   `json:"paper_value"`
	Value      *float64  `json:"value"`
	Low        *float64  `json:"low"`
	High       *float64  `json:"high"`
	Values     []float64 `json:"values"`
	Tolerance  string    `json:"tolerance"`
	Calibrated bool      `json:"calibrated"`
	// CalibratedAt are the searched setting's values where the baseline
	// meets the paper (absent without a search).
	Search       string   `json:"search,omitempty"`
	CalibratedAt []string `json:"calibrated_at,omitempty"`
	Error        string   `json:"error,omitempty"`
}

type paperJSON struct {
	Paper  string         `json:"paper"`
	Claims int            `json:"claims"`
	Counts map[string]int `json:"counts"` // verdict → claims
}

type claimJSON struct {
	Paper      string    `json:"paper"`
	ID         string    `json:"id"`
	Where      string    `json:"where"`
	Claim      string    `json:"claim"`
	Experiment string    `json:"experiment"`
	Metric     string    `json:"metric"`
	Over       string    `json:"over,omitempty"`
	Unit       string    `json:"unit,omitempty"`
	PaperValue *float64  `json:"paper_value"`
	PaperText  string    `json:"paper_text,omitempty"`
	Value      *float64  `json:"value"`
	Low        *float64  `json:"low"`  // the 95 % interval the verdict is of
	High       *float64  `json:"high"` // (the value itself for one run)
	Values     []float64 `json:"values"`
	Reproduced string    `json:"reproduced_if"`
	Refuted    string    `json:"refuted_if,omitempty"`
	Baseline   *baseJSON `json:"baseline,omitempty"`
	Setting    string    `json:"setting,omitempty"`
	Ran        string    `json:"ran"`
	Verdict    string    `json:"verdict"`
	Own        string    `json:"own_verdict,omitempty"` // against the claim's conditions alone
	Why        []string  `json:"why,omitempty"`
	Figure     string    `json:"figure,omitempty"` // relative to the page
	Error      string    `json:"error,omitempty"`
}

type baseJSON struct {
	What  string   `json:"what"`
	Value *float64 `json:"value"`
	Low   *float64 `json:"low"`
	High  *float64 `json:"high"`
}

type runJSON struct {
	Experiment string  `json:"experiment"`
	Param      string  `json:"param,omitempty"`
	Label      string  `json:"label"`
	Ran        string  `json:"ran"`
	Elapsed    float64 `json:"elapsed_s"`
	Dir        string  `json:"dir"`
	Error      string  `json:"error,omitempty"`
}

// num is a JSON number, null for NaN (JSON has none).
func num(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

func writeIndexJSON(file, command string, m machine, elapsed time.Duration, p page, runs []claimRun, figs map[string]string) error {
	idx := indexJSON{Command: command, Machine: m, Date: time.Now().UTC().Format(time.RFC3339), Elapsed: elapsed.Seconds()}
	for _, pr := range p {
		counts := map[string]int{}
		for v, n := range pr.counts() {
			counts[string(v)] = n
		}
		idx.Counts = append(idx.Counts, paperJSON{Paper: pr.File.Paper, Claims: len(pr.Results), Counts: counts})
		for i, r := range pr.Results {
			idx.Claims = append(idx.Claims, claimRecord(r, pr.Runs[i], figs))
		}
		for _, l := range pr.Cals {
			idx.Calibrations = append(idx.Calibrations, calRecord(pr.File.Paper, l))
		}
	}
	for _, r := range runs {
		rec := runJSON{Experiment: r.Name, Param: r.Param, Label: r.label(), Ran: r.ran(), Elapsed: r.Elapsed.Seconds(), Dir: r.dirName()}
		if r.Err != nil {
			rec.Error = oneLine(r.Err.Error())
		}
		idx.Runs = append(idx.Runs, rec)
	}
	data, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

func calRecord(paper string, l calLine) calJSON {
	cal := l.Cal
	rec := calJSON{Paper: paper, ID: cal.ID, What: oneLine(cal.What), Where: cal.Where, Experiment: cal.Experiment,
		Metric: cal.Metric, PaperValue: *cal.PaperValue, Value: num(l.Value), Low: num(l.Lo), High: num(l.Hi),
		Values: l.Values, Tolerance: cal.Tolerance.String(), Calibrated: l.OK, Search: cal.Search}
	for k, r := range l.Search {
		if r.OK {
			rec.CalibratedAt = append(rec.CalibratedAt, l.At[k])
		}
	}
	if l.Err != nil {
		rec.Error = oneLine(l.Err.Error())
	}
	return rec
}

func claimRecord(r claims.Result, run *claimRun, figs map[string]string) claimJSON {
	c := r.Claim
	rec := claimJSON{Paper: r.Paper, ID: c.ID, Where: c.Where, Claim: oneLine(c.Claim), Experiment: c.Experiment,
		Metric: c.Metric, Over: c.Over, Unit: c.Unit, PaperValue: c.PaperValue, PaperText: c.PaperText,
		Value: num(r.Value), Low: num(r.Low()), High: num(r.High()), Values: r.Values,
		Reproduced: c.Reproduced.String(), Setting: oneLine(c.Setting), Verdict: string(r.Verdict), Why: r.Why,
		Figure: figs[c.Experiment]}
	if r.Own != "" && r.Own != r.Verdict {
		rec.Own = string(r.Own)
	}
	if c.Refuted != nil {
		rec.Refuted = c.Refuted.String()
	}
	if c.Baseline != nil && r.Base != nil {
		rec.Baseline = &baseJSON{What: oneLine(c.Baseline.What), Value: num(r.Base.Value), Low: num(r.Base.Lo), High: num(r.Base.Hi)}
	}
	switch {
	case c.Measured != nil:
		rec.Ran = fmt.Sprintf("measured %s by %s", c.Measured.Date, oneLine(c.Measured.Command))
	case run != nil:
		rec.Ran = run.ran()
	}
	if r.Err != nil {
		rec.Error = oneLine(r.Err.Error())
	}
	return rec
}

// figures finds, per experiment of the main runs, the figure its run drew
// (a PNG at the top of its directory, else in its first point's), as a
// path relative to the page.
func figures(out string, runs []claimRun) map[string]string {
	figs := map[string]string{}
	for _, r := range runs {
		if !r.Main || r.Err != nil {
			continue
		}
		for _, pattern := range []string{"*.png", "points/*/*.png"} {
			m, _ := filepath.Glob(filepath.Join(out, r.dirName(), pattern))
			if len(m) == 0 {
				continue
			}
			slices.Sort(m)
			if rel, err := filepath.Rel(out, m[0]); err == nil {
				figs[r.Name] = filepath.ToSlash(rel)
			}
			break
		}
	}
	return figs
}

// progress prints one line per step: which, how far, the time spent and
// an estimate of the time left, from the times of the last run in the
// same directory where it had the step, else from the shipped cost table
// (reproduce_costs.json: CPU seconds over this run's workers, or wall
// seconds for real-time steps), else from the seconds per point of the
// steps done so far.
type progress struct {
	w       io.Writer
	start   time.Time
	now     func() time.Time
	last    map[string]float64 // label → seconds in the last run (scaled to this run's workers)
	est     costEstimate       // label → seconds from the cost table
	workers int
	weights []float64 // points per step
	labels  []string
	done    float64 // seconds of the steps done without a last time
	doneW   float64 // their points
}

// newProgress reads the last run's times from DIR/index.json (if any),
// scaled by the ratio of its workers to this run's, and prices every step
// from costs, the cost table of this kind of run (quick or full).
func newProgress(w io.Writer, indexFile string, runs []claimRun, workers int, now func() time.Time, costs costTable, quick bool) *progress {
	p := &progress{w: w, now: now, start: now(), last: map[string]float64{}, workers: max(workers, 1)}
	if data, err := os.ReadFile(indexFile); err == nil {
		var old indexJSON
		if json.Unmarshal(data, &old) == nil && old.Machine.Workers > 0 {
			scale := float64(old.Machine.Workers) / float64(max(workers, 1))
			for _, r := range old.Runs {
				if r.Error == "" {
					p.last[r.Label] = r.Elapsed * math.Max(scale, 1)
				}
			}
		}
	}
	var names []string
	for _, r := range runs {
		p.labels = append(p.labels, r.label())
		names = append(names, r.Name)
		p.weights = append(p.weights, r.points())
	}
	p.est = costs.estimate(p.labels, names, p.weights, quick, p.workers)
	return p
}

// points is a step's runs: seeds × values.
func (r *claimRun) points() float64 {
	seeds := r.Seeds
	if e, err := readExpFile(r.Name); seeds == 0 && err == nil {
		seeds = e.seeds
	}
	return float64(max(seeds, 1) * max(len(r.Vals), 1))
}

// plan is the first line: how many steps and about how long they take,
// from the last run's times where it knew every step, else from the cost
// table.
func (p *progress) plan(m machine) {
	fmt.Fprintf(p.w, "reproduce: %d steps (%s); %s\n", len(p.labels), m, p.planEstimate())
}

// planEstimate says how long the run will take and from what.
func (p *progress) planEstimate() string {
	total, fromLast, priced := 0.0, 0, 0
	for _, l := range p.labels {
		if s, ok := p.last[l]; ok {
			total, fromLast, priced = total+s, fromLast+1, priced+1
		} else if s, ok := p.est.secs[l]; ok {
			total, priced = total+s, priced+1
		}
	}
	about := "about " + fmtDur(time.Duration(total*float64(time.Second)))
	switch {
	case fromLast == len(p.labels):
		return about + " (the last run's times)"
	case priced == 0:
		return "no earlier run in the output directory and no measured cost to estimate from: estimates follow the first steps"
	case priced < len(p.labels):
		about = fmt.Sprintf("%s for %d of the %d steps (the others follow the first steps)", about, priced, len(p.labels))
	}
	return fmt.Sprintf("%s on this machine with %d workers, from costs measured %s", about, p.workers, p.est.date)
}

// step announces step i (0-based) before it runs.
func (p *progress) step(i int) {
	el := p.now().Sub(p.start)
	fmt.Fprintf(p.w, "reproduce: [%d/%d] %s… elapsed %s, %s\n", i+1, len(p.labels), p.labels[i], fmtDur(el), p.eta(i))
}

// finished records step i's time.
func (p *progress) finished(i int, d time.Duration) {
	if _, ok := p.last[p.labels[i]]; !ok {
		p.done += d.Seconds()
		p.doneW += p.weights[i]
	}
}

func (p *progress) eta(i int) string {
	left := 0.0
	for k := i; k < len(p.labels); k++ {
		if s, ok := p.last[p.labels[k]]; ok {
			left += s
			continue
		}
		if s, ok := p.est.secs[p.labels[k]]; ok {
			left += s
			continue
		}
		if p.doneW == 0 {
			return "ETA unknown yet"
		}
		left += p.done / p.doneW * p.weights[k]
	}
	return "ETA " + fmtDur(time.Duration(left*float64(time.Second)))
}

func fmtDur(d time.Duration) string {
	d = d.Round(time.Second)
	if d < time.Minute {
		return fmt.Sprintf("%ds", int(d.Seconds()))
	}
	return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
}
