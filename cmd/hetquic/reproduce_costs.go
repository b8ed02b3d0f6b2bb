package main

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"syscall"
	"time"
)

// costsFile is where `hetquic reproduce [--quick] --costs FILE` writes
// the step costs it measured; the binary ships the committed one, so a
// first run (no earlier index.json in its output directory) can say up
// front how long it will take. Regenerate it with the measured block in
// docs/reproducing.md (hetquic docs --measured --match costs).
const costsFile = "cmd/hetquic/reproduce_costs.json"

//go:embed reproduce_costs.json
var shippedCosts []byte

// realtimeModes are the modes whose runs use real sockets and timers
// through the emulator: their time is set by the emulated paths (RTTs,
// rates), not by the cores, so their cost is the wall time measured.
// Every other mode computes, and its cost is CPU time shared by the
// workers.
var realtimeModes = map[string]bool{"agent": true, "real": true}

// maxStepSeconds bounds a recorded step's time: a step of a year is a
// broken measurement, not a cost (and keeps every estimate finite).
const maxStepSeconds = 365 * 24 * 3600

// costTable is the measured cost of every step of a --quick and of a full
// run.
type costTable struct {
	Quick *costRun `json:"quick,omitempty"`
	Full  *costRun `json:"full,omitempty"`
}

// costRun is one measuring run: where and when, and its steps.
type costRun struct {
	Date    string     `json:"date"`
	Command string     `json:"command"`
	Machine machine    `json:"machine"`
	Steps   []stepCost `json:"steps"`
}

// stepCost is one step's cost: the process's CPU time (user + system,
// this process and its waited-for children) and wall time while it ran,
// and its points (runs: seeds × values), so that a step of the other kind
// of run (more seeds) can be estimated per point.
type stepCost struct {
	Label      string  `json:"label"`
	Experiment string  `json:"experiment"`
	Realtime   bool    `json:"realtime,omitempty"`
	Swept      bool    `json:"swept,omitempty"` // the file sweeps on its own: one point keeps every worker busy
	Points     float64 `json:"points"`
	CPU        float64 `json:"cpu_s"`
	Wall       float64 `json:"wall_s"`
}

// seconds is the step's time on this machine with workers at once, for
// points points (≤ 0: s's own): its wall time if it runs in real time,
// else its CPU time over the workers it can keep busy (one point each,
// unless the experiment sweeps on its own), scaled per point.
func (s stepCost) seconds(workers int, points float64) float64 {
	if points <= 0 {
		points = s.Points
	}
	t := s.Wall
	if !s.Realtime {
		w := float64(max(workers, 1))
		if !s.Swept {
			w = min(w, math.Ceil(points))
		}
		t = s.CPU / w
	}
	return t * points / s.Points
}

// shippedTable is the cost table the binary ships; one that does not
// decode (TestShippedCosts keeps it from being committed) prices nothing.
func shippedTable() costTable {
	t, _ := readCosts(shippedCosts)
	return t
}

// readCosts decodes a cost table and checks that every step has a point
// and a plausible time; no data is an empty table.
func readCosts(data []byte) (costTable, error) {
	var t costTable
	if len(data) == 0 {
		return t, nil
	}
	if err := json.Unmarshal(data, &t); err != nil {
		return costTable{}, fmt.Errorf("cost table: %w", err)
	}
	for _, r := range []*costRun{t.Quick, t.Full} {
		if r == nil {
			continue
		}
		for _, s := range r.Steps {
			if !(s.Points >= 1) || !(s.CPU >= 0 && s.CPU <= maxStepSeconds) || !(s.Wall >= 0 && s.Wall <= maxStepSeconds) {
				return costTable{}, fmt.Errorf("cost table: step %q: points %g, cpu_s %g, wall_s %g (want at least one point and times in [0, %g] s)", s.Label, s.Points, s.CPU, s.Wall, float64(maxStepSeconds))
			}
		}
	}
	return t, nil
}

// costEstimate is the up-front estimate of a run: seconds per step label
// for the steps the table knows, directly or per point.
type costEstimate struct {
	secs  map[string]float64
	date  string // when the costs used were measured
	known int    // steps estimated
}

