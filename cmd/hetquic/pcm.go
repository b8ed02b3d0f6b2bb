package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	progressbar "github.com/hetquic/hetquic/internal/progress"
	"github.com/hetquic/hetquic/internal/results"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/pathsel"
	"github.com/hetquic/hetquic/pcm"
	"github.com/hetquic/hetquic/pcm/measure"
)

func init() {
	register(command{name: "pcm", summary: "PCM-QUIC client: one QUIC connection migrating per request (get, bench, switchcost, failover)", run: runPCM})
}

const pcmHelp = `PCM-QUIC keeps one HTTP/3 connection to an unmodified server and moves it,
request by request, to the local path a strategy chooses, measuring each
request's task completion time (stream created → FIN received).

Paths (--paths) are interface names or local addresses, comma-separated;
the default is every non-loopback address of the host, as in the paper.`

// pcmFlags are the flags get and bench share.
type pcmFlags struct {
	paths, strategy, ca, serverName string
	qlogDir                         string
	insecure, perByte, verbose      bool
	rebind                          bool
	seed                            uint64
}

func (f *pcmFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.paths, "paths", "", "local paths: interface names or addresses, comma-separated (default: all non-loopback addresses)")
	fs.StringVar(&f.strategy, "strategy", "hetquic", fmt.Sprintf("path selection strategy, one of %v", pathsel.Strategies[:len(pathsel.Strategies)-1]))
	fs.StringVar(&f.ca, "ca", "", "PEM certificate to trust (e.g. from hetquic serve --write-ca)")
	fs.BoolVar(&f.insecure, "insecure", false, "do not verify the server's certificate")
	fs.StringVar(&f.serverName, "server-name", "", "TLS server name (default: the URL's host)")
	fs.BoolVar(&f.perByte, "per-byte", false, "learn from TCT per byte (PCM Eq. 4) instead of TCT")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the strategy's random choices")
	fs.BoolVar(&f.verbose, "v", false, "log migration warnings to stderr")
	fs.StringVar(&f.qlogDir, "qlog-dir", "", "write the connection's qlog (quic-go's JSON-SEQ) to a file in DIR")
	fs.BoolVar(&f.rebind, "rebind", false, "keep the connection ID and change only the source address, as the paper (gives up RFC 9000 §9.5 unlinkability; README)")
}

func runPCM(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "pcm", pcmHelp, []subcommand{
		{"get", "fetch a URL, a line per request", pcmGet},
		{"bench", "fetch a URL many times, per-path statistics", pcmBench},
		{"switchcost", "measure what a switch costs (emulated paths)", pcmSwitchCost},
		{"failover", "measure the pause when the active path is cut", pcmFailover},
		{"cuts", "steady GETs while paths are cut: Client, Transport, http3.Transport; CPU per GET", pcmCuts},
	}, args)
}

func pcmGet(ctx context.Context, args []string) error {
	fs := newFlagSet("pcm get", "pcm get URL [-n N] [-o FILE] [flags]", pcmHelp)
	var f pcmFlags
	f.register(fs)
	n := fs.Int("n", 1, "number of requests")
	out := fs.String("o", "", "write the (last) body to FILE, - for stdout (default: discard)")
	target, err := parseWithOperand(fs, args, "URL")
	if err != nil {
		return err
	}
	if *n < 1 {
		return badInput(fmt.Errorf("pcm get: -n %d must be ≥ 1", *n))
	}
	c, path, err := f.dial(ctx, target)
	if err != nil {
		return err
	}
	defer c.Close()
	for i := range *n {
		w := io.Discard
		if i == *n-1 && *out != "" {
			if *out == "-" {
				w = os.Stdout
			} else {
				file, err := os.Create(*out)
				if err != nil {
					return err
				}
				defer file.Close()
				w = file
			}
		}
		res, err := c.Get(ctx, path, w)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%s stream %d status %d %d bytes tct %.3f ms%s\n", res.PathName, res.StreamID, res.Status,
			res.TotalBytes, stats.Ms(res.TCT()), notes(res))
	}
	return nil
}

