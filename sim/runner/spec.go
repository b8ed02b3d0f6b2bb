// Package runner runs simulator experiments: a YAML file names a scenario (two
// multi-homed hosts) or a topology (flows between its nodes), an
// application, the variants to compare (scheduler, congestion control, or a
// path-set scheme) and the seeds; exp runs every (variant, sweep value,
// seed) on all cores and writes CSV, summary.json, figures and report.md.
package runner

import (
	"cmp"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/hetquic/hetquic/internal/sweep"
	"github.com/hetquic/hetquic/internal/yamlfile"
	"github.com/hetquic/hetquic/scenario"
	"github.com/hetquic/hetquic/sim/leo"
	"github.com/hetquic/hetquic/sim/mobility"
	"github.com/hetquic/hetquic/sim/topo"
)

// Spec is a simulator experiment file.
type Spec struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	// Mode is the experiment envelope's (experiment.Envelope): "sim", or
	// empty (a file with simulator fields is mode sim).
	Mode string `yaml:"mode"`
	// Scenario (a scenario file, relative to this file) or Topology (a
	// topology file, or builtin:NAME): exactly one.
	Scenario string `yaml:"scenario"`
	Topology string `yaml:"topology"`
	// Mobility generates the scenario from a drive (thesis §2.6.2; see
	// sim/mobility): it replaces scenario.
	Mobility *mobility.Drive `yaml:"mobility"`
	// LEO builds a two-interface host under a LEO satellite plane with
	// background TCP (thesis ch. 3, sim/leo); it replaces scenario.
	LEO *leo.Constellation `yaml:"leo"`
	// XLabel names the variants' x values (a sweep: fct_vs_x.png).
	XLabel string `yaml:"x_label"`
	// Direction of the data on a scenario: down (server → client, default) or up.
	Direction string  `yaml:"direction"`
	DurationS float64 `yaml:"duration_s"` // cap on simulated time per run (default 300)
	Seeds     int     `yaml:"seeds"`      // runs per variant (default 1)
	Seed      uint64  `yaml:"seed"`       // first seed (default 1)
	BinMs     float64 `yaml:"bin_ms"`     // goodput bin (default 100)
	// ExactChunkDelays keeps every chunk's delays however long the
	// transfer (8 bytes a chunk): exact quantiles and runs/…_delay.csv
	// past the 2^20 chunks after which a run otherwise sketches them
	// (delays.go).
	ExactChunkDelays bool `yaml:"exact_chunk_delays"`

	Transport Transport `yaml:"transport"`
	App       App       `yaml:"app"`
	Flows     *Flows    `yaml:"flows"` // topology only
	// PathCounts sweeps the number of scenario paths used (the first N),
	// as in thesis Fig. 2.17; empty: all paths.
	PathCounts []int     `yaml:"path_counts"`
	Variants   []Variant `yaml:"variants"`
	// Sweep runs the experiment at many points, each a setting of some of
	// this file's or its scenario's fields (LoadPlan expands it).
	Sweep *sweep.Block `yaml:"sweep"`

	fsys fs.FS  // where the file and what it names are read from
	dir  string // the file's directory in fsys (slash-separated)
	sc   *scenario.Scenario
	tp   *topo.Topology
}

// Transport holds the MPQUIC model's settings shared by all variants.
type Transport struct {
	PacketBytes     int   `yaml:"packet_bytes"`      // default 1500
	RecvWindowBytes int64 `yaml:"recv_window_bytes"` // default 16 MiB
	// StreamWindowBytes is the stream flow-control window (MAX_STREAM_DATA;
	// default sim.DefaultStreamWindow, 6 MiB, not auto-tuned).
	StreamWindowBytes int64 `yaml:"stream_window_bytes"`
	AckEvery          int   `yaml:"ack_every"`      // default 2
	AckOnFastest      bool  `yaml:"ack_on_fastest"` // MMQUIC ACK path choice
	// AutoTune grows the receive windows as quic-go does (sim.ConnConfig.AutoTune).
	AutoTune bool `yaml:"auto_tune"`
}

