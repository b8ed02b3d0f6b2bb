package runner

import (
	"context"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"

	"go.yaml.in/yaml/v3"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/pathsel"
)

// specFS builds an FS with the test scenario and one experiment file.
func specFS(experiment string) fstest.MapFS {
	sc, _ := os.ReadFile("testdata/two-paths.yaml")
	tr, _ := os.ReadFile("testdata/trace.csv")
	return fstest.MapFS{
		"s/two-paths.yaml": {Data: sc},
		"s/trace.csv":      {Data: tr},
		"e/x.yaml":         {Data: []byte(experiment)},
	}
}

const base = `name: x
scenario: ../s/two-paths.yaml
rounds: 300
seeds: 3
`

func load(t *testing.T, experiment string) *Spec {
	t.Helper()
	s, err := Load(specFS(experiment), "e/x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLoadRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ body, want string }{
		{base + "strategies: [{strategy: polling}]\nbogus: 1\n", "e/x.yaml:6: unknown field \"bogus\""},
		{base + "strategies: [{strategy: psa, a: 1.5}]\n", "e/x.yaml: strategies[0].a: 1.5 is outside [0, 1]"},
		{base + "strategies: [{strategy: psa, window: 0}]\n", "strategies[0].window: S = 0 must be ≥ 1"},
		{base + "strategies: [{strategy: psa, windw: 5}]\n", "unknown field \"windw\""},
		{base + "strategies: []\n", "strategies: at least one"},
		{base + "strategies: [{strategy: polling}, {strategy: polling}]\n", "strategies[1].label: duplicate \"polling\""},
		{base + "strategies: [{strategy: polling}]\nobjective: {a: -0.1}\n", "objective.a: -0.1 is outside [0, 1]"},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 5, path: nope, set: {both: {delay_ms: 1}}}]\n", "events[0].path: no path named \"nope\""},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 500, path: fast, set: {both: {delay_ms: 1}}}]\n", "events[0].round: 500 is outside [0, 300)"},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 5, path: fast, set: {both: {delay_ms: -1}}}]\n", "delay_ms: -1 must be a finite number ≥ 0"},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 5, path: fast, set: {down: {loss: 2}}}]\n", "down.loss: 2 is outside [0, 1]"},
		{base + "strategies: [{strategy: polling}]\nmodel: {packet_bytes: 0, timeout_ms: -1}\n", "model.timeout_ms"},
		{"name: x\nmode: trace\ntrace: ../s/trace.csv\nrounds: 50\nstrategies: [{strategy: polling}]\n", "rounds: 50 exceeds the trace's 6 rounds"},
		{"name: x\nrounds: 5\nstrategies: [{strategy: polling}]\n", "scenario: missing"},
		{"name: x\nscenario: ../s/two-paths.yaml\nstrategies: [{strategy: polling}]\n", "rounds: missing (or 0): give the number of requests each run makes"},
		{base + "strategies: [{strategy: polling}]\nprobe: {per_second: -1}\n", "probe.per_second: -1 is outside [0, 1000]"},
		{base + "strategies: [{strategy: polling}]\nprobe: {per_second: 5, working_set: -2}\n", "probe.working_set: -2 must be ≥ 1"},
		{base + "strategies: [{strategy: hetquic, probe_stretch: 0.5}]\n", "strategies[0].probe_stretch: 0.5 is outside [1, 1e9)"},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 5, path: fast, remove: true, set: {both: {delay_ms: 1}}}]\n", "events[0]: set and remove exclude each other"},
		{base + "strategies: [{strategy: polling}]\nevents: [{round: 5, path: fast, remove: true}, {round: 6, path: slow, remove: true}]\n", "events: round 6 removes every path"},
		{base + "strategies: [{strategy: polling}]\npsa: {window_scope: all}\n", "e/x.yaml: psa.window_scope: \"all\" is not rounds or path"},
		{base + "strategies: [{strategy: polling}]\npsa: {c: sometimes}\n", "c: want initial, adaptive or a number, got \"sometimes\""},
		{base + "strategies: [{strategy: polling}]\npsa: {resample: maybe}\n", "e/x.yaml:6: cannot unmarshal !!str `maybe` into bool"},
	} {
		_, err := Load(specFS(tc.body), "e/x.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q:\n got %v\nwant %q", tc.body, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "\n") {
			t.Errorf("error is not one line: %q", err)
		}
	}
}