func pcmBench(ctx context.Context, args []string) error {
	fs := newFlagSet("pcm bench", "pcm bench URL [--rounds N] [--csv FILE] [flags]", pcmHelp)
	var f pcmFlags
	f.register(fs)
	rounds := fs.Int("rounds", 100, "requests to make")
	csvFile := fs.String("csv", "", "write one line per request to FILE")
	target, err := parseWithOperand(fs, args, "URL")
	if err != nil {
		return err
	}
	if *rounds < 1 {
		return badInput(fmt.Errorf("pcm bench: --rounds %d must be ≥ 1", *rounds))
	}
	c, path, err := f.dial(ctx, target)
	if err != nil {
		return err
	}
	defer c.Close()
	var csv io.Writer = io.Discard
	if *csvFile != "" {
		file, err := os.Create(*csvFile)
		if err != nil {
			return err
		}
		defer file.Close()
		csv = file
	}
	fmt.Fprintln(csv, "round,path,stream_id,status,bytes,tct_ms,switched,failovers")
	perPath := map[string][]float64{}
	var all []float64
	switches := 0
	bar := progressbar.New(os.Stderr, "pcm bench", *rounds, progressbar.Options{TTY: progressbar.IsTerminal(os.Stderr)})
	defer bar.Finish()
	for i := range *rounds {
		res, err := c.Get(ctx, path, nil)
		if err != nil {
			return fmt.Errorf("round %d: %w", i, err)
		}
		bar.Step(i+1, "")
		t := stats.Ms(res.TCT())
		perPath[res.PathName] = append(perPath[res.PathName], t)
		all = append(all, t)
		if res.Switched {
			switches++
		}
		fmt.Fprintf(csv, "%d,%s,%d,%d,%d,%.4f,%t,%d\n", i, res.PathName, res.StreamID, res.Status, res.TotalBytes, t, res.Switched, res.Failovers)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "path\trequests\tmean ms\tp50 ms\tp95 ms\t")
	for _, lp := range c.Paths() {
		if xs := perPath[lp.Name]; len(xs) > 0 {
			q := stats.Quantiles(xs, 0.5, 0.95)
			fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%.3f\t\n", lp.Name, len(xs), stats.Mean(xs), q[0], q[1])
		}
	}
	qa := stats.Quantiles(all, 0.5, 0.95)
	fmt.Fprintf(tw, "all\t%d\t%.3f\t%.3f\t%.3f\t\n", len(all), stats.Mean(all), qa[0], qa[1])
	tw.Flush()
	fmt.Printf("%d switches in %d requests (strategy %s)\n", switches, *rounds, f.strategy)
	return nil
}

// dial parses the URL and flags and connects; it returns the request path.
func (f *pcmFlags) dial(ctx context.Context, target string) (*pcm.Client, string, error) {
	u, err := url.Parse(target)
	if err != nil || u.Scheme != "https" || u.Host == "" {
		return nil, "", badInput(fmt.Errorf("pcm: URL %q: want https://host:port/path", target))
	}
	server := u.Host
	if u.Port() == "" {
		server = net.JoinHostPort(u.Hostname(), "443")
	}
	paths, err := localPaths(f.paths)
	if err != nil {
		return nil, "", badInput(err)
	}
	tlsConf := &tls.Config{InsecureSkipVerify: f.insecure, ServerName: f.serverName}
	if tlsConf.ServerName == "" {
		tlsConf.ServerName = u.Hostname()
	}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, "", badInput(fmt.Errorf("pcm: --ca: %w", err))
		}
		tlsConf.RootCAs = x509.NewCertPool()
		if !tlsConf.RootCAs.AppendCertsFromPEM(pem) {
			return nil, "", badInput(fmt.Errorf("pcm: --ca %s: no PEM certificate", f.ca))
		}
	}
	sel, err := pathsel.New(pathsel.Config{Strategy: pathsel.Strategy(f.strategy)}, rand.New(rand.NewPCG(f.seed, 0)))
	if err != nil {
		return nil, "", badInput(fmt.Errorf("pcm: --strategy: %w", err))
	}
	for i := range paths {
		sel.AddPath(pathsel.PathID(i))
	}
	cfg := pcm.Config{Server: server, Paths: paths, TLS: tlsConf, Selector: sel, PerByte: f.perByte, Rebind: f.rebind,
		QUIC: qlogConfig(f.qlogDir)}
	if f.verbose {
		cfg.Logf = log.New(os.Stderr, "", log.Ltime|log.Lmicroseconds).Printf
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	c, err := pcm.Dial(dctx, cfg)
	if err != nil {
		return nil, "", err
	}
	path := u.RequestURI()
	return c, path, nil
}

// localPaths resolves --paths: interface names or addresses; empty means
// every non-loopback address of the host (pcm.DiscoverPaths).
func localPaths(spec string) ([]pcm.LocalPath, error) { return pcm.ParsePaths(spec) }

