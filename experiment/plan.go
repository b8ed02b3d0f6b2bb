package experiment

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic/experiment/sweep"
	"github.com/hetquic/hetquic/internal/runner"
)

// Plan is everything an experiment file asks to run: its points × strategies
// × seeds. A file without a sweep: block has one point with no assignment.
// Runs are numbered point by point, strategy by strategy, seed by seed; a
// shard takes runs by that number, so every process agrees on who runs what.
type Plan struct {
	Name  string
	Swept bool
	// Design is the sweep's design (grid or lhs); empty without a sweep.
	Design string
	Points []sweep.Point
	Specs  []*Spec // Specs[i] is the experiment at Points[i]
	// Hash identifies the plan's inputs (every point's experiment, scenario
	// and trace files), so that a merge refuses shards of another plan.
	Hash   string
	offset []int // offset[i] is the number of the first run of point i
}

// LoadPlan reads an experiment file as Load does and expands its sweep.
func LoadPlan(fsys fs.FS, name string) (*Plan, error) {
	base, err := Load(fsys, name)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Name: base.Name}
	h := sha256.New()
	if base.Sweep == nil {
		plan.Points, plan.Specs = []sweep.Point{{}}, []*Spec{base}
		if err := hashInputs(h, fsys, name, base); err != nil {
			return nil, err
		}
	} else {
		plan.Swept, plan.Design = true, cmp.Or(base.Sweep.Design, sweep.Grid)
		if plan.Points, err = base.Sweep.Expand(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		for _, p := range plan.Points {
			over, err := pointFiles(fsys, name, base, p)
			if err != nil {
				return nil, fmt.Errorf("%s: point %s: %w", name, p.Label(), err)
			}
			s, err := Load(over, name)
			if err != nil {
				return nil, fmt.Errorf("sweep point %s: %w", p.Label(), err)
			}
			if err := hashInputs(h, over, name, s); err != nil {
				return nil, err
			}
			if !slices.EqualFunc(s.Strategies, base.Strategies, func(a, b StrategySpec) bool { return a.Label == b.Label }) {
				return nil, fmt.Errorf("%s: point %s: a sweep may change strategies' settings, not which strategies run", name, p.Label())
			}
			plan.Specs = append(plan.Specs, s)
		}
	}
	plan.Hash = hex.EncodeToString(h.Sum(nil))[:16]
	n := 0
	for _, s := range plan.Specs {
		plan.offset = append(plan.offset, n)
		n += len(s.Strategies) * s.Seeds
	}
	plan.offset = append(plan.offset, n)
	return plan, nil
}

// pointFiles rewrites the experiment file and its scenario for point p; the
// result serves them in place of the originals.
func pointFiles(fsys fs.FS, name string, base *Spec, p sweep.Point) (fs.FS, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, err
	}
	var specDoc yaml.Node
	if err := yaml.Unmarshal(data, &specDoc); err != nil {
		return nil, err
	}
	deleteKey(&specDoc, "sweep")
	files := map[string][]byte{}
	var scenDoc *yaml.Node
	scenName := ""
	if base.Scenario != "" {
		scenName = path.Join(path.Dir(name), base.Scenario)
		data, err := fs.ReadFile(fsys, scenName)
		if err != nil {
			return nil, err
		}
		scenDoc = new(yaml.Node)
		if err := yaml.Unmarshal(data, scenDoc); err != nil {
			return nil, err
		}
	}
	if err := sweep.Apply(&specDoc, scenDoc, p); err != nil {
		return nil, err
	}
	if files[name], err = yaml.Marshal(&specDoc); err != nil {
		return nil, err
	}
	if scenDoc != nil {
		if files[scenName], err = yaml.Marshal(scenDoc); err != nil {
			return nil, err
		}
	}
	return sweep.Overlay{Base: fsys, Files: files}, nil
}

func deleteKey(doc *yaml.Node, key string) {
	m := doc
	if m.Kind == yaml.DocumentNode && len(m.Content) == 1 {
		m = m.Content[0]
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = slices.Delete(m.Content, i, i+2)
			return
		}
	}
}

// hashInputs adds the files a spec was read from to h.
func hashInputs(h io.Writer, fsys fs.FS, name string, s *Spec) error {
	files := []string{name}
	if s.Scenario != "" {
		files = append(files, path.Join(path.Dir(name), s.Scenario))
	}
	if s.Mode == ModeTrace {
		files = append(files, path.Join(path.Dir(name), s.Trace))
	}
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%d:", len(data))
		h.Write(data)
	}
	return nil
}

// SetSeeds runs every point on n seeds instead of the file's (exp run
// --seeds); the plan's hash changes with it, so shards run with different
// seeds are never merged.
func (p *Plan) SetSeeds(n int) {
	total := 0
	for i, s := range p.Specs {
		s.Seeds = n
		p.offset[i] = total
		total += len(s.Strategies) * n
	}
	p.offset[len(p.Specs)] = total
	sum := sha256.Sum256([]byte(fmt.Sprintf("%s seeds=%d", p.Hash, n)))
	p.Hash = hex.EncodeToString(sum[:])[:16]
}