// The psa: block fills the open choices of every psa row that leaves them
// unset, and only of psa rows.
func TestPSAChoicesBlock(t *testing.T) {
	s := load(t, base+`psa: {c: adaptive, window_scope: path, resample: false}
strategies:
  - {label: a, strategy: psa}
  - {label: b, strategy: psa, c: 3, window_scope: rounds, resample: true}
  - {label: c, strategy: sw-ucb}
`)
	a, b, c := s.Strategies[0].Config.Defaults(), s.Strategies[1].Config.Defaults(), s.Strategies[2].Config
	if a.C.Mode != "adaptive" || a.Scope != pathsel.PerPath || *a.Resample {
		t.Errorf("psa row without its own choices: c %s, scope %s, resample %v; want the block's", a.C, a.Scope, *a.Resample)
	}
	if b.C.Mode != "fixed" || b.Scope != pathsel.Rounds || !*b.Resample {
		t.Errorf("psa row with its own choices: c %s, scope %s, resample %v; want its own", b.C, b.Scope, *b.Resample)
	}
	if c.C.Mode != "" || c.Scope != "" || c.Resample != nil {
		t.Errorf("sw-ucb took the psa block: %+v", c)
	}
}

// The model's exact moments match what it samples.
func TestModelMomentsMatchSamples(t *testing.T) {
	var m Model
	m.setDefaults()
	sc := load(t, base+"strategies: [{strategy: polling}]\n").scenario
	for _, size := range []int{5 * 1024, 1 << 20} {
		for _, p := range sc.Paths {
			tk := m.task(p, size)
			want := tk.moments()
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 200_000
			var sum, sumSq float64
			for range n {
				x := tk.sample(rng)
				sum += x
				sumSq += x * x
			}
			mean := sum / n
			variance := sumSq/n - mean*mean
			if math.Abs(mean-want.Mean) > 0.01*want.Mean || math.Abs(variance-want.Var) > 0.05*want.Var+1e-9 {
				t.Errorf("%s %d B: sampled mean %.3f var %.3f, model %.3f %.3f", p.Name, size, mean, variance, want.Mean, want.Var)
			}
		}
	}
	// 1 MiB over 10 Mbit/s: 7 flights of slow start from 10 packets, 839 ms
	// of serialisation.
	tk := m.task(sc.Paths[1], 1<<20)
	if tk.flights != 7 || math.Abs(tk.txMs-838.8608) > 1e-6 {
		t.Errorf("flights %d tx %v", tk.flights, tk.txMs)
	}
}

