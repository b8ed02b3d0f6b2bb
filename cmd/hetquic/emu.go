package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/workpool"
	"github.com/hetquic/hetquic/scenario"
)

func init() {
	register(command{
		name:    "emu",
		summary: "userspace multi-path link emulator: relay, set, outage, stats, gentrace, measure",
		run:     runEmu,
	})
}

var emuSubcommands = []subcommand{
	{"relay", "run the no-root UDP relay for a scenario", emuRelay},
	{"set", "change a path's parameters of a running emulator", emuSet},
	{"outage", "take a path of a running emulator down for a while", emuOutage},
	{"stats", "print a running emulator's counters", emuStats},
	{"gentrace", "generate a mahimahi rate trace from a seeded Markov model", emuGentrace},
	{"measure", "measure the emulator's fidelity and speed over loopback", emuMeasure},
}

func runEmu(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "emu", "The userspace multi-path link emulator (emu/README.md).", emuSubcommands, args)
}

func emuRelay(ctx context.Context, args []string) error {
	fs := newFlagSet("emu relay", `emu relay --scenario FILE --listen ADDR --server ADDR --paths IP,IP,... [flags]
       hetquic emu relay --delay D [--rate R] [--loss L] [--queue N] [--jitter D] [--link [NAME:]KEY=V,…]… --server ADDR --paths IP,… [flags]`, `
Relay UDP between a multi-homed client on loopback and a server, impairing
each path as the scenario says. The client binds one address per path (the
--paths list, in the scenario's path order) and sends to --listen; the relay
forwards to --server from one socket per client address, so the server sees
a different client address per path. Runs until Ctrl-C.

Without a scenario file, the link flags describe every path (both
directions, like mm-delay): --delay 20ms --rate 10mbit --loss 1%; --link
gives one path each (its keys over the flags), e.g.
  --link wifi:delay=10ms,rate=50mbit --link lte:delay=40ms,rate=10mbit,loss=0.5%`)
	scen := fs.String("scenario", "", "scenario file (YAML); or describe the links with the flags below")
	var lf linkFlags
	fs.StringVar(&lf.delay, "delay", "", "one-way delay of every path, each direction (20ms; a bare number is ms)")
	fs.StringVar(&lf.jitter, "jitter", "", "standard deviation of the extra delay (2ms)")
	fs.StringVar(&lf.rate, "rate", "", "bottleneck rate of every path, each direction (10mbit, 500kbit, 1gbit; a bare number is Mbit/s)")
	fs.StringVar(&lf.loss, "loss", "", "random loss of every path, each direction (1% or 0.01)")
	fs.StringVar(&lf.queue, "queue", "", "drop-tail queue in front of the rate limiter, packets")
	var links stringList
	fs.Var(&links, "link", "one path: [NAME:]delay=D,rate=R,loss=L,queue=N,jitter=D over the flags above (repeatable, in --paths order)")
	listen := fs.String("listen", "127.0.0.1:4433", "address the client sends to")
	server := fs.String("server", "", "address of the real server")
	paths := fs.String("paths", "", "client source IPs, one per scenario path, comma-separated (e.g. 127.0.0.11,127.0.0.12)")
	control := fs.String("control", "", "serve the control API here: 127.0.0.1:PORT or unix:PATH (empty: none)")
	logFile := fs.String("log", "", "write a per-packet CSV event log to this file")
	seed := fs.Uint64("seed", 1, "seed of the links' random sources")
	noEvents := fs.Bool("no-events", false, "do not run the scenario's timed events (apply them through the control API)")
	idle := fs.Duration("idle-timeout", udprelay.DefaultIdleTimeout, "forget a client address after this long without traffic")
	maxPkt := fs.Int("max-packet", emu.DefaultMaxPacket, "largest UDP payload forwarded, bytes (larger: dropped as malformed)")
	noOffload := fs.Bool("no-offload", false, "move one datagram per message even where the kernel offers UDP GSO/GRO")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *server == "" || *paths == "" {
		return badInput(errors.New("emu relay: --server and --paths are required"))
	}
	pa, err := parseAddrs(*paths)
	if err != nil {
		return badInput(err)
	}
	s, err := relayScenario(*scen, lf, links, len(pa))
	if err != nil {
		return badInput(err)
	}
	la, err := netip.ParseAddrPort(*listen)
	if err != nil {
		return badInput(fmt.Errorf("--listen: %v", err))
	}
	sa, err := netip.ParseAddrPort(*server)
	if err != nil {
		return badInput(fmt.Errorf("--server: %v", err))
	}
	if len(pa) != len(s.Paths) {
		return badInput(fmt.Errorf("--paths: %d addresses for the scenario's %d paths", len(pa), len(s.Paths)))
	}
	var csv *emu.CSVLog
	var logCloser io.Closer
	if *logFile != "" {
		f, err := os.Create(*logFile)
		if err != nil {
			return badInput(fmt.Errorf("--log: %v", err))
		}
		csv, logCloser = emu.NewCSVLog(f), f
	}
	cfg := udprelay.Config{Scenario: s, Listen: la, Server: sa, Paths: pa, Seed: *seed,
		NoEvents: *noEvents, IdleTimeout: *idle, MaxPacket: *maxPkt, NoOffload: *noOffload}
	if csv != nil {
		cfg.Log = csv
	}
	r, err := udprelay.New(cfg)
	if err != nil {
		return badInput(err)
	}
	if *control != "" {
		ln, err := emu.ListenControl(*control)
		if err != nil {
			r.Close()
			return badInput(fmt.Errorf("--control: %v", err))
		}
		go emu.ServeControl(ctx, ln, emu.ControlHandler(r.Engine(), func() any { return r.Stats() }))
		fmt.Fprintf(os.Stderr, "hetquic emu: control API on %s\n", *control)
	}
	fmt.Fprintf(os.Stderr, "hetquic emu: relaying %s on %s → %s, paths", s.Name, r.Addr(), sa)
	for i, p := range s.Paths {
		fmt.Fprintf(os.Stderr, " %s=%s", p.Name, pa[i])
	}
	fmt.Fprintln(os.Stderr)
	err = r.Run(ctx)
	if csv != nil {
		if ferr := csv.Flush(); ferr != nil && err == nil {
			err = fmt.Errorf("--log: %w", ferr)
		}
		logCloser.Close()
	}
	return err
}

