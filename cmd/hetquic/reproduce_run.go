package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/mode"
	"github.com/hetquic/hetquic/internal/sweep"
)

// claimRun is one experiment that reproduce runs, once whatever the number
// of claims that read it: as a sweep over its seeds (each seed a point, so
// every claim gets a value per seed and a confidence interval), and, for a
// sensitivity entry, over a guessed setting's values too.
type claimRun struct {
	Name  string
	Param string   // the guessed setting swept ("" for the run at the file's settings)
	Vals  []string // its values, in order
	Guess string   // the value the experiment file uses
	// Main: the claims are judged on this run, on its value At (0, or
	// the guess's index when it sweeps a spread entry's replicates).
	Main bool
	At   int
	// Reused: the file writes Guess at Param, so the guess's points are
	// the run at the file's settings (the same runs), not run again.
	Reused bool
	Seeds  int    // seeds run per value (1 for a mode without seeds)
	First  uint64 // the first seed
	// Full is the seeds of the full run: the experiment file's own, or
	// more where a claims file's full: entry asks (set by plan).
	Full int
	// Seedless: agent experiments and files with a sweep of their own
	// have no seeds to sweep (one run).
	Seedless bool
	// Summaries[i][k] is the decoded summary.json of value i, seed k.
	Summaries [][]any
	Err       error
	Elapsed   time.Duration
	CPU       time.Duration // the process's CPU time while it ran (runAll)
	// Workers is how many of its runs go at once (0: one per CPU).
	Workers int
}

// expFile is a built-in experiment file as reproduce needs to know it.
type expFile struct {
	path  string // in hetquic.Files
	data  []byte
	mode  string
	seeds int
	first uint64
	swept bool
}