// Results do not depend on the number of workers, and repeat bit for bit.
func TestExecuteIsDeterministic(t *testing.T) {
	spec := load(t, base+`strategies:
  - {strategy: polling}
  - {strategy: eps-greedy}
  - {strategy: thompson}
  - {strategy: hetquic}
  - {strategy: oracle}
`)
	a, err := Execute(context.Background(), spec, workpool.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Execute(context.Background(), spec, workpool.Options{Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a.Runs, b.Runs) {
		t.Fatal("1 and 4 workers gave different runs")
	}
	sum := Summarize(a)
	oracle := sum.find("oracle")
	if oracle.HitRate != 1 || oracle.CumRegret != 0 || *oracle.RatioToOracle != 1 {
		t.Errorf("oracle: %+v", oracle)
	}
	if p := sum.find("polling"); math.Abs(p.HitRate-0.5) > 0.01 || *p.MeanReductionVsPollingPct != 0 {
		t.Errorf("polling: %+v", p)
	}
	if h := sum.find("hetquic"); h.HitRate < 0.9 || *h.RatioToOracle > 1.1 {
		t.Errorf("hetquic on two clearly different paths: %+v", h)
	}
}

// A spike changes a path for its rounds and then restores it.
func TestScheduleSpikes(t *testing.T) {
	spec := load(t, base+`strategies: [{strategy: oracle}]
events:
  - {round: 10, path: fast, set: {both: {delay_ms: 50}}, for_rounds: 5}
  - {round: 100, path: slow, set: {both: {delay_ms: 1, loss: 0}}}
`)
	res, err := Execute(context.Background(), spec, workpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for t0, want := range map[int]int{0: 0, 9: 0, 10: 1, 14: 1, 15: 0, 99: 0, 100: 1, 299: 1} {
		if res.Best[t0] != want {
			t.Errorf("best path at round %d = %d, want %d", t0, res.Best[t0], want)
		}
		if got := res.Runs[0][0].Path[t0]; int(got) != want {
			t.Errorf("oracle at round %d took %d, want %d", t0, got, want)
		}
	}
}

func TestTraceMode(t *testing.T) {
	spec := load(t, "name: x\nmode: trace\ntrace: ../s/trace.csv\nseeds: 2\nstrategies: [{strategy: polling}, {strategy: oracle}]\n")
	if spec.Rounds != 6 || !reflect.DeepEqual(spec.PathNames(), []string{"fast", "slow"}) {
		t.Fatalf("rounds %d paths %v", spec.Rounds, spec.PathNames())
	}
	res, err := Execute(context.Background(), spec, workpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	polling := res.Runs[0][0]
	if want := []float64{10.5, 39.0, 10.1, 41.0, 10.9, 40.4}; !reflect.DeepEqual(polling.TCTms, want) {
		t.Errorf("polling replayed %v, want %v", polling.TCTms, want)
	}
	// The oracle of a trace is its best path in hindsight.
	for _, p := range res.Runs[1][0].Path {
		if p != 0 {
			t.Fatalf("oracle took path %d", p)
		}
	}
	for _, bad := range []string{"round,a\n0,1\n2,1\n", "round,a,a\n0,1,1\n", "round,a\n0,-1\n", "time,a\n0,1\n", "round,a\n"} {
		if _, err := parseTrace("t.csv", []byte(bad)); err == nil {
			t.Errorf("trace %q accepted", bad)
		}
	}
}

// Every shipped experiment loads, and a short run of each writes every
// output file.
func TestBuiltinExperimentsWriteTheirReport(t *testing.T) {
	entries, err := hetquic.Files.ReadDir("experiments")
	if err != nil || len(entries) == 0 {
		t.Fatalf("no built-in experiments: %v", err)
	}
	for _, e := range entries {
		data, _ := hetquic.Files.ReadFile("experiments/" + e.Name())
		if m := fileMode(data); m != "" && m != ModeOffline && m != ModeTrace && m != ModeReal {
			continue // the other modes' packages' tests run these
		}
		spec, err := Load(hetquic.Files, "experiments/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if spec.Mode == ModeReal { // runner/realenv's test runs these
			continue
		}
		// The report is under test, not the numbers: two seeds and at most
		// 300 rounds keep the whole set cheap under -race.
		spec.Seeds, spec.Rounds = 2, min(spec.Rounds, 300)
		res, err := Execute(context.Background(), spec, workpool.Options{})
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		dir := t.TempDir()
		files, err := WriteAll(context.Background(), dir, res, Summarize(res))
		if err != nil {
			t.Fatalf("%s: %v", e.Name(), err)
		}
		for _, f := range files {
			if st, err := os.Stat(f); err != nil || st.Size() == 0 {
				t.Errorf("%s: %s missing or empty", e.Name(), filepath.Base(f))
			}
		}
		report, _ := os.ReadFile(filepath.Join(dir, "report.md"))
		for _, want := range []string{"## Results", "tct_per_round.png", "| " + spec.Strategies[0].Label + " |"} {
			if !strings.Contains(string(report), want) {
				t.Errorf("%s: report lacks %q", e.Name(), want)
			}
		}
	}
}

// A cancelled context stops the run with its error.
func TestExecuteCancelled(t *testing.T) {
	spec := load(t, base+"strategies: [{strategy: polling}]\n")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Execute(ctx, spec, workpool.Options{}); err == nil {
		t.Fatal("cancelled run succeeded")
	}
}

// A removed path is taken from the strategies and the oracle for its
// rounds and comes back with no history.
func TestRemoveEvent(t *testing.T) {
	s := load(t, base+"strategies: [{strategy: polling}, {strategy: hetquic}, {strategy: oracle}]\nevents: [{round: 100, path: fast, remove: true, for_rounds: 50}]\n")
	res, err := Execute(context.Background(), s, workpool.Options{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	fast := int16(indexOf(res.Paths, "fast"))
	for si, runs := range res.Runs {
		for _, run := range runs {
			onFast := 0
			for t2 := 100; t2 < 150; t2++ {
				if run.Path[t2] == fast {
					t.Fatalf("%s chose the removed path at round %d", run.Label, t2)
				}
			}
			for t2 := 150; t2 < 300; t2++ {
				if run.Path[t2] == fast {
					onFast++
				}
			}
			if onFast == 0 {
				t.Errorf("%s never used the path again after it came back", run.Label)
			}
			if run.Best[120] == fast || run.Best[200] != fast {
				t.Errorf("%s (strategy %d): best path %d at round 120 and %d at 200", run.Label, si, run.Best[120], run.Best[200])
			}
		}
	}
}

// stuckEnv carries every task on path 0 whatever was asked, and the user
// waits 5 ms more than TCT for a task asked on another path (a switch that
// failed after its probe): what mode real reports.
type stuckEnv struct{ Env }

func (e stuckEnv) Do(ctx context.Context, t int, p pathsel.PathID) (Outcome, error) {
	o, err := e.Env.Do(ctx, t, 0)
	if p != 0 {
		o.WaitMs = o.TCTms + 5
	}
	return o, err
}

func TestWaitAndRequestsElsewhere(t *testing.T) {
	s := load(t, base+"strategies: [{strategy: polling}, {strategy: fixed}]\n")
	res, err := ExecuteWith(context.Background(), s, workpool.Options{Workers: 1}, func(s *Spec, seed uint64) (Env, error) {
		e, err := OfflineEnv(s, seed)
		return stuckEnv{e}, err
	})
	if err != nil {
		t.Fatal(err)
	}
	sum := Summarize(res)
	poll, fixed := sum.Strategies[0], sum.Strategies[1]
	// Polling over two paths asks for path 1 in every other round.
	if poll.OtherPathRequests != 150 || fixed.OtherPathRequests != 0 {
		t.Errorf("requests on another path: polling %v, fixed %v; want 150 and 0", poll.OtherPathRequests, fixed.OtherPathRequests)
	}
	if d := poll.MeanWaitMs - poll.MeanTCTms; math.Abs(d-2.5) > 1e-9 {
		t.Errorf("polling waits %v ms more than its TCT, want 2.5", d)
	}
	if math.Abs(fixed.MeanWaitMs-fixed.MeanTCTms) > 1e-9 {
		t.Errorf("fixed: wait %v ≠ TCT %v without switches", fixed.MeanWaitMs, fixed.MeanTCTms)
	}
}

// A scenario with timed events (leo.yaml: 12 handovers, each an outage and
// a delay step) is refused offline without seconds_per_round, and with it
// every event within the run becomes a round event.
func TestScenarioEventsTranslatedOrRefused(t *testing.T) {
	fsys := os.DirFS("..")
	spec := func(extra string) string {
		return "name: leo\nscenario: ../scenarios/leo.yaml\nrounds: 1000\nstrategies: [{strategy: polling}]\n" + extra
	}
	mk := func(text string) fstest.MapFS {
		m := fstest.MapFS{"experiments/x.yaml": {Data: []byte(text)}}
		data, err := fs.ReadFile(fsys, "scenarios/leo.yaml")
		if err != nil {
			t.Fatal(err)
		}
		m["scenarios/leo.yaml"] = &fstest.MapFile{Data: data}
		return m
	}
	_, err := Load(mk(spec("")), "experiments/x.yaml")
	if err == nil || !strings.Contains(err.Error(), "events[0].at_s: mode offline counts rounds, not seconds") {
		t.Fatalf("without seconds_per_round: %v", err)
	}
	s, err := Load(mk(spec("seconds_per_round: 0.1\n")), "experiments/x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// 1000 rounds × 0.1 s = 100 s: the handovers at 15, 30, …, 90 s (6
	// outages of 0.2 s, each ended by restoring the loss, 6 delay steps).
	if len(s.Events) != 18 || s.Events[0].Round != 150 || s.Events[1].Round != 152 || s.Events[2].Round != 152 {
		t.Fatalf("events %+v", s.Events)
	}
	res, err := Execute(context.Background(), s, workpool.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// The outage shows in the truth: the leo path times out at round 150.
	if got := res.Truth[150][0].Mean; got < 1000 {
		t.Errorf("leo path at the outage: mean TCT %v ms, want a timeout", got)
	}
	if a, b := res.Truth[149][0].Mean, res.Truth[153][0].Mean; !(b > a && b < 1000) {
		t.Errorf("delay step 22 → 29 ms not applied: %v → %v", a, b)
	}
}

// A field the offline model cannot model is an error naming it.
func TestScenarioFieldRefusedOffline(t *testing.T) {
	m := fstest.MapFS{
		"x.yaml": {Data: []byte("name: x\nscenario: s.yaml\nrounds: 10\nstrategies: [{strategy: polling}]\n")},
		"s.yaml": {Data: []byte("name: s\npaths:\n  - name: a\n    up: {delay_ms: 5}\n    down: {delay_ms: 5, jitter_ms: 1, reorder: true}\n")},
	}
	_, err := Load(m, "x.yaml")
	if err == nil || !strings.Contains(err.Error(), "paths[0].down.reorder: the offline backend cannot model reorder") {
		t.Fatalf("err = %v", err)
	}
}

// fileMode is an experiment file's mode: field ("" when it has none).
func fileMode(data []byte) string {
	var doc struct {
		Mode string `yaml:"mode"`
	}
	_ = yaml.Unmarshal(data, &doc)
	return doc.Mode
}