// Runs is the number of runs of the plan.
func (p *Plan) Runs() int { return p.offset[len(p.Specs)] }

// locate turns run number k into its point, strategy and seed index.
func (p *Plan) locate(k int) (point, strategy, seed int) {
	point, found := slices.BinarySearch(p.offset, k)
	if !found {
		point--
	}
	r := k - p.offset[point]
	seeds := p.Specs[point].Seeds
	return point, r / seeds, r % seeds
}

// Partial is the runs of a plan that one shard carried out.
type Partial struct {
	Plan  *Plan
	Shard sweep.Shard
	Runs  map[int]*Run // by run number
	// Spec is the experiment as named on the command line (a built-in
	// name or a file), so that a merge can find it again.
	Spec string
}

// ExecuteShard carries out the runs of the plan that shard owns on the one
// worker pool. Each run depends only on its point, strategy and seed, so a
// run's result is the same in any shard and with any number of workers.
func ExecuteShard(ctx context.Context, p *Plan, shard sweep.Shard, opt runner.Options, newEnv EnvFactory) (*Partial, error) {
	var owned []int
	for k := range p.Runs() {
		if shard.Owns(k) {
			owned = append(owned, k)
		}
	}
	envs := newEnvCache(p, newEnv)
	defer envs.close()
	if p.Specs[0].Mode == ModeReal {
		opt.Workers = 1 // one network: runs must not overlap on it
	}
	if opt.Name == "" {
		opt.Name = p.Name
	}
	runs := make([]*Run, len(owned))
	err := runner.Run(ctx, len(owned), opt, func(ctx context.Context, j int) error {
		pi, si, seed := p.locate(owned[j])
		spec := p.Specs[pi]
		env, err := envs.get(pi, seed)
		if err != nil {
			return err
		}
		st := spec.Strategies[si]
		run, err := spec.runOne(ctx, st, spec.Seed+uint64(seed), env)
		if err != nil {
			return fmt.Errorf("%s%s, seed %d: %w", p.pointPrefix(pi), st.Label, spec.Seed+uint64(seed), err)
		}
		runs[j] = run
		return nil
	})
	if err != nil {
		return nil, err
	}
	part := &Partial{Plan: p, Shard: shard, Runs: make(map[int]*Run, len(owned))}
	for j, k := range owned {
		part.Runs[k] = runs[j]
	}
	return part, nil
}

func (p *Plan) pointPrefix(i int) string {
	if !p.Swept {
		return ""
	}
	return "point " + p.Points[i].Label() + ": "
}

// envCache makes each (point, seed) environment once, when a run needs it.
type envCache struct {
	plan   *Plan
	newEnv EnvFactory
	mu     sync.Mutex
	envs   map[[2]int]*envOnce
}

type envOnce struct {
	once sync.Once
	env  Env
	err  error
}

func newEnvCache(p *Plan, newEnv EnvFactory) *envCache {
	return &envCache{plan: p, newEnv: newEnv, envs: map[[2]int]*envOnce{}}
}

func (c *envCache) get(point, seed int) (Env, error) {
	c.mu.Lock()
	e := c.envs[[2]int{point, seed}]
	if e == nil {
		e = new(envOnce)
		c.envs[[2]int{point, seed}] = e
	}
	c.mu.Unlock()
	e.once.Do(func() {
		s := c.plan.Specs[point]
		e.env, e.err = c.newEnv(s, s.Seed+uint64(seed))
	})
	return e.env, e.err
}

func (c *envCache) close() {
	for _, e := range c.envs {
		if cl, ok := e.env.(io.Closer); ok {
			cl.Close()
		}
	}
}

// Assemble turns a complete set of runs into one Result per point, as
// ExecuteWith would have returned them. The truth that figures draw comes
// from the model (a real network's truth is its model's); a real run's
// offline twin is the caller's to add (experiment/realenv.AddOffline).
func (p *Plan) Assemble(runs map[int]*Run) ([]*Result, error) {
	if missing := p.Runs() - len(runs); missing > 0 {
		return nil, fmt.Errorf("%s: %d of %d runs are missing (a shard did not finish?)", p.Name, missing, p.Runs())
	}
	envs := newEnvCache(p, modelEnv)
	defer envs.close()
	out := make([]*Result, len(p.Specs))
	for pi, spec := range p.Specs {
		res := &Result{Spec: spec, Paths: spec.PathNames(), Runs: make([][]*Run, len(spec.Strategies))}
		for si := range res.Runs {
			res.Runs[si] = make([]*Run, spec.Seeds)
			for seed := range spec.Seeds {
				k := p.offset[pi] + si*spec.Seeds + seed
				if res.Runs[si][seed] = runs[k]; runs[k] == nil {
					return nil, fmt.Errorf("%s: run %d is missing", p.Name, k)
				}
			}
		}
		env, err := envs.get(pi, 0)
		if err != nil {
			return nil, err
		}
		res.addTruth(env)
		out[pi] = res
	}
	return out, nil
}