// readExpFile finds the built-in experiment name and reads what reproduce
// needs from it: its mode, seeds and first seed.
func readExpFile(name string) (*expFile, error) {
	for _, dir := range builtinDirs {
		p := path.Join(dir, name+".yaml")
		data, err := fs.ReadFile(hetquic.Files, p)
		if err != nil {
			continue
		}
		env, err := mode.ReadEnvelope(p, data)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Seeds int       `yaml:"seeds"`
			Seed  uint64    `yaml:"seed"`
			Sweep yaml.Node `yaml:"sweep"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		return &expFile{path: p, data: data, mode: env.Mode, seeds: max(doc.Seeds, 1), first: max(doc.Seed, 1), swept: doc.Sweep.Kind != 0}, nil
	}
	return nil, fmt.Errorf("%s: not a built-in experiment (hetquic exp list)", name)
}

// seedless reports whether the mode has no seeds for a sweep to vary
// (agent: its repeat), or the file sweeps already. A ride evaluation has
// one seed per point, and a sweep over it gives more.
func (e *expFile) seedless() bool {
	return e.mode == "agent" || e.swept
}

// derived is the experiment file rewritten to run one seed per point of a
// sweep over spec.seed (and param, when set): the same runs as the file's
// seeds, each summarized apart.
func (e *expFile) derived(param string, vals []string, first uint64, seeds int) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(e.data, &doc); err != nil || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a YAML mapping", e.path)
	}
	m := doc.Content[0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := m.Content[i].Value; k == "seeds" || k == "seed" {
			m.Content = slices.Delete(m.Content, i, i+2)
			i -= 2
		}
	}
	out, err := yaml.Marshal(&doc)
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	b.Write(out)
	b.WriteString("seeds: 1\nsweep:\n  params:\n")
	if param != "" {
		fmt.Fprintf(&b, "    %s: [%s]\n", param, strings.Join(vals, ", "))
	}
	ss := make([]string, seeds)
	for k := range ss {
		ss[k] = strconv.FormatUint(first+uint64(k), 10)
	}
	fmt.Fprintf(&b, "    spec.seed: [%s]\n", strings.Join(ss, ", "))
	return []byte(b.String()), nil
}

// run carries the run out in tree (a copy of the built-in files on disk)
// through the CLI's "exp run" and reads each point's summary.json. main,
// for a sensitivity sweep, is the run at the file's own settings (nil if
// none ran), whose seeds are the guess's points when the file writes the
// guess at the param.
func (r *claimRun) run(ctx context.Context, tree, dir string, main *claimRun) {
	start := time.Now()
	defer func() { r.Elapsed = time.Since(start) }()
	e, err := readExpFile(r.Name)
	if err != nil {
		r.Err = err
		return
	}
	r.First, r.Seedless = e.first, e.seedless()
	r.Full = max(r.Full, e.seeds)
	switch {
	case r.Seedless && r.Param != "":
		r.Err = fmt.Errorf("%s: a sensitivity sweep needs a mode that sweeps and a file without a sweep of its own (this is %s)", r.Name, e.mode)
		return
	case r.Seedless:
		r.Seeds = 1
		r.Err = r.runFile(ctx, filepath.Join(tree, e.path), dir, false)
		return
	case r.Seeds == 0:
		r.Seeds = r.Full
	}
	at, err := r.reuse(e, main)
	if err != nil {
		r.Err = err
		return
	}
	if at >= 0 {
		vals := r.Vals
		r.Vals = slices.Delete(slices.Clone(vals), at, at+1)
		defer func() {
			r.Vals = vals
			if r.Err == nil {
				r.Summaries = slices.Insert(r.Summaries, at, main.Summaries[main.At][:r.Seeds])
			}
		}()
	}
	data, err := e.derived(r.Param, r.Vals, r.First, r.Seeds)
	if err != nil {
		r.Err = err
		return
	}
	file := filepath.Join(tree, path.Dir(e.path), ".reproduce-"+r.Name+".yaml")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		r.Err = err
		return
	}
	defer os.Remove(file)
	r.Err = r.runFile(ctx, file, dir, true)
}

// reuse is the index of the guess among a sensitivity sweep's values when
// the run at the file's settings already holds its points (the file writes
// the guess at the param, and that run has at least as many seeds), else
// −1. A file that writes another value there is an error: the claims file
// would call a value the guess that the experiment does not use.
func (r *claimRun) reuse(e *expFile, main *claimRun) (int, error) {
	v, ok := e.fileValue(r.Param)
	switch {
	case r.Param == "" || r.Guess == "":
		return -1, nil
	case r.Main && !ok:
		return -1, fmt.Errorf("%s: its claims are judged at %s=%s, which the experiment file must write", r.Name, r.Param, r.Guess)
	case ok && !sameValue(v, r.Guess):
		return -1, fmt.Errorf("%s: the claims file's guess for %s is %s, but the experiment uses %s", r.Name, r.Param, r.Guess, v)
	case !ok || main == nil || main.Err != nil || main.Seedless || main.Seeds < r.Seeds || main.First != r.First:
		return -1, nil
	}
	r.Reused = true
	return slices.IndexFunc(r.Vals, func(x string) bool { return sameValue(x, r.Guess) }), nil
}

// fileValue is the scalar the experiment file writes at a sweep field
// (variants[2].cc, ride.policy, scenario.speed_mps of an inline scenario),
// and whether it writes one there; a field of a scenario file is not read.
func (e *expFile) fileValue(param string) (string, bool) {
	var doc yaml.Node
	if yaml.Unmarshal(e.data, &doc) != nil {
		return "", false
	}
	return sweep.Value(&doc, param)
}

func (r *claimRun) runFile(ctx context.Context, file, dir string, swept bool) error {
	args := []string{"exp", "run", file, "--out", dir, "--quiet"}
	if r.Workers > 0 {
		args = append(args, "--workers", strconv.Itoa(r.Workers))
	}
	if _, err := captureOutput(func() error { return dispatch(ctx, args) }); err != nil {
		return fmt.Errorf("hetquic exp run %s: %w", r.Name, err)
	}
	if !swept {
		s, err := readSummaryJSON(filepath.Join(dir, "summary.json"))
		r.Summaries = [][]any{{s}}
		return err
	}
	return r.readPoints(dir)
}

// readPoints sorts the sweep's points into Summaries by their assignments.
func (r *claimRun) readPoints(dir string) error {
	var top struct {
		Points []struct {
			ID      string `json:"id"`
			Assigns []struct{ Key, Value string }
		} `json:"points"`
	}
	data, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return fmt.Errorf("%s: %w", filepath.Join(dir, "summary.json"), err)
	}
	nv := max(len(r.Vals), 1)
	r.Summaries = make([][]any, nv)
	for _, p := range top.Points {
		i, k, err := r.locate(p.Assigns)
		if err != nil {
			return fmt.Errorf("%s: point %s: %w", r.Name, p.ID, err)
		}
		s, err := readSummaryJSON(filepath.Join(dir, "points", p.ID, "summary.json"))
		if err != nil {
			return err
		}
		if r.Summaries[i] == nil {
			r.Summaries[i] = make([]any, r.Seeds)
		}
		r.Summaries[i][k] = s
	}
	for i := range r.Summaries {
		if len(r.Summaries[i]) != r.Seeds || slices.Contains(r.Summaries[i], nil) {
			return fmt.Errorf("%s: the sweep lacks points (value %d)", r.Name, i)
		}
	}
	return nil
}

// locate is the value and seed index of a point from its assignments.
func (r *claimRun) locate(assigns []struct{ Key, Value string }) (int, int, error) {
	i, k := 0, -1
	for _, a := range assigns {
		switch a.Key {
		case "spec.seed":
			s, err := strconv.ParseUint(a.Value, 10, 64)
			if err != nil || s < r.First || s >= r.First+uint64(r.Seeds) {
				return 0, 0, fmt.Errorf("seed %q is not one of the run's", a.Value)
			}
			k = int(s - r.First)
		case r.Param:
			i = slices.IndexFunc(r.Vals, func(v string) bool { return sameValue(v, a.Value) })
			if i < 0 {
				return 0, 0, fmt.Errorf("%s=%s is not one of the values", a.Key, a.Value)
			}
		}
	}
	if k < 0 {
		return 0, 0, errors.New("no seed assignment")
	}
	return i, k, nil
}

// sameValue compares a value as written in a claims file with the sweep's
// canonical form (numbers written one way: 10, 10.0 and 1e1 are one).
func sameValue(a, b string) bool {
	x, err1 := strconv.ParseFloat(a, 64)
	y, err2 := strconv.ParseFloat(b, 64)
	if err1 == nil && err2 == nil {
		return x == y
	}
	return strings.Trim(a, `"'`) == strings.Trim(b, `"'`)
}

func readSummaryJSON(file string) (any, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	var s any
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return s, nil
}

// materialize copies the built-in files to a temporary directory, where the
// derived experiment files sit beside the originals and resolve the same
// relative paths (../scenarios/…). The caller removes it.
func materialize() (string, error) {
	dir, err := os.MkdirTemp("", "hetquic-reproduce-")
	if err != nil {
		return "", err
	}
	if err := os.CopyFS(dir, hetquic.Files); err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	return dir, nil
}
