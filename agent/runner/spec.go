package runner

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"path"
	"regexp"
	"slices"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/figure"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/internal/yamlfile"
	"github.com/hetquic/hetquic/scenario"
)

// Spec is a mode-agent experiment file: the envelope every experiment file
// shares (name, description, mode, scenario, seed) and the agent block,
// which names one of the paper's §V experiments and its settings. The
// built-in ones are experiments/agent-*.yaml; `hetquic agent experiment
// NAME` loads agent-NAME and lets flags override the block.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Mode        string `yaml:"mode"` // must be "agent"
	// Scenario is the scenario file, relative to the experiment file
	// (default: DefaultScenario, the paper's two 2.5 Mbit/s paths).
	Scenario string `yaml:"scenario"`
	// Seed is the emulator's seed; run i of Repeat uses Seed+i (default 1).
	Seed  uint64 `yaml:"seed"`
	Agent Params `yaml:"agent"`

	scenario *scenario.Scenario
}

// Params is the agent block.
type Params struct {
	// Experiment is aggregate (§V-B2, exp. 3), outage (exp. 4), loss
	// (§V-B1, exp. 2), prefetch (exp. 5) or handshake (exp. 1, QUIC part).
	Experiment string `yaml:"experiment"`
	// Scale multiplies the paper's object sizes (default per experiment:
	// the registry), so a run takes under a minute; 1 is the paper's.
	Scale float64 `yaml:"scale"`
	// Pin is the single path of aggregate's pinned mode, loss and
	// handshake (default: the scenario's first).
	Pin string `yaml:"pin"`
	// Outage: the cut AtS seconds after the download starts, for OutageS.
	AtS     float64 `yaml:"at_s"`
	OutageS float64 `yaml:"outage_s"`
	// LossesPct are loss's rates in percent (default 0, 1, 2, 5).
	LossesPct []float64 `yaml:"losses_pct"`
	// ConnsPerPath is ct-client's QUIC connections per path in loss,
	// stripe and matrix (default 1).
	ConnsPerPath int `yaml:"conns_per_path"`
	// FixedLanes: in stripe and matrix ct-client adds no lanes to a
	// lossy path (agent.ClientConfig.FixedLanes; default off, as
	// ct-client's).
	FixedLanes bool `yaml:"fixed_lanes"`
	// SenderTrace: stripe and matrix note, per path, what kept its link
	// idle over the striped transfer (StripeConfig.SenderTrace).
	SenderTrace bool `yaml:"sender_trace"`
	// SizeBytes and Rounds are handshake's object (not scaled, default
	// 10000) and measurements per row (default 10).
	SizeBytes int64 `yaml:"size_bytes"`
	Rounds    int   `yaml:"rounds"`
	// Repeat runs aggregate that many times (seeds Seed, Seed+1, …) and
	// reports the mean per mode (default 1).
	Repeat int `yaml:"repeat"`
	// MPTCP adds aggregate's kernel-MPTCP row, TCP handshake's and loss's
	// HTTPS/TCP rows (root lab; skipped with a note where it cannot run).
	MPTCP bool `yaml:"mptcp"`
	TCP   bool `yaml:"tcp"`
	// MPTCPCC is the MPTCP baseline's TCP congestion control (reno, cubic,
	// bbr, …; "": the host's default, which the lab inherits). Under
	// random loss a loss-based one and bbr differ several times over
	// (agent/DESIGN.md, "The lossy row against kernel MPTCP").
	MPTCPCC string `yaml:"mptcp_cc"`
	// TCPCC is the congestion control of loss's HTTPS-over-TCP comparator
	// (with TCP; "": the host's default). agent-loss pins cubic, Linux's
	// default, as the stock stack the paper's end-to-end HTTPS ran over.
	TCPCC string `yaml:"tcp_cc"`
}

