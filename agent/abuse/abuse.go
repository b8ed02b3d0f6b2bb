// Package abuse is the agent's load-and-abuse test: a real
// ct-server process under its default configuration, one misbehaving
// authenticated client beside a well-behaved one, all on loopback. The
// misbehaving client opens more connections than it may, thousands of
// requests it never reads, CONNECT tunnels that download and are never
// read, a flood of prefetch hints, and hundreds of QUIC handshakes that
// never say hello. Meanwhile the good client downloads through ct-client
// and checks every byte. Run reports ct-server's peak RSS, the good
// client's latency and the bytes it checked, and whether they stayed within
// the stated bounds.
package abuse

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hetquic/hetquic/agent/internal/serverproc"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/ops"
	"github.com/hetquic/hetquic/internal/stats"
	"github.com/hetquic/hetquic/origin"
)

// Config sizes a run. Zero fields take the CI size (Default).
type Config struct {
	// Server starts "hetquic agent server" with args (the harness adds
	// everything after "agent server"): a real process, so that its RSS is
	// ct-server's alone.
	Server func(args ...string) *exec.Cmd
	// Abuse lasts this long after the misbehaving client has started.
	Duration time.Duration
	// What the misbehaving client does.
	Conns      int // connections with a good hello (more than max_conns, wire.DefaultMaxConns)
	Streams    int // requests never read, over all its connections
	Tunnels    int // CONNECT tunnels that download BigBytes and are never read
	Hints      int // prefetch hints
	Handshakes int // QUIC handshakes that never say hello
	Sources    int // loopback source addresses the handshakes come from
	BigBytes   int // what each unread request and tunnel asks for
	Cycles     int // short CONNECT tunnels opened, read whole and closed, one after another
	CycleBytes int // what each short tunnel downloads
	// Only, if "tunnels", "streams" or "cycles", leaves out every other kind of
	// abuse, so that ct-server's RSS growth per accepted one is its cost.
	Only string
	// What the good client does: GoodWorkers loops of GETs of GoodBytes.
	GoodWorkers int
	GoodBytes   int
	// Bounds the run must keep.
	MaxRSSBytes int64
	MaxP99      time.Duration
	Log         io.Writer // progress lines (nil: none)
}

// Default is the CI size: about 25 s on two shared cores.
var Default = Config{
	Duration: 10 * time.Second, Conns: 24, Streams: 4000, Tunnels: 300, Hints: 2000,
	Handshakes: 600, Sources: 40, BigBytes: 5_000_000, CycleBytes: 1_000_000, GoodWorkers: 2, GoodBytes: 200_000,
	MaxRSSBytes: 400 << 20, MaxP99: 2 * time.Second,
}

// defaultCycles is Cycles with Only "cycles": the other kinds of abuse
// leave the misbehaving client no tunnel slot to cycle, so cycling runs
// alone.
const defaultCycles = 400

// Full is the size: four times the streams, tunnels and hints.
var Full = Config{
	Duration: 20 * time.Second, Conns: 32, Streams: 16000, Tunnels: 1200, Hints: 8000,
	Handshakes: 5000, Sources: 100, BigBytes: 5_000_000, CycleBytes: 1_000_000, GoodWorkers: 2, GoodBytes: 200_000,
	MaxRSSBytes: 400 << 20, MaxP99: 2 * time.Second,
}

func (c Config) withDefaults() Config {
	d := Default
	set := func(dst *int, v int) {
		if v != 0 {
			*dst = v
		}
	}
	if c.Duration != 0 {
		d.Duration = c.Duration
	}
	set(&d.Conns, c.Conns)
	set(&d.Streams, c.Streams)
	set(&d.Tunnels, c.Tunnels)
	set(&d.Hints, c.Hints)
	set(&d.Handshakes, c.Handshakes)
	set(&d.Sources, c.Sources)
	set(&d.BigBytes, c.BigBytes)
	set(&d.Cycles, c.Cycles)
	set(&d.CycleBytes, c.CycleBytes)
	set(&d.GoodWorkers, c.GoodWorkers)
	set(&d.GoodBytes, c.GoodBytes)
	if c.MaxRSSBytes != 0 {
		d.MaxRSSBytes = c.MaxRSSBytes
	}
	if c.MaxP99 != 0 {
		d.MaxP99 = c.MaxP99
	}
	d.Server, d.Log, d.Only = c.Server, c.Log, c.Only
	switch c.Only {
	case "tunnels":
		d.Streams, d.Hints, d.Handshakes, d.Cycles = 0, 0, 0, 0
	case "streams":
		d.Tunnels, d.Hints, d.Handshakes, d.Cycles = 0, 0, 0, 0
	case "cycles":
		d.Streams, d.Tunnels, d.Hints, d.Handshakes = 0, 0, 0, 0
		d.Cycles = cmp.Or(c.Cycles, defaultCycles)
	}
	return d
}