// estimate prices each planned step (labels, names and points in plan
// order) from the table: the same step of the same kind of run (quick or
// full) first, else the same experiment per point, in this kind of run or
// the other.
func (t costTable) estimate(labels, names []string, points []float64, quick bool, workers int) costEstimate {
	own, other := t.Full, t.Quick
	if quick {
		own, other = t.Quick, t.Full
	}
	e := costEstimate{secs: map[string]float64{}}
	for i, l := range labels {
		s, run, ok := find(own, func(s stepCost) bool { return s.Label == l })
		p := 0.0
		if !ok {
			s, run, ok = find(own, func(s stepCost) bool { return s.Experiment == names[i] })
			p = points[i]
		}
		if !ok {
			s, run, ok = find(other, func(s stepCost) bool { return s.Experiment == names[i] })
			p = points[i]
		}
		if !ok {
			continue
		}
		e.secs[l] = s.seconds(workers, p)
		e.known++
		if run.Date > e.date {
			e.date = run.Date
		}
	}
	return e
}

// find is the first step of r that ok accepts.
func find(r *costRun, ok func(stepCost) bool) (stepCost, *costRun, bool) {
	if r == nil {
		return stepCost{}, nil, false
	}
	for _, s := range r.Steps {
		if ok(s) {
			return s, r, true
		}
	}
	return stepCost{}, nil, false
}

// cpuTime is the CPU time (user + system) this process and its waited-for
// children have used so far.
func cpuTime() time.Duration {
	var total time.Duration
	for _, who := range []int{syscall.RUSAGE_SELF, syscall.RUSAGE_CHILDREN} {
		var ru syscall.Rusage
		if syscall.Getrusage(who, &ru) == nil {
			total += time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		}
	}
	return total
}

// writeCosts records this run's step costs (measured on date) as the table's quick or full
// half in file (the other half kept) and prints them as a Markdown table
// on w. A run with a failed step records nothing: its costs are not a
// whole run's.
func writeCosts(w io.Writer, file, command, date string, m machine, runs []claimRun, points []float64, quick bool) error {
	for _, r := range runs {
		if r.Err != nil {
			return fmt.Errorf("reproduce: --costs: %s failed, so the run's costs are not recorded", r.label())
		}
	}
	data, err := os.ReadFile(file)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t, err := readCosts(data)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	run := &costRun{Date: date, Command: command, Machine: m}
	for i, r := range runs {
		var e expFile
		if f, err := readExpFile(r.Name); err == nil {
			e = *f
		}
		run.Steps = append(run.Steps, stepCost{Label: r.label(), Experiment: r.Name, Realtime: realtimeModes[e.mode], Swept: e.swept,
			Points: points[i], CPU: r.CPU.Seconds(), Wall: r.Elapsed.Seconds()})
	}
	if quick {
		t.Quick = run
	} else {
		t.Full = run
	}
	out, err := json.MarshalIndent(t, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, append(out, '\n'), 0o644); err != nil {
		return err
	}
	writeCostsMD(w, run)
	return nil
}

// writeCostsMD prints a run's step costs as a Markdown table.
func writeCostsMD(w io.Writer, run *costRun) {
	fmt.Fprintf(w, "%d workers on %d cores.\n\n| step | points | CPU s | wall s | priced by |\n|---|---|---|---|---|\n", run.Machine.Workers, run.Machine.Cores)
	cpu, wall := 0.0, 0.0
	for _, s := range run.Steps {
		by := "CPU s / min(workers, points)"
		switch {
		case s.Realtime:
			by = "wall s (real time)"
		case s.Swept:
			by = "CPU s / workers (sweeps on its own)"
		}
		fmt.Fprintf(w, "| %s | %g | %.1f | %.1f | %s |\n", s.Label, s.Points, s.CPU, s.Wall, by)
		cpu, wall = cpu+s.CPU, wall+s.Wall
	}
	fmt.Fprintf(w, "| **all** | | %.1f | %.1f | |\n", cpu, wall)
}