// App is the workload of each flow (sim/README.md, "Workloads").
type App struct {
	// Kind: bulk (default), dash, streams, video, cbr or reqresp.
	Kind   string  `yaml:"kind"`
	SizeMB float64 `yaml:"size_mb"` // bulk, streams (each stream): bytes to transfer (MB = 10^6 bytes)
	// Streams: streams opened at once, each size_mb (streams); the flow
	// completes when all are delivered.
	Streams int `yaml:"streams"`
	// Video: frames at fps of bitrate_mbps (gop, i_scale: sim.Video), each
	// due deadline_ms after its release; drop_late stops sending a late
	// frame. BackgroundMB adds a bulk stream of that size, less urgent than
	// the frames (0: none).
	FPS          float64 `yaml:"fps"`
	Frames       int     `yaml:"frames"`
	GOP          int     `yaml:"gop"`
	IScale       float64 `yaml:"i_scale"`
	DeadlineMs   float64 `yaml:"deadline_ms"`
	DropLate     bool    `yaml:"drop_late"`
	BackgroundMB float64 `yaml:"background_mb"`
	// CBR: rate_mbps for duration_s of the run (after the flow's start).
	RateMbps float64 `yaml:"rate_mbps"`
	CBRS     float64 `yaml:"cbr_s"`
	// Request/response: requests of resp_kb each, think_ms between a
	// response's completion and the next request.
	Requests int     `yaml:"requests"`
	RespKB   float64 `yaml:"resp_kb"`
	ThinkMs  float64 `yaml:"think_ms"`
	// DASH-like live segments: segment k (k = 0..Segments−1) of
	// BitrateMbps·SegmentS bits is released at k·SegmentS and is due
	// DeadlineS after its release.
	SegmentS    float64 `yaml:"segment_s"`
	BitrateMbps float64 `yaml:"bitrate_mbps"`
	Segments    int     `yaml:"segments"`
	DeadlineS   float64 `yaml:"deadline_s"`
}

// Flows describes the flows on a topology (min-FCT §4: flows launched one
// after another between node pairs).
type Flows struct {
	Count     int         `yaml:"count"`
	IntervalS float64     `yaml:"interval_s"` // start of flow i: i·interval
	Pairs     [][2]string `yaml:"pairs"`      // cycled; empty: random distinct pairs per seed
	// The flow's request (min-FCT §3.1): b_f, t_f, o_f.
	BWMbps     float64 `yaml:"bw_mbps"`
	MaxDelayMs float64 `yaml:"max_delay_ms"`
	MaxLoss    float64 `yaml:"max_loss"`
	// Path-set parameters (§4.1: k = 3, α = β = 0.5).
	K          int     `yaml:"k"`
	Candidates int     `yaml:"candidates"`
	Alpha      float64 `yaml:"alpha"`
	Beta       float64 `yaml:"beta"`
}

// Variant is one thing compared.
type Variant struct {
	Label     string `yaml:"label"`
	Scheduler string `yaml:"scheduler"` // default minrtt (or the scheme's)
	CC        string `yaml:"cc"`        // default newreno
	// Scheme chooses a flow's paths on a topology: quic (shortest path,
	// single-path QUIC), lrf (k shortest, minRTT), pquic (k shortest,
	// round-robin: the stand-in for PQUIC), minfct (Alg. 1–2, weighted).
	Scheme string `yaml:"scheme"`
	// LEO overrides the spec's leo: fields (non-zero ones) for this variant.
	LEO *leo.Constellation `yaml:"leo"`
	// StreamWindowBytes overrides transport.stream_window_bytes for this
	// variant (a receive-window sweep); 0: the transport's.
	StreamWindowBytes int64 `yaml:"stream_window_bytes"`
	// Group and X place the variant in a sweep figure (fct_vs_x.png, one
	// line per group); optional.
	Group string  `yaml:"group"`
	X     float64 `yaml:"x"`
}

// Load reads and validates an experiment file on disk; the scenario or
// topology it names is read relative to it.
func Load(file string) (*Spec, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	// Rooted at "/", so ../../scenarios/… resolves as the shell would.
	return LoadFS(os.DirFS("/"), strings.TrimPrefix(filepath.ToSlash(abs), "/"))
}

// LoadFS reads and validates experiment file name of fsys (the built-in
// ones are in hetquic.Files under sim/experiments/).
func LoadFS(fsys fs.FS, name string) (*Spec, error) {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return nil, fmt.Errorf("load experiment: %w", err)
	}
	return Parse(fsys, name, data)
}