// parseAddrs is --paths: comma-separated client source IPs.
func parseAddrs(list string) ([]netip.Addr, error) {
	var pa []netip.Addr
	for _, f := range strings.Split(list, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(f))
		if err != nil {
			return nil, fmt.Errorf("--paths: %v", err)
		}
		pa = append(pa, a)
	}
	return pa, nil
}

// relayScenario is the scenario file, or the one the link flags describe
// for n paths; not both, and not neither.
func relayScenario(file string, lf linkFlags, links []string, n int) (*scenario.Scenario, error) {
	flags := lf.spec() != "" || len(links) > 0
	switch {
	case file != "" && flags:
		return nil, errors.New("emu relay: give --scenario or the link flags (--delay, --rate, --loss, --queue, --jitter, --link), not both")
	case file != "":
		return loadScenarioFile(file)
	case !flags:
		return nil, errors.New("emu relay: give --scenario FILE or describe the links (--delay 20ms --rate 10mbit, or --link per path)")
	}
	return inlineScenario(lf, links, n)
}

func emuSet(ctx context.Context, args []string) error {
	fs := newFlagSet("emu set", "emu set --control ADDR --path NAME PATCH", `
Change a path of a running emulator from now on. PATCH is YAML with keys up,
down or both holding any link fields of the scenario format, e.g.
  hetquic emu set --control 127.0.0.1:7000 --path lte '{down: {delay_ms: 60}}'`)
	control := fs.String("control", "", "the emulator's control address (as given to emu relay --control)")
	path := fs.String("path", "", "path name")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *control == "" || *path == "" || fs.NArg() != 1 {
		return badInput(errors.New("emu set: needs --control, --path and one PATCH argument"))
	}
	if _, err := scenario.ParsePatch(fs.Arg(0)); err != nil {
		return badInput(err)
	}
	c := &emu.ControlClient{Addr: *control}
	if err := c.Apply(ctx, *path, fs.Arg(0)); err != nil {
		return badInput(err)
	}
	return nil
}