func notes(r pcm.Result) string {
	var s string
	if r.Switched {
		s += " (switched)"
	}
	if !r.Followed() {
		s += fmt.Sprintf(" (came back on path %d: the server did not follow; no sample)", r.Carrier)
	}
	if r.Failovers > 0 {
		s += fmt.Sprintf(" (%d failovers)", r.Failovers)
	}
	return s
}

func pcmSwitchCost(ctx context.Context, args []string) error {
	fs := newFlagSet("pcm switchcost", "pcm switchcost [--rtts 10,50,100] [--sizes 5120,102400,1048576] [--pairs 20] [--rebind]",
		"Measures, through hetquic's emulator on loopback, the completion time of the first\nrequest after a switch and of a request on a path the connection stayed on.")
	rtts := fs.String("rtts", "10,50,100", "round-trip times in ms, comma-separated")
	sizes := fs.String("sizes", "5120,102400,1048576", "object sizes in bytes, comma-separated")
	pairs := fs.Int("pairs", 20, "switches measured per cell")
	rebind := fs.Bool("rebind", false, "measure the rebind mode instead of the path API")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rs, err := parseList(*rtts, strconv.ParseFloat)
	if err != nil || *pairs < 1 {
		return badInput(fmt.Errorf("pcm switchcost: --rtts %q / --pairs %d: %v", *rtts, *pairs, err))
	}
	ss, err := parseList(*sizes, func(s string, _ int) (int, error) { return strconv.Atoi(s) })
	if err != nil {
		return badInput(fmt.Errorf("pcm switchcost: --sizes %q: %w", *sizes, err))
	}
	cells, err := measure.MeasureSwitchCost(ctx, rs, ss, *pairs, *rebind)
	if err != nil {
		return err
	}
	return results.WriteTables(os.Stdout, []results.Table{measure.SwitchCostTable(cells)})
}

// parseList parses a comma-separated list of positive numbers.
func parseList[T int | float64](s string, parse func(string, int) (T, error)) ([]T, error) {
	var out []T
	for _, f := range strings.Split(s, ",") {
		v, err := parse(strings.TrimSpace(f), 64)
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, fmt.Errorf("%v is not positive", v)
		}
		out = append(out, v)
	}
	return out, nil
}

func pcmFailover(ctx context.Context, args []string) error {
	fs := newFlagSet("pcm failover", "pcm failover [--rtts 20,100] [--trials 10]",
		"Downloads 8 MiB over two identical emulated paths, cuts the active one after 1 MiB,\nand reports the pause until bytes flow over the other (detection + switch + re-request).")
	rtts := fs.String("rtts", "20,100", "round-trip times in ms, comma-separated")
	trials := fs.Int("trials", 10, "cuts per RTT")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rs, err := parseList(*rtts, strconv.ParseFloat)
	if err != nil || *trials < 1 {
		return badInput(fmt.Errorf("pcm failover: --rtts %q / --trials %d: %v", *rtts, *trials, err))
	}
	t := results.Table{Header: []string{"RTT ms", "trials", "pause ms: median", "max", "all bodies intact"}}
	for _, rtt := range rs {
		fs, err := measure.MeasureFailover(ctx, rtt, *trials)
		if err != nil {
			return err
		}
		var pauses []float64
		intact := true
		for _, f := range fs {
			pauses = append(pauses, f.ResumeMs)
			intact = intact && f.Intact
		}
		t.Rows = append(t.Rows, []string{fmt.Sprintf("%g", rtt), fmt.Sprint(len(fs)), fmt.Sprintf("%.0f", stats.Median(pauses)),
			fmt.Sprintf("%.0f", slices.Max(pauses)), fmt.Sprint(intact)})
	}
	return results.WriteTables(os.Stdout, []results.Table{t})
}