// The partial-results files of a shard. The runs are gob-encoded, which
// keeps every float64 bit for bit (what makes a merge identical to a
// single-process run), and gzipped.
const (
	partialMeta    = "partial.json"
	partialRuns    = "runs.gob.gz"
	partialVersion = 1
)

type partialHeader struct {
	SchemaVersion int    `json:"schema_version"`
	Experiment    string `json:"experiment"`
	Spec          string `json:"spec"`
	Seeds         int    `json:"seeds"` // per point: the file's, or exp run --seeds
	PlanHash      string `json:"plan_hash"`
	Shard         string `json:"shard"`
	TotalRuns     int    `json:"total_runs"`
	Runs          []int  `json:"runs"`
}

// WritePartial writes a shard's runs into dir.
func WritePartial(dir string, part *Partial) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ks := make([]int, 0, len(part.Runs))
	for k := range part.Runs {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := gob.NewEncoder(zw)
	for _, k := range ks {
		if err := enc.Encode(part.Runs[k]); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, partialRuns), buf.Bytes(), 0o644); err != nil {
		return err
	}
	meta, err := json.MarshalIndent(partialHeader{
		SchemaVersion: partialVersion, Experiment: part.Plan.Name, Spec: part.Spec, Seeds: part.Plan.Specs[0].Seeds, PlanHash: part.Plan.Hash,
		Shard: part.Shard.String(), TotalRuns: part.Plan.Runs(), Runs: ks,
	}, "", "  ")
	if err != nil {
		return err
	}
	// The header last: a directory with a header holds all of its runs.
	return os.WriteFile(filepath.Join(dir, partialMeta), append(meta, '\n'), 0o644)
}

// PartialSpec is the experiment a shard's directory was written for, as it
// was named on the shard's command line, and its seeds per point.
func PartialSpec(dir string) (spec string, seeds int, err error) {
	meta, err := os.ReadFile(filepath.Join(dir, partialMeta))
	if err != nil {
		return "", 0, fmt.Errorf("%s: not a shard's results (no %s)", dir, partialMeta)
	}
	var h partialHeader
	if err := json.Unmarshal(meta, &h); err != nil {
		return "", 0, fmt.Errorf("%s: %v", filepath.Join(dir, partialMeta), err)
	}
	return h.Spec, h.Seeds, nil
}

// ReadPartials reads the shards in dirs, written for plan p, and returns
// every run once. The same run in two directories (a shard that ran twice)
// counts once, provided both copies are identical.
func ReadPartials(p *Plan, dirs []string) (map[int]*Run, error) {
	runs := map[int]*Run{}
	enc := map[int][]byte{}
	from := map[int]string{}
	for _, dir := range dirs {
		meta, err := os.ReadFile(filepath.Join(dir, partialMeta))
		if err != nil {
			return nil, fmt.Errorf("%s: not a shard's results (no %s)", dir, partialMeta)
		}
		var h partialHeader
		if err := json.Unmarshal(meta, &h); err != nil {
			return nil, fmt.Errorf("%s: %v", filepath.Join(dir, partialMeta), err)
		}
		switch {
		case h.SchemaVersion != partialVersion:
			return nil, fmt.Errorf("%s: schema_version %d, this hetquic reads %d", dir, h.SchemaVersion, partialVersion)
		case h.PlanHash != p.Hash || h.TotalRuns != p.Runs():
			return nil, fmt.Errorf("%s: shard of another experiment or version of it (%s, plan %s; want %s, plan %s)", dir, h.Experiment, h.PlanHash, p.Name, p.Hash)
		}
		f, err := os.Open(filepath.Join(dir, partialRuns))
		if err != nil {
			return nil, err
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %v", dir, err)
		}
		dec := gob.NewDecoder(zr)
		for _, k := range h.Runs {
			var run Run
			if err := dec.Decode(&run); err != nil {
				f.Close()
				return nil, fmt.Errorf("%s: run %d: %v", dir, k, err)
			}
			if k < 0 || k >= p.Runs() {
				f.Close()
				return nil, fmt.Errorf("%s: run %d is outside the plan's %d runs", dir, k, p.Runs())
			}
			var b bytes.Buffer
			if err := gob.NewEncoder(&b).Encode(&run); err != nil {
				f.Close()
				return nil, err
			}
			if prev, ok := enc[k]; ok {
				if !bytes.Equal(prev, b.Bytes()) {
					f.Close()
					return nil, fmt.Errorf("run %d differs between %s and %s: not the same experiment", k, from[k], dir)
				}
				continue
			}
			runs[k], enc[k], from[k] = &run, b.Bytes(), dir
		}
		f.Close()
	}
	if len(runs) < p.Runs() {
		var missing []int
		for k := range p.Runs() {
			if runs[k] == nil {
				missing = append(missing, k)
				if len(missing) == 5 {
					break
				}
			}
		}
		return nil, fmt.Errorf("%s: %d of %d runs missing (first: %v); run the missing shards and merge again", p.Name, p.Runs()-len(runs), p.Runs(), missing)
	}
	return runs, nil
}