func emuOutage(ctx context.Context, args []string) error {
	fs := newFlagSet("emu outage", "emu outage --control ADDR --path NAME --seconds S", `
Take a path of a running emulator down (both directions) for S seconds from now.`)
	control := fs.String("control", "", "the emulator's control address")
	path := fs.String("path", "", "path name")
	secs := fs.Float64("seconds", 0, "outage length, seconds")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *control == "" || *path == "" || !(*secs > 0) {
		return badInput(errors.New("emu outage: needs --control, --path and --seconds > 0"))
	}
	c := &emu.ControlClient{Addr: *control}
	if err := c.Outage(ctx, *path, time.Duration(*secs*float64(time.Second))); err != nil {
		return badInput(err)
	}
	return nil
}

func emuStats(ctx context.Context, args []string) error {
	fs := newFlagSet("emu stats", "emu stats --control ADDR [--json]", `
Print a running emulator's counters per path and direction: packets and bytes
in and out, drops by cause, queue and delay.`)
	control := fs.String("control", "", "the emulator's control address")
	asJSON := fs.Bool("json", false, "print the raw JSON")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *control == "" {
		return badInput(errors.New("emu stats: needs --control"))
	}
	c := &emu.ControlClient{Addr: *control}
	st, err := c.Stats(ctx)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(st)
	}
	fmt.Printf("t = %.1f s\n", st.TimeMs/1e3)
	w := tabwriter.NewWriter(os.Stdout, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "path\tdir\tpkts_in\tpkts_out\tbytes_out\tloss\tqueue\toutage\tmalformed\tqueued\tqdelay_mean_ms\tdelay_mean_ms\tdelay_max_ms\t")
	for _, p := range st.Paths {
		for _, d := range []struct {
			name string
			s    emu.LinkStats
		}{{"up", p.Up}, {"down", p.Down}} {
			s := d.s
			fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%.3f\t\n", p.Name, d.name,
				s.PacketsIn, s.PacketsOut, s.BytesOut, s.Dropped[emu.CauseLoss], s.Dropped[emu.CauseQueue],
				s.Dropped[emu.CauseOutage], s.Dropped[emu.CauseMalformed], s.QueuedPackets,
				float64(s.QueueDelay.Mean())/1e6, float64(s.Delay.Mean())/1e6, float64(s.Delay.Max)/1e6)
		}
	}
	w.Flush()
	if len(st.FrontEnd) > 0 {
		fmt.Printf("front end: %s\n", strings.TrimSpace(string(st.FrontEnd)))
	}
	return nil
}