// Parse decodes and validates experiment text data, read from name in fsys
// (what the scenario or topology is relative to).
func Parse(fsys fs.FS, name string, data []byte) (*Spec, error) {
	var s Spec
	if err := yamlfile.Decode(name, data, &s); err != nil {
		return nil, err
	}
	s.fsys, s.dir = fsys, path.Dir(name)
	if err := s.prepare(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &s, nil
}

// prepare fills defaults, loads the network and validates every field.
func (s *Spec) prepare() error {
	if s.Name == "" {
		return fmt.Errorf("name: missing")
	}
	if s.Mode != "" && s.Mode != "sim" {
		return fmt.Errorf("mode: %q, want sim (or none)", s.Mode)
	}
	if err := s.loadNetwork(); err != nil {
		return err
	}
	s.defaults()
	if err := s.validate(); err != nil {
		return err
	}
	return s.prepareVariants()
}

// loadNetwork checks that the spec names exactly one network (scenario,
// topology, mobility or leo) and loads and validates it with the fields
// that only it takes.
func (s *Spec) loadNetwork() error {
	given := 0
	for _, b := range []bool{s.Scenario != "", s.Topology != "", s.Mobility != nil, s.LEO != nil} {
		if b {
			given++
		}
	}
	if given != 1 {
		return fmt.Errorf("scenario, topology, mobility, leo: give exactly one")
	}
	if s.Topology != "" {
		return s.loadTopology()
	}
	if s.Flows != nil {
		return fmt.Errorf("flows: only for a topology")
	}
	switch {
	case s.LEO != nil:
		c := *s.LEO
		c.Defaults()
		if err := c.Validate(); err != nil {
			return fmt.Errorf("leo.%w", err)
		}
		if len(s.PathCounts) > 0 {
			return fmt.Errorf("path_counts: only for a scenario")
		}
	case s.Mobility != nil:
		if err := s.Mobility.Validate(); err != nil {
			return fmt.Errorf("mobility.%w", err)
		}
		sc, err := s.Mobility.Scenario(s.Name)
		if err != nil {
			return fmt.Errorf("mobility: %w", err)
		}
		s.sc = sc
	default:
		sc, err := scenario.Load(s.fsys, path.Join(s.dir, s.Scenario))
		if err != nil {
			return fmt.Errorf("scenario: %w", err)
		}
		s.sc = sc
	}
	return nil
}

// loadTopology loads the topology file (or a built-in one) and the flows
// over it.
func (s *Spec) loadTopology() error {
	name := s.Topology
	if !strings.HasPrefix(name, "builtin:") {
		name = path.Join(s.dir, name)
	}
	tp, err := topo.Load(s.fsys, name)
	if err != nil {
		return fmt.Errorf("topology: %w", err)
	}
	s.tp = tp
	if s.Flows == nil {
		return fmt.Errorf("flows: needed with a topology")
	}
	if err := s.Flows.prepare(tp); err != nil {
		return err
	}
	if len(s.PathCounts) > 0 {
		return fmt.Errorf("path_counts: only for a scenario")
	}
	return nil
}

// defaults fills the spec's zero fields (the variants' are
// prepareVariants', the transport's sim.ConnConfig's).
func (s *Spec) defaults() {
	s.Direction = cmp.Or(s.Direction, "down")
	s.DurationS = cmp.Or(s.DurationS, 300)
	s.Seeds = cmp.Or(s.Seeds, 1)
	s.Seed = cmp.Or(s.Seed, 1)
	s.BinMs = cmp.Or(s.BinMs, 100)
}

// validate checks the spec's own fields and its app.
func (s *Spec) validate() error {
	switch {
	case s.Direction != "down" && s.Direction != "up":
		return fmt.Errorf("direction: %q (want down or up)", s.Direction)
	case !(s.DurationS > 0 && s.DurationS <= 1e6):
		return fmt.Errorf("duration_s: %v is outside (0, 1e6]", s.DurationS)
	case s.Seeds < 1 || s.Seeds > 10000:
		return fmt.Errorf("seeds: %d is outside [1, 10000]", s.Seeds)
	case !(s.BinMs >= 1 && s.BinMs <= 60000):
		return fmt.Errorf("bin_ms: %v is outside [1, 60000]", s.BinMs)
	}
	if err := s.App.prepare(); err != nil {
		return err
	}
	for i, n := range s.PathCounts {
		if n < 1 || n > len(s.sc.Paths) {
			return fmt.Errorf("path_counts[%d]: %d is outside [1, %d] (the scenario's paths)", i, n, len(s.sc.Paths))
		}
	}
	return nil
}

// prepareVariants fills each variant's defaults and validates it, with the
// connection configuration each will run with (connConfig and
// sim.ConnConfig's defaults: the one source of them).
func (s *Spec) prepareVariants() error {
	if len(s.Variants) == 0 {
		return fmt.Errorf("variants: at least one is needed")
	}
	if err := s.connConfig(Variant{}, 0).WithDefaults().Validate(); err != nil {
		return fmt.Errorf("transport.%w", err)
	}
	labels := map[string]bool{}
	for i := range s.Variants {
		v := &s.Variants[i]
		f := fmt.Sprintf("variants[%d]", i)
		if err := s.prepareVariant(v); err != nil {
			return fmt.Errorf("%s.%w", f, err)
		}
		if labels[v.Label] {
			return fmt.Errorf("%s.label: duplicate label %q", f, v.Label)
		}
		labels[v.Label] = true
	}
	return nil
}

// schemeScheduler is each topology scheme's default scheduler.
var schemeScheduler = map[string]string{"quic": "single", "lrf": "minrtt", "pquic": "rr", "minfct": "weighted"}

// prepareVariant fills v's defaults and validates it; errors name the
// field within the variant.
func (s *Spec) prepareVariant(v *Variant) error {
	v.CC = cmp.Or(v.CC, "newreno")
	if v.LEO != nil {
		if s.LEO == nil {
			return fmt.Errorf("leo: only with a top-level leo")
		}
		if err := s.leoSpec(*v).Validate(); err != nil {
			return fmt.Errorf("leo.%w", err)
		}
	}
	if s.tp != nil {
		d, ok := schemeScheduler[v.Scheme]
		if !ok {
			return fmt.Errorf("scheme: unknown scheme %q (want quic, lrf, pquic or minfct)", v.Scheme)
		}
		v.Scheduler = cmp.Or(v.Scheduler, d)
	} else if v.Scheme != "" {
		return fmt.Errorf("scheme: only for a topology")
	}
	v.Scheduler = cmp.Or(v.Scheduler, "minrtt")
	v.Label = cmp.Or(v.Label, v.Scheme, v.Scheduler)
	// The transport validated, what is left to fail is the variant's:
	// cc, scheduler, stream_window_bytes.
	return s.connConfig(*v, 0).WithDefaults().Validate()
}

func (a *App) prepare() error {
	a.Kind = cmp.Or(a.Kind, "bulk")
	checks, ok := appChecks[a.Kind]
	if !ok {
		return fmt.Errorf("app.kind: unknown application %q (want bulk, dash, streams, video, cbr or reqresp)", a.Kind)
	}
	for _, r := range checks(a) {
		if err := r.check(); err != nil {
			return err
		}
	}
	return nil
}

// field is one numeric field of the app and its range: [lo, hi], or (lo,
// hi] when open.
type field struct {
	name   string
	v      float64
	lo, hi float64
	open   bool
	isInt  bool // printed as an integer
}

func num(name string, v, lo, hi float64, open bool) field { return field{name, v, lo, hi, open, false} }
func count(name string, v int, lo, hi float64) field {
	return field{name, float64(v), lo, hi, false, true}
}

// check is "app.NAME: V is outside RANGE" when V is outside it (or NaN).
func (f field) check() error {
	if f.v <= f.hi && (f.v > f.lo || !f.open && f.v >= f.lo) {
		return nil
	}
	v, left := fmt.Sprint(f.v), "["
	if f.isInt {
		v = fmt.Sprint(int64(f.v))
	}
	if f.open {
		left = "("
	}
	return fmt.Errorf("app.%s: %s is outside %s%s, %s]", f.name, v, left, strconv.FormatFloat(f.lo, 'f', -1, 64), strconv.FormatFloat(f.hi, 'f', -1, 64))
}

// appChecks are each application kind's fields, in the order they are
// checked.
var appChecks = map[string]func(a *App) []field{
	"bulk": func(a *App) []field { return []field{num("size_mb", a.SizeMB, 0, 1e5, true)} },
	"dash": func(a *App) []field {
		return []field{num("segment_s", a.SegmentS, 0, 60, true), num("bitrate_mbps", a.BitrateMbps, 0, 1e4, true),
			count("segments", a.Segments, 1, 100000), num("deadline_s", a.DeadlineS, 0, 600, true)}
	},
	"streams": func(a *App) []field {
		return []field{count("streams", a.Streams, 1, 10000), num("size_mb", a.SizeMB, 0, 1e4, true)}
	},
	"video": func(a *App) []field {
		return []field{num("fps", a.FPS, 0, 1000, true), num("bitrate_mbps", a.BitrateMbps, 0, 1e4, true),
			count("frames", a.Frames, 1, 1000000), count("gop", a.GOP, 0, 1000), num("i_scale", a.IScale, 0, 100, false),
			num("deadline_ms", a.DeadlineMs, 0, 600000, true), num("background_mb", a.BackgroundMB, 0, 1e5, false)}
	},
	"cbr": func(a *App) []field {
		return []field{num("rate_mbps", a.RateMbps, 0, 1e4, true), num("cbr_s", a.CBRS, 0, 1e5, true)}
	},
	"reqresp": func(a *App) []field {
		return []field{count("requests", a.Requests, 1, 1000000), num("resp_kb", a.RespKB, 0, 1e7, true),
			num("think_ms", a.ThinkMs, 0, 1e6, false)}
	},
}

func (f *Flows) prepare(tp *topo.Topology) error {
	switch {
	case f.Count < 1 || f.Count > 100000:
		return fmt.Errorf("flows.count: %d is outside [1, 100000]", f.Count)
	case !(f.IntervalS >= 0) || math.IsInf(f.IntervalS, 0):
		return fmt.Errorf("flows.interval_s: %v must be a finite number ≥ 0", f.IntervalS)
	case !(f.BWMbps >= 0):
		return fmt.Errorf("flows.bw_mbps: %v must be ≥ 0", f.BWMbps)
	case !(f.MaxLoss >= 0 && f.MaxLoss <= 1):
		return fmt.Errorf("flows.max_loss: %v is outside [0, 1]", f.MaxLoss)
	case !(f.MaxDelayMs >= 0):
		return fmt.Errorf("flows.max_delay_ms: %v must be ≥ 0", f.MaxDelayMs)
	}
	if f.MaxDelayMs == 0 {
		f.MaxDelayMs = 100
	}
	if f.MaxLoss == 0 {
		f.MaxLoss = 0.01
	}
	if f.K == 0 {
		f.K = 3
	}
	if f.K < 1 || f.K > 16 {
		return fmt.Errorf("flows.k: %d is outside [1, 16]", f.K)
	}
	if f.Candidates == 0 {
		f.Candidates = 2 * f.K
	}
	if f.Candidates < f.K || f.Candidates > 64 {
		return fmt.Errorf("flows.candidates: %d is outside [k, 64]", f.Candidates)
	}
	if f.Alpha == 0 && f.Beta == 0 {
		f.Alpha, f.Beta = 0.5, 0.5
	}
	if f.Alpha < 0 || f.Beta < 0 {
		return fmt.Errorf("flows.alpha, flows.beta: must be ≥ 0")
	}
	for i, p := range f.Pairs {
		a, ok := tp.Node(p[0])
		if !ok {
			return fmt.Errorf("flows.pairs[%d][0]: no node named %q", i, p[0])
		}
		b, ok := tp.Node(p[1])
		if !ok {
			return fmt.Errorf("flows.pairs[%d][1]: no node named %q", i, p[1])
		}
		if a == b {
			return fmt.Errorf("flows.pairs[%d]: source and destination are both %q", i, p[0])
		}
		if _, _, ok := tp.Shortest(a, b, tp.DelayWeight(), nil, nil); !ok {
			return fmt.Errorf("flows.pairs[%d]: no path between %q and %q", i, p[0], p[1])
		}
	}
	if len(f.Pairs) == 0 {
		// Random pairs need every node pair connected.
		for b := 1; b < len(tp.Nodes); b++ {
			if _, _, ok := tp.Shortest(0, b, tp.DelayWeight(), nil, nil); !ok {
				return fmt.Errorf("flows.pairs: random pairs need a connected topology; no path between %q and %q", tp.Nodes[0], tp.Nodes[b])
			}
		}
	}
	return nil
}