// Load reads and validates an agent experiment file from fsys; its
// scenario is read relative to it.
func Load(fsys fs.FS, name string) (*Spec, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	var s Spec
	if err := yamlfile.Decode(name, data, &s); err != nil {
		return nil, err
	}
	if err := s.Prepare(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if s.Scenario != "" {
		sc, err := scenario.Load(fsys, path.Join(path.Dir(name), s.Scenario))
		if err != nil {
			return nil, err
		}
		if err := s.SetScenario(sc); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return &s, nil
}

// SetScenario replaces the spec's scenario (a --scenario flag); like
// Load, it refuses fields the agent backend cannot model
// (scenario.FieldTable: timed events) and, for an experiment that
// compares goodput with the paths' rates (experiment.rated), a path
// without a down rate.
func (s *Spec) SetScenario(sc *scenario.Scenario) error {
	if err := sc.Check(scenario.BackendAgent); err != nil {
		return fmt.Errorf("scenario %s: %w", sc.Name, err)
	}
	if e, ok := lookup(s.Agent.Experiment); ok && e.rated {
		for i, p := range sc.Paths {
			if !(p.Down.RateMbps > 0) {
				return fmt.Errorf("scenario %s: paths[%d] (%s).down.rate_mbps: missing; %s compares goodput with the paths' summed down rate",
					sc.Name, i, p.Name, e.name)
			}
		}
	}
	s.scenario = sc
	return nil
}

// Prepare fills the defaults and validates every field; call it again
// after changing Agent (flags), before Run.
func (s *Spec) Prepare() error {
	switch {
	case s.Name == "":
		return fmt.Errorf("name: missing")
	case s.Mode != "agent":
		return fmt.Errorf("mode: %q, want agent", s.Mode)
	}
	e, ok := lookup(s.Agent.Experiment)
	if !ok {
		return fmt.Errorf("agent.experiment: %q is not one of %v", s.Agent.Experiment, Names)
	}
	s.Seed = cmp.Or(s.Seed, 1)
	s.Agent.defaults(e)
	return s.Agent.check(e)
}

// defaults fills what p leaves out: e's scale, the outage at 2 s for 5 s,
// losses 0–5 %, one connection per path, handshake's 10 kB × 10 rounds,
// one run.
func (p *Params) defaults(e experiment) {
	p.Scale = cmp.Or(p.Scale, e.scale)
	p.AtS = cmp.Or(p.AtS, 2)
	p.OutageS = cmp.Or(p.OutageS, 5)
	if len(p.LossesPct) == 0 {
		p.LossesPct = []float64{0, 1, 2, 5}
	}
	p.ConnsPerPath = cmp.Or(p.ConnsPerPath, 1)
	p.SizeBytes = cmp.Or(p.SizeBytes, 10000)
	p.Rounds = cmp.Or(p.Rounds, 10)
	p.Repeat = cmp.Or(p.Repeat, 1)
}

// check validates p's ranges and the options e takes.
func (p *Params) check(e experiment) error {
	switch {
	case !(p.Scale > 0 && p.Scale <= 10):
		return fmt.Errorf("agent.scale: %g is outside (0, 10]", p.Scale)
	case !(p.AtS > 0 && p.AtS <= 600) || !(p.OutageS > 0 && p.OutageS <= 600):
		return fmt.Errorf("agent.at_s, agent.outage_s: %g, %g must be in (0, 600]", p.AtS, p.OutageS)
	case p.ConnsPerPath < 1 || p.ConnsPerPath > wire.MaxLanes:
		return fmt.Errorf("agent.conns_per_path: %d is outside [1, %d]", p.ConnsPerPath, wire.MaxLanes)
	case p.SizeBytes < 1 || p.Rounds < 1 || p.Rounds > 10000:
		return fmt.Errorf("agent.size_bytes, agent.rounds: %d, %d must be ≥ 1 (rounds ≤ 10000)", p.SizeBytes, p.Rounds)
	case p.Repeat < 1 || p.Repeat > 100:
		return fmt.Errorf("agent.repeat: %d is outside [1, 100]", p.Repeat)
	}
	if err := p.checkOptions(e); err != nil {
		return err
	}
	for i, l := range p.LossesPct {
		if !(l >= 0 && l < 100) {
			return fmt.Errorf("agent.losses_pct[%d]: %g is outside [0, 100)", i, l)
		}
	}
	return nil
}

// ccName is a Linux TCP congestion control's name (TCP_CA_NAME_MAX 16,
// with its NUL).
var ccName = regexp.MustCompile(`^[a-z0-9_]{1,15}$`)

// checkOptions refuses an option e does not take.
func (p *Params) checkOptions(e experiment) error {
	switch {
	case p.Repeat > 1 && !e.repeat:
		return fmt.Errorf("agent.repeat: only %s repeats", takes(func(e experiment) bool { return e.repeat }))
	case p.MPTCP && !e.mptcp:
		return fmt.Errorf("agent.mptcp: only for %s", takes(func(e experiment) bool { return e.mptcp }))
	case p.TCP && !e.tcp:
		return fmt.Errorf("agent.tcp: only for %s", takes(func(e experiment) bool { return e.tcp }))
	case p.MPTCPCC != "" && !p.MPTCP:
		return fmt.Errorf("agent.mptcp_cc: only with agent.mptcp")
	case p.MPTCPCC != "" && !ccName.MatchString(p.MPTCPCC):
		return fmt.Errorf("agent.mptcp_cc: %q is not a congestion control name (1–15 of a-z, 0-9, _)", p.MPTCPCC)
	case p.TCPCC != "" && (!p.TCP || e.name != "loss"):
		return fmt.Errorf("agent.tcp_cc: only for loss with agent.tcp")
	case p.TCPCC != "" && !ccName.MatchString(p.TCPCC):
		return fmt.Errorf("agent.tcp_cc: %q is not a congestion control name (1–15 of a-z, 0-9, _)", p.TCPCC)
	}
	return nil
}

// Seeds are the seeds the spec runs.
func (s *Spec) Seeds() []uint64 { return results.Seeds(s.Seed, s.Agent.Repeat) }

// bytes is mb megabytes (10^6) of the paper scaled by Scale.
func (s *Spec) bytes(mb float64) int64 { return int64(mb * 1e6 * s.Agent.Scale) }

// Result is a finished agent experiment.
type Result struct {
	Spec *Spec
	// Rows are the experiment's rows ([]AggRow, []OutageRow, …); for a
	// repeated aggregate, every run's rows, then Mean holds their means.
	Rows any
	Mean []AggRow
	// Notes say what was skipped and why (no root lab for MPTCP).
	Notes []string
	// Setting is one line on what was run (sizes, cut, …).
	Setting string
	// Cuts are the matrix's outage rows (RunCuts), a table of their own.
	Cuts  []CutRow
	chart chart
}

type chart struct {
	title, y string
	labels   []string
	values   []float64
}

func (c *chart) bar(label string, v float64) {
	c.labels, c.values = append(c.labels, label), append(c.values, v)
}

// Run runs the experiment through the worker pool (one job per repeat, one at
// a time: every job owns the loopback's emulator and agents).
func Run(ctx context.Context, s *Spec, opt workpool.Options, log *slog.Logger) (*Result, error) {
	e, ok := lookup(s.Agent.Experiment)
	if !ok {
		return nil, fmt.Errorf("agent.experiment: %q is not one of %v", s.Agent.Experiment, Names)
	}
	r := &Result{Spec: s}
	opt.Workers = 1
	if opt.Name == "" {
		opt.Name = s.Name
	}
	if err := e.run(ctx, s, opt, log, r); err != nil {
		return nil, err
	}
	return r, nil
}

// one runs a single job through the worker pool.
func one[T any](ctx context.Context, opt workpool.Options, f func(context.Context) (T, error)) (T, error) {
	out, err := workpool.Map(ctx, 1, opt, func(ctx context.Context, _ int) (T, error) { return f(ctx) })
	if err != nil {
		var zero T
		return zero, err
	}
	return out[0], nil
}

// Summary is summary.json for mode agent: the common header, the
// experiment's settings, and its rows (for a repeated aggregate every
// run's rows and the means per mode).
type Summary struct {
	results.Header
	AgentExperiment string   `json:"agent_experiment"`
	Scale           float64  `json:"scale"`
	Setting         string   `json:"setting"`
	Rows            any      `json:"rows"`
	Mean            []AggRow `json:"mean,omitempty"`
	Notes           []string `json:"notes,omitempty"`
}

// Summary is r's summary.json.
func (r *Result) Summary() *Summary {
	return &Summary{Header: results.NewHeader(r.Spec.Name, "agent", r.Spec.Seeds()), AgentExperiment: r.Spec.Agent.Experiment,
		Scale: r.Spec.Agent.Scale, Setting: r.Setting, Rows: r.Rows, Mean: r.Mean, Notes: r.Notes}
}

// Tables are the report's tables (what `hetquic exp run NAME --md`
// prints). These are real-network timings: they change from run to run,
// so docs paste them between "gen measured" markers.
func (r *Result) Tables() []results.Table {
	f0, f1, f2, f3 := func(x float64) string { return fmt.Sprintf("%.0f", x) }, func(x float64) string { return fmt.Sprintf("%.1f", x) },
		func(x float64) string { return fmt.Sprintf("%.2f", x) }, func(x float64) string { return fmt.Sprintf("%.3f", x) }
	t := results.Table{Caption: r.Setting + "."}
	switch rows := r.Rows.(type) {
	case []AggRow:
		if len(r.Mean) > 0 && r.Spec.Agent.Repeat > 1 {
			rows = r.Mean
			t.Caption += fmt.Sprintf(" Means of %d runs.", r.Spec.Agent.Repeat)
		}
		t.Header = []string{"mode", "big ms", "small ms", "makespan ms", "ideal ms", "efficiency"}
		for _, x := range rows {
			t.Rows = append(t.Rows, []string{x.Mode, f0(x.BigMs), f0(x.SmallMs), f0(x.MakespanMs), f0(x.IdealMs), f2(x.Efficiency)})
		}
		t.Note = "Efficiency = (total bytes / summed path rate) / makespan, the paper's."
	case []OutageRow:
		t.Header = []string{"mode", "cut path", "total ms", "after cut ms", "migrations", "resume gap s", "bytes ok"}
		for _, x := range rows {
			t.Rows = append(t.Rows, []string{x.Mode, x.CutPath, f0(x.TotalMs), f0(x.AfterCutMs), f0(x.Migrations), f3(x.ResumeGapS), fmt.Sprint(x.Bytes)})
		}
	case []LossRow:
		t.Header = []string{"mode", "loss %", "bytes", "ms", "ideal ms", "goodput Mbit/s", "CT ms / this ms"}
		for _, x := range rows {
			vs := ""
			if x.CTOver > 0 {
				vs = f2(x.CTOver)
			}
			t.Rows = append(t.Rows, []string{x.Mode, fmt.Sprintf("%g", x.Loss*100), fmt.Sprint(x.SizeBytes), f0(x.Ms), f0(x.IdealMs), f2(x.Mbps), vs})
		}
		t.Note = "HTTPS rows: a fresh TCP connection with TLS 1.2 per download, handshakes included; the CT rows' connection is up before the app asks."
	case []HandshakeRow:
		t.Header = []string{"mode", "median ms", "min ms", "path RTT ms"}
		for _, x := range rows {
			t.Rows = append(t.Rows, []string{x.Mode, f1(x.MedianMs), f1(x.MinMs), f0(x.RTTms)})
		}
	case []StripeRow:
		t.Header = []string{"mode", "ms", "goodput Mbit/s", "sum of rates Mbit/s", "goodput / sum", "bytes per path", "CPU-s/GB process, machine"}
		for _, x := range rows {
			t.Rows = append(t.Rows, []string{x.Mode, f0(x.Ms), f1(x.Mbps), f0(x.SumMbps), f2(x.Ratio), x.Shares, cpuPair(x.CPUsPerGB, x.MachineCPUsPerGB)})
		}
		t.Note = "Sum of rates: the down rates of the paths the mode may use, averaged over the mode's transfer where the scenario's events change one. " + warmNote + cpuNote
	case []MatrixRow:
		matrixTable(&t, rows)
	case []PrefetchRow:
		t.Header = []string{"mode", "ms", "cache hit", "bytes"}
		for _, x := range rows {
			t.Rows = append(t.Rows, []string{x.Mode, f1(x.Ms), fmt.Sprint(x.Hit), fmt.Sprint(x.Bytes)})
		}
	}
	for _, n := range r.Notes {
		t.Note += " " + n + "."
	}
	if len(r.Cuts) > 0 {
		return []results.Table{t, cutTable(r.Cuts)}
	}
	return []results.Table{t}
}

// matrixTable fills t with the matrix's rows.
func matrixTable(t *results.Table, rows []MatrixRow) {
	f1, f2 := func(x float64) string { return fmt.Sprintf("%.1f", x) }, func(x float64) string { return fmt.Sprintf("%.2f", x) }
	t.Header = []string{"path mix", "paths (Mbit/s / ms RTT)", "ct striped Mbit/s", "ct best path alone", "kernel MPTCP", "striped / best alone", "striped / sum", "striped / MPTCP", "bytes per path",
		"ct striped CPU-s/GB process, machine", "MPTCP CPU-s/GB process, machine", "CPU ct / MPTCP (machine)"}
	for _, x := range rows {
		mptcp, vs, cpuVs := "—", "—", "—"
		if x.MPTCP > 0 {
			mptcp, vs = f1(x.MPTCP), f2(x.Striped/x.MPTCP)
		}
		if x.CPURatio > 0 {
			cpuVs = f2(x.CPURatio)
		}
		t.Rows = append(t.Rows, []string{x.Mix, x.Paths, f1(x.Striped), f1(x.Best), mptcp, f2(x.Striped / x.Best), f2(x.Striped / x.SumMbps), vs, x.Shares,
			cpuPair(x.CtProcCPU, x.CtCPU), cpuPair(x.MPTCPProcCPU, x.MPTCPCPU), cpuVs})
	}
	t.Note = "Goodput of one object per mode; the three modes of a row run one after another in the same run. " +
		"Sum: the paths' summed down rate averaged over the striped transfer, so where the first's rate halves at 1 s it is 150 Mbit/s for the first second and 100 after it. " + warmNote + cpuNote
}

// warmNote says what each mode did before its measured download
// (stripeOnce, mptcpFetch).
const warmNote = "Each mode's download follows a warm-up: 5 s of 3 MB downloads through the same ct-client, or over the same MPTCP connection, then a rest of the paths' longest round trip and queue. "

// cpuNote says what the CPU-cost columns count (cpucost.go).
const cpuNote = "CPU-s/GB: CPU seconds per 10^9 bytes over the measured transfer. Process: this process's user + system time, " +
	"which holds the emulator (the relay for ct, the lab for MPTCP), the app and the app-server for both, ct-client and ct-server for ct, " +
	"but not the kernel's TCP and MPTCP work, which runs in softirq. " +
	"Machine: every core's busy time, softirq included: the cores' wall time less the idle time /proc/stat clocks (its busy counters are tick samples, which miss short bursts), so it counts both modes alike and compares them; " +
	"it counts every other tenant too, so it means something only on an otherwise idle machine (see the load above)."

// cpuPair is "process, machine" CPU-s/GB, "—" for one not measured.
func cpuPair(proc, machine float64) string {
	s := func(x float64) string {
		if x <= 0 {
			return "—"
		}
		return fmt.Sprintf("%.1f", x)
	}
	return s(proc) + ", " + s(machine)
}

// WriteAll writes summary.json, the bar chart (PNG and SVG) and report.md
// into dir and returns the files written.
func (r *Result) WriteAll(dir string) ([]string, error) {
	d, err := results.Create(dir)
	if err != nil {
		return nil, err
	}
	if err := d.WriteSummary(r.Summary()); err != nil {
		return nil, err
	}
	png, err := d.Path(r.Spec.Agent.Experiment + ".png")
	if err != nil {
		return nil, err
	}
	if err := r.WriteChart(png); err != nil {
		return nil, err
	}
	d.AddFigure(png)
	var md = fmt.Sprintf("# %s\n\n%s\n\nAgent experiment `%s` (Cybertwin §V) through hetquic's emulator on loopback, seed %d, scale %g. "+
		"Real timings: they vary from run to run and with the machine's load.\n\n", r.Spec.Name, r.Spec.Description, r.Spec.Agent.Experiment, r.Spec.Seed, r.Spec.Agent.Scale)
	var b = []byte(md)
	for _, t := range r.Tables() {
		b = append(b, t.Markdown()...)
		b = append(b, '\n')
	}
	b = append(b, results.FigureMarkdown(png, r.chart.title)...)
	if err := d.WriteReport(string(b)); err != nil {
		return nil, err
	}
	return d.Files(), nil
}

// WriteChart draws the result's bar chart into png (and its SVG twin).
func (r *Result) WriteChart(png string) error {
	return figureBars(png, r.chart)
}

// finite reports whether every bar has a drawable value.
func (c chart) finite() bool {
	return !slices.ContainsFunc(c.values, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) })
}

func figureBars(png string, c chart) error {
	if !c.finite() {
		return fmt.Errorf("%s: a bar is not a finite number: %v", png, c.values)
	}
	return figure.Bars(png, c.title, c.y, c.labels, c.values)
}