func emuGentrace(ctx context.Context, args []string) error {
	fs := newFlagSet("emu gentrace", "emu gentrace --model lte|wifi --seed N --duration-s D > FILE", `
Write a mahimahi rate trace (one 1500-byte delivery opportunity per line, ms)
drawn from a seeded Markov-modulated capacity model; the same flags give the
same file. The models are described in emu/README.md.`)
	model := fs.String("model", "", "trace model: "+strings.Join(emu.TraceModelNames(), " or "))
	seed := fs.Uint64("seed", 1, "random seed")
	durS := fs.Float64("duration-s", 60, "trace length (its period), seconds")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	m, ok := emu.TraceModels[*model]
	if !ok {
		return badInput(fmt.Errorf("--model: %q is not one of %s", *model, strings.Join(emu.TraceModelNames(), ", ")))
	}
	if !(*durS >= 1 && *durS <= 86400) {
		return badInput(fmt.Errorf("--duration-s: %v must be between 1 and 86400", *durS))
	}
	ms, err := m.Generate(*seed, time.Duration(*durS*float64(time.Second)))
	if err != nil {
		return badInput(err)
	}
	if err := emu.WriteTrace(os.Stdout, ms); err != nil {
		return err
	}
	t := scenario.RateTrace{Ms: ms}
	fmt.Fprintf(os.Stderr, "hetquic emu gentrace: %s seed %d: %d opportunities over %.0f s, mean %.2f Mbit/s\n",
		*model, *seed, len(ms), *durS, t.MeanMbps())
	return nil
}

func emuMeasure(ctx context.Context, args []string) error {
	fs := newFlagSet("emu measure", "emu measure --mode delay|rate|loss|forward[,…] [flags]", `
Push real UDP through an in-process relay on loopback and compare what comes
out with what was configured. Prints one JSON object per measurement, or
with --md one table per mode, each row beside its goal. --mode takes one
mode or several, comma-separated, measured in that order.
  delay:   one-way delay error at --pps for each --delay-ms
  rate:    delivered rate for each --rate-mbps (1.25x offered load)
  loss:    loss count vs the 99 % binomial interval for each --loss
  forward: packets/s with no impairment, up and down (after a baseline:
           the same load generator and sink without the relay); --gso
           makes the load generator send with UDP GSO and the sink read
           with GRO, in the baseline too`)
	modes := fs.String("mode", "", "delay, rate, loss or forward, or several comma-separated")
	delays := fs.String("delay-ms", "1,20,100", "delays to measure (ms), comma-separated")
	var m measureFlags
	fs.IntVar(&m.pps, "pps", 10000, "packets per second (delay, loss)")
	rates := fs.String("rate-mbps", "1,10,50,100,200", "rates to measure (Mbit/s), comma-separated")
	losses := fs.String("loss", "0.001,0.01,0.1", "loss probabilities to measure, comma-separated")
	fs.IntVar(&m.count, "count", 100000, "packets per loss measurement")
	fs.IntVar(&m.size, "size", 1200, "packet size, bytes (delay, rate, forward)")
	fs.DurationVar(&m.dur, "duration", 5*time.Second, "length of each delay, rate and forward measurement")
	fs.Uint64Var(&m.seed, "seed", 1, "seed (loss)")
	fs.BoolVar(&m.load.GSO, "gso", false, "forward: load generator sends with UDP GSO, sink reads with GRO")
	fs.BoolVar(&m.load.NoOffload, "no-offload", false, "forward: the relay does not use UDP GSO/GRO")
	md := fs.Bool("md", false, "print a Markdown table per mode (goal met per row) instead of JSON lines")
	quiet := fs.Bool("quiet", false, "no progress output on stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if m.pps <= 0 || m.size < 8 || m.size > emu.DefaultMaxPacket || m.count <= 0 {
		return badInput(errors.New("emu measure: --pps and --count must be > 0, --size 8..1500"))
	}
	for _, l := range []struct {
		flag, s string
		into    *[]float64
	}{{"delay-ms", *delays, &m.delays}, {"rate-mbps", *rates, &m.rates}, {"loss", *losses, &m.losses}} {
		v, err := parseNonNegatives(l.flag, l.s)
		if err != nil {
			return badInput(err)
		}
		*l.into = v
	}
	list := splitList(*modes)
	for _, mode := range list {
		if !slices.Contains([]string{"delay", "rate", "loss", "forward"}, mode) {
			return badInput(fmt.Errorf("--mode: %q is not delay, rate, loss or forward", mode))
		}
	}
	if len(list) == 0 {
		return badInput(errors.New("--mode: give delay, rate, loss or forward"))
	}
	opt := workpool.Options{Workers: 1, Name: "emu measure"} // one at a time: measurements share the CPUs
	if !*quiet {
		opt.Progress = os.Stderr
	}
	byMode, err := m.measureAll(ctx, list, opt)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(os.Stdout)
	for i, mode := range list {
		rs := byMode[i]
		if !*md {
			for _, r := range rs {
				if err := enc.Encode(r); err != nil {
					return err
				}
			}
			continue
		}
		if i > 0 {
			fmt.Println()
		}
		if err := results.WriteTables(os.Stdout, []results.Table{udprelay.MeasureTable(mode, rs)}); err != nil {
			return err
		}
	}
	return nil
}