func pcmCuts(ctx context.Context, args []string) error {
	fs := newFlagSet("pcm cuts", "pcm cuts [--rtts 20,30,40] [--setups 3] [--seed 1] [--cpu-gets 500] [--cpu-rounds 7]",
		"Sends a 5 KB GET every 10 ms (5 s timeout) over three emulated paths (100 Mbit/s) and black-holes\n"+
			"paths through the emulator's control API: the active one, the first configured one, two in a row;\n"+
			"per cut and API, what the requests saw; then the same cuts, Client and Transport, on --setups\n"+
			"three-path setups drawn from --seed (RTTs log-uniform 10–150 ms). Then the CPU per small GET, pcm.Transport (three paths)\n"+
			"against quic-go's http3.Transport, over loopback; and what the side probes cost an idle client.")
	rtts := fs.String("rtts", "20,30,40", "the three paths' round-trip times in ms, comma-separated")
	setups := fs.Int("setups", 3, "generated three-path setups (0: none)")
	seed := fs.Uint64("seed", 1, "seed of the generated setups")
	gets := fs.Int("cpu-gets", 500, "GETs per transport per CPU round")
	rounds := fs.Int("cpu-rounds", 7, "CPU rounds (the first is a warm-up)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	rs, err := parseList(*rtts, strconv.ParseFloat)
	switch {
	case err != nil || len(rs) != 3:
		return badInput(fmt.Errorf("pcm cuts: --rtts %q: want three round-trip times in ms, comma-separated", *rtts))
	case *setups < 0:
		return badInput(fmt.Errorf("pcm cuts: --setups %d: want ≥ 0", *setups))
	case *gets < 1:
		return badInput(fmt.Errorf("pcm cuts: --cpu-gets %d: want ≥ 1", *gets))
	case *rounds < 2:
		return badInput(fmt.Errorf("pcm cuts: --cpu-rounds %d: want ≥ 2 (the first is a warm-up)", *rounds))
	}
	rows, err := measure.MeasureCuts(ctx, rs, measure.DefaultCutLoad(), []string{measure.APIClient, measure.APITransport, measure.APIBaseline})
	if err != nil {
		return err
	}
	t := results.Table{Header: []string{"cut", "API", "sent", "failed", "longest ms", "succeeding again after ms", "on the best live path"}}
	for _, r := range rows {
		bestShare := "—"
		if !math.IsNaN(r.BestShare) {
			bestShare = fmt.Sprintf("%.0f %%", 100*r.BestShare)
		}
		t.Rows = append(t.Rows, []string{r.Cut, r.API, fmt.Sprint(r.Sent), fmt.Sprint(r.Failed), fmt.Sprintf("%.0f", r.LongestMs),
			fmt.Sprintf("%.0f", r.RecoverMs), bestShare})
	}
	gt, err := generatedCuts(ctx, *seed, *setups)
	if err != nil {
		return err
	}
	cpu, err := measure.MeasureCPU(ctx, *gets, *rounds, 5120)
	if err != nil {
		return err
	}
	ct := results.Table{Header: []string{"CPU per 5 KB GET", "pcm.Transport, 3 paths µs", "http3.Transport µs", "ratio (median of rounds)"}}
	ct.Rows = append(ct.Rows, []string{fmt.Sprintf("%d GETs × %d rounds", cpu.Gets, cpu.Rounds), fmt.Sprintf("%.0f", cpu.PCMus),
		fmt.Sprintf("%.0f", cpu.BaselineUs), fmt.Sprintf("%.2f", cpu.Ratio)})
	probe, err := measure.MeasureProbeCost(ctx, rs, 20*time.Second)
	if err != nil {
		return err
	}
	pt := results.Table{Header: []string{"side probes (defaults), idle client, 3 paths", "bytes/s both ways, handshakes included"}}
	pt.Rows = append(pt.Rows, []string{fmt.Sprintf("%.0f s", probe.Seconds), fmt.Sprintf("%.0f", probe.BytesPerSecond)})
	tables := []results.Table{t}
	if *setups > 0 {
		tables = append(tables, gt)
	}
	return results.WriteTables(os.Stdout, append(tables, ct, pt))
}

// generatedCuts runs the cuts, Client and Transport, on n setups drawn
// from seed: the share on the best live path on setups no test fixes.
func generatedCuts(ctx context.Context, seed uint64, n int) (results.Table, error) {
	t := results.Table{Header: []string{"setup (RTTs ms)", "cut", "API", "failed of sent", "longest ms", "on the best live path"}}
	for _, rs := range measure.GenerateCutSetups(seed, n) {
		rows, err := measure.MeasureCuts(ctx, rs, measure.DefaultCutLoad(), []string{measure.APIClient, measure.APITransport})
		if err != nil {
			return t, err
		}
		for _, r := range rows {
			t.Rows = append(t.Rows, []string{fmt.Sprintf("seed %d: %g / %g / %g", seed, rs[0], rs[1], rs[2]), r.Cut, r.API,
				fmt.Sprintf("%d of %d", r.Failed, r.Sent), fmt.Sprintf("%.0f", r.LongestMs), fmt.Sprintf("%.0f %%", 100*r.BestShare)})
		}
	}
	return t, nil
}