// Report is what a run measured.
type Report struct {
	Config  Config
	PeakRSS int64 // ct-server's VmHWM
	// PeakReserved is the most ct_server_reserved_bytes seen (sampled):
	// the memory ct-server counts against memory_budget.
	PeakReserved int64
	BaseRSS      int64         // its RSS before the abuse began
	GoodReqs     int           // good requests completed
	GoodFailed   int           // good requests that failed or had a wrong byte
	BytesOK      int64         // bytes the good client checked, all correct
	P50, P99     time.Duration // good request latency
	Accepted     Counts        // what ct-server admitted of the abuse
	LimitHits    map[string]float64
	Elapsed      time.Duration
	Violations   []string // bounds broken; empty: the run passed
}

// Counts is what the misbehaving client got through.
type Counts struct {
	Conns, Streams, Tunnels, Hints, Handshakes int64
	Cycles                                     int64 // short tunnels completed
}

// Passed reports whether every bound held.
func (r *Report) Passed() bool { return len(r.Violations) == 0 }

// Run runs the test. It fails only when it cannot run; broken bounds are
// in Report.Violations.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg = cfg.withDefaults()
	if cfg.Only != "" && cfg.Only != "tunnels" && cfg.Only != "streams" && cfg.Only != "cycles" {
		return nil, fmt.Errorf("abuse: only %q: want tunnels, streams or cycles", cfg.Only)
	}
	if cfg.Server == nil {
		return nil, errors.New("abuse: no ct-server command")
	}
	logf := func(format string, args ...any) {
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, format+"\n", args...)
		}
	}
	start := time.Now()
	dir, err := os.MkdirTemp("", "hetquic-abuse-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)

	// The app-server: HTTP/1.1 on loopback, in this process.
	upL, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	upSrv := origin.ServeTCP(upL, nil)
	defer upSrv.Close()
	up := upL.Addr().String()

	// ct-server: default limits, two clients.
	sp, err := startServer(cfg, dir, up)
	if err != nil {
		return nil, err
	}
	defer sp.Stop()
	if err := sp.WaitHealthy(ctx); err != nil {
		return nil, fmt.Errorf("abuse: ct-server did not come up: %w", err)
	}
	pid, udpAddr, metricsAddr := sp.Pid(), sp.UDPAddr, sp.MetricsAddr
	rep := &Report{Config: cfg, BaseRSS: serverproc.Status(pid, "VmRSS")}
	logf("abuse: ct-server pid %d on %s, RSS %d MiB before the abuse", pid, udpAddr, rep.BaseRSS>>20)

	// The good client: a real ct-client and an app behind it.
	good, proxy, err := startGood(udpAddr, sp.CA, sp.goodTok)
	if err != nil {
		return nil, err
	}
	defer good.Close()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var load goodLoad
	load.start(rctx, cfg, proxy, up, logf)

	// The misbehaving client.
	var peak int64 // written by sample until sw.Wait
	var sw sync.WaitGroup
	sw.Go(func() { sample(rctx, pid, metricsAddr, &peak, &rep.PeakReserved) })
	bad := &badClient{addr: udpAddr, ca: sp.CA, token: sp.badTok, up: up, cfg: cfg, logf: logf}
	abuseCtx, stopAbuse := context.WithTimeout(rctx, cfg.Duration)
	defer stopAbuse()
	bad.run(abuseCtx)
	<-abuseCtx.Done()
	cancel()
	load.wg.Wait()
	sw.Wait()
	rep.PeakRSS = max(serverproc.Status(pid, "VmHWM"), peak)
	rep.LimitHits = scrapeLimitHits(metricsAddr)
	bad.close()
	rep.Accepted = bad.counts()
	lat := load.lat
	rep.GoodReqs, rep.GoodFailed, rep.BytesOK = len(lat), int(load.failed.Load()), load.bytesOK.Load()
	if len(lat) > 0 {
		q := stats.Quantiles(stats.FloatsMs(lat), 0.50, 0.99)
		rep.P50, rep.P99 = stats.DurationMs(q[0]), stats.DurationMs(q[1])
	}
	rep.Elapsed = time.Since(start)
	rep.check(cfg)
	return rep, nil
}

// serverProc is the ct-server process under test and the two clients'
// tokens.
type serverProc struct {
	*serverproc.Proc
	goodTok, badTok string
}

// startServer starts ct-server by cfg.Server with default limits, an
// allow-list of up and two clients, good and bad; its files go in dir.
func startServer(cfg Config, dir, up string) (*serverProc, error) {
	goodTok, err := identity.NewToken(rand.Read)
	if err != nil {
		return nil, err
	}
	badTok, err := identity.NewToken(rand.Read)
	if err != nil {
		return nil, err
	}
	conf := fmt.Sprintf("allow: [%s]\nclients:\n  - {id: good, token: %q}\n  - {id: bad, token: %q}\n", up, goodTok, badTok)
	p, err := serverproc.Start(cfg.Server, dir, conf, cfg.Log)
	if err != nil {
		return nil, fmt.Errorf("abuse: %w", err)
	}
	return &serverProc{Proc: p, goodTok: goodTok, badTok: badTok}, nil
}