// measureFlags are emu measure's settings, shared by its modes.
type measureFlags struct {
	pps, count, size      int
	dur                   time.Duration
	seed                  uint64
	load                  udprelay.Load
	delays, rates, losses []float64
}

// measurement is one measurement of a mode (the mode's index in the list).
type measurement struct {
	mode int
	run  func(ctx context.Context) (udprelay.MeasureResult, error)
}

// measureAll runs every measurement of the modes in list, one at a time on
// the runner (its progress, Ctrl-C between and inside measurements), and
// returns each mode's results in order.
func (m measureFlags) measureAll(ctx context.Context, list []string, opt workpool.Options) ([][]udprelay.MeasureResult, error) {
	var all []measurement
	for i, mode := range list {
		for _, run := range m.measurements(mode) {
			all = append(all, measurement{i, run})
		}
	}
	got := make([]udprelay.MeasureResult, len(all))
	err := workpool.Run(ctx, len(all), opt, func(ctx context.Context, j int) error {
		var err error
		got[j], err = all[j].run(ctx)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([][]udprelay.MeasureResult, len(list))
	for j, ms := range all {
		out[ms.mode] = append(out[ms.mode], got[j])
	}
	return out, nil
}

// measurements are one mode's measurements, in order.
func (m measureFlags) measurements(mode string) []func(ctx context.Context) (udprelay.MeasureResult, error) {
	var out []func(ctx context.Context) (udprelay.MeasureResult, error)
	switch mode {
	case "delay":
		for _, v := range m.delays {
			out = append(out, func(ctx context.Context) (udprelay.MeasureResult, error) {
				return udprelay.MeasureDelay(ctx, v, m.pps, m.size, m.dur)
			})
		}
	case "rate":
		for _, v := range m.rates {
			out = append(out, func(ctx context.Context) (udprelay.MeasureResult, error) {
				return udprelay.MeasureRate(ctx, v, m.size, m.dur)
			})
		}
	case "loss":
		for _, v := range m.losses {
			out = append(out, func(ctx context.Context) (udprelay.MeasureResult, error) {
				return udprelay.MeasureLoss(ctx, v, m.pps, m.count, m.seed)
			})
		}
	default: // forward: a baseline, then up and down
		out = append(out, func(ctx context.Context) (udprelay.MeasureResult, error) {
			return udprelay.MeasureBaseline(ctx, m.size, m.dur, m.load)
		})
		for _, d := range []emu.Dir{emu.Up, emu.Down} {
			out = append(out, func(ctx context.Context) (udprelay.MeasureResult, error) {
				return udprelay.MeasureForward(ctx, d, m.size, m.dur, m.load)
			})
		}
	}
	return out
}

// parseNonNegatives reads a comma-separated list of numbers ≥ 0 (flag names
// the flag in the error).
func parseNonNegatives(flag, s string) ([]float64, error) {
	var out []float64
	for _, f := range strings.Split(s, ",") {
		var v float64
		if _, err := fmt.Sscan(strings.TrimSpace(f), &v); err != nil || v < 0 {
			return nil, fmt.Errorf("--%s: %q is not a number ≥ 0", flag, f)
		}
		out = append(out, v)
	}
	return out, nil
}