// goodLoad is the good client's app: workers fetching and checking
// GoodBytes each through the proxy until the context ends.
type goodLoad struct {
	wg              sync.WaitGroup
	mu              sync.Mutex
	lat             []time.Duration // of the requests that succeeded
	bytesOK, failed atomic.Int64
}

// start runs cfg.GoodWorkers workers against the app-server up.
func (g *goodLoad) start(ctx context.Context, cfg Config, proxy *url.URL, up string, logf func(string, ...any)) {
	for range cfg.GoodWorkers {
		g.wg.Go(func() {
			tr := &http.Transport{Proxy: http.ProxyURL(proxy), DisableCompression: true}
			defer tr.CloseIdleConnections()
			hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
			for ctx.Err() == nil {
				t0 := time.Now()
				n, err := getChecked(ctx, hc, fmt.Sprintf("http://%s/bytes/%d", up, cfg.GoodBytes), cfg.GoodBytes)
				if ctx.Err() != nil {
					return
				}
				if err != nil {
					g.failed.Add(1)
					logf("abuse: good request: %v", err)
					continue
				}
				g.mu.Lock()
				g.lat = append(g.lat, time.Since(t0))
				g.mu.Unlock()
				g.bytesOK.Add(n)
			}
		})
	}
}

// check lists the bounds the run broke in r.Violations.
func (rep *Report) check(cfg Config) {
	if rep.PeakRSS > cfg.MaxRSSBytes {
		rep.Violations = append(rep.Violations, fmt.Sprintf("ct-server peak RSS %d MiB > %d MiB", rep.PeakRSS>>20, cfg.MaxRSSBytes>>20))
	}
	if rep.P99 > cfg.MaxP99 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("good client's p99 %v > %v", rep.P99.Round(time.Millisecond), cfg.MaxP99))
	}
	if rep.GoodFailed > 0 {
		rep.Violations = append(rep.Violations, fmt.Sprintf("%d good requests failed or had a wrong byte", rep.GoodFailed))
	}
	if rep.GoodReqs < 5 { // the good client must really have run
		rep.Violations = append(rep.Violations, fmt.Sprintf("only %d good requests completed", rep.GoodReqs))
	}
}

// sample keeps the peak of ct-server's RSS (VmHWM is the kernel's own
// peak; this is a cross-check) and of the memory it reserves, until ctx
// ends.
func sample(ctx context.Context, pid int, metrics string, peakRSS, peakReserved *int64) {
	for i := 0; ctx.Err() == nil; i++ {
		if v := serverproc.Status(pid, "VmRSS"); v > *peakRSS {
			*peakRSS = v
		}
		if i%4 == 0 { // a scrape costs more than a read of /proc
			if v := int64(scrape(metrics).Total("ct_server_reserved_bytes")); v > *peakReserved {
				*peakReserved = v
			}
		}
		sleep(ctx, 50*time.Millisecond)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// scrape reads ct-server's metrics (empty when it cannot).
func scrape(metrics string) ops.Metrics {
	resp, err := http.Get("http://" + metrics + "/metrics")
	if err != nil {
		return ops.Metrics{}
	}
	defer resp.Body.Close()
	m, err := ops.ReadMetrics(resp.Body)
	if err != nil {
		return ops.Metrics{}
	}
	return m
}

// scrapeLimitHits reads ct_server_limit_hits_total by limit.
func scrapeLimitHits(metrics string) map[string]float64 {
	hits, _ := scrape(metrics).By("ct_server_limit_hits_total", "limit")
	return hits
}

func startGood(server, ca, token string) (*agent.Client, *url.URL, error) {
	c, err := agent.NewClient(agent.ClientConfig{Server: server, ServerName: "localhost", CAFile: ca, TLS: &tls.Config{},
		Token: token, Paths: []agent.LocalPath{{Name: "lo", Addr: netip.MustParseAddr("127.0.0.1")}}})
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.Close()
		return nil, nil, err
	}
	go c.Serve(l)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx, 1); err != nil {
		c.Close()
		return nil, nil, fmt.Errorf("abuse: good client: %w", err)
	}
	u, _ := url.Parse("http://" + l.Addr().String())
	return c, u, nil
}

// getChecked fetches u and checks every byte against the origin pattern.
func getChecked(ctx context.Context, hc *http.Client, u string, size int) (int64, error) {
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return 0, fmt.Errorf("status %d", resp.StatusCode)
	}
	buf := make([]byte, 32<<10)
	var n int64
	for {
		k, err := resp.Body.Read(buf)
		for i := range k {
			if buf[i] != origin.PatternByte(n+int64(i)) {
				return n, fmt.Errorf("byte %d wrong", n+int64(i))
			}
		}
		n += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return n, err
		}
	}
	if n != int64(size) {
		return n, fmt.Errorf("%d of %d bytes", n, size)
	}
	return n, nil
}
