// Package runner reproduces the Cybertwin paper's §V experiments for
// the agent (ct-client and ct-server) through hetquic's emulator: every
// path of a scenario is a udprelay path on loopback between ct-client and
// ct-server, and the app-server is origin's /bytes over HTTP/1.1 beside
// ct-server. See agent/RESULTS.md, "The paper's §V experiments".
package runner

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic"
	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/cache"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/emu/udprelay"
	"github.com/hetquic/hetquic/internal/selfsigned"
	"github.com/hetquic/hetquic/origin"
	"github.com/hetquic/hetquic/scenario"
)

// DefaultScenario is the paper's §V-B2 setting: two 2.5 Mbit/s paths with
// 1 % and 5 % downstream loss.
const DefaultScenario = "scenarios/cybertwin-2x2.5.yaml"

// LoadDefault loads DefaultScenario from the files built into the binary.
func LoadDefault() (*scenario.Scenario, error) {
	return scenario.Load(hetquic.Files, DefaultScenario)
}

const token = "experiment-token-0123456789abcdef"

// AppHeader names the app of a request (the client's app rule).
const AppHeader = "X-App"

// envConfig is one ct-client/ct-server pair over an emulated scenario.
type envConfig struct {
	Scenario *scenario.Scenario
	// Paths are the scenario paths (by name) the client uses; nil: all.
	Paths     []string
	Scheduler string // "": pathchoice.DefaultScheduler
	StripeMin int64  // 0: agent default; < 0: no striping
	Lanes     int    // QUIC connections per path (0: 1; agent.Lanes)
	// AutoLanes lets ct-client add lanes to a lossy path (agent/lanes.go,
	// ct-client's default). Off (ClientConfig.FixedLanes), each path keeps
	// Lanes connections, as the paper's agent does: its experiments' claims
	// compare that agent.
	AutoLanes    bool
	StallTimeout time.Duration // 0: agent default
	Prefetch     []string      // upstream paths (/bytes/N) ct-server pushes
	Cache        bool          // give the client a prefetch cache
	// ServerQUIC is ct-server's QUIC configuration (nil: its defaults);
	// the sender trace sets its Tracer.
	ServerQUIC *quic.Config
	Seed       uint64
	Log        *slog.Logger
}

type env struct {
	relay    *udprelay.Relay
	up       *http.Server
	upURL    string // http://host:port of the app-server
	srv      *server.Server
	srvDone  chan error
	cl       *agent.Client
	cache    *cache.Cache
	cacheDir string
	proxyL   net.Listener
	served   chan struct{}
	tr       *http.Transport
	hc       *http.Client
}

// newEnv starts the app-server, ct-server, the relay in front of it and a
// ct-client over the relay's paths, and waits until every client path is up.
func newEnv(ctx context.Context, cfg envConfig) (_ *env, err error) {
	e := &env{}
	defer func() {
		if err != nil {
			e.Close()
		}
	}()
	ul, err := e.startApp()
	if err != nil {
		return nil, err
	}
	pair, err := selfsigned.New()
	if err != nil {
		return nil, err
	}
	udp, err := e.startServer(cfg, pair, ul)
	if err != nil {
		return nil, err
	}
	// The emulated paths.
	quiet := *cfg.Scenario
	quiet.Events = nil // experiments drive events themselves
	if e.relay, err = udprelay.Loopback(&quiet, udp.LocalAddr().(*net.UDPAddr).AddrPort(), cfg.Seed); err != nil {
		return nil, err
	}
	ccfg, err := e.clientConfig(cfg, pair)
	if err != nil {
		return nil, err
	}
	if err := e.startClient(ctx, ccfg); err != nil {
		return nil, err
	}
	return e, nil
}

// roleKey is the CPU profile label (runtime/pprof) that names the part of
// an experiment a goroutine belongs to: ct-client, ct-server or the
// app-server, and the goroutines each starts, which inherit it. In one
// process the CPU time of each part is not otherwise apart; a CPU
// profile's samples by label are (go tool pprof -tags: CPU s/GB of
// ct-client + ct-server, not of the emulator or the app as the
// process's figure includes). Unlabelled: the relay, the app and what
// timers run.
const roleKey = "hetquic"

// roleLabel is the context whose labels mark a goroutine as role's.
func roleLabel(role string) context.Context {
	return pprof.WithLabels(context.Background(), pprof.Labels(roleKey, role))
}

// startApp starts the app-server.
func (e *env) startApp() (net.Listener, error) {
	ul, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/", origin.Handler(nil))
	mux.HandleFunc("POST /sink", serveSink) // uploads (cuts.go)
	e.up = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		pprof.SetGoroutineLabels(roleLabel("app-server"))
		e.up.Serve(ul)
	}()
	e.upURL = "http://" + ul.Addr().String()
	return ul, nil
}

// startServer starts ct-server on a loopback UDP socket, allowed to reach
// the app-server on ul and to push cfg.Prefetch.
func (e *env) startServer(cfg envConfig, pair *selfsigned.Pair, ul net.Listener) (*net.UDPConn, error) {
	var prefetch []string
	for _, p := range cfg.Prefetch {
		prefetch = append(prefetch, e.upURL+p)
	}
	var err error
	e.srv, err = server.NewServer(server.Config{
		TLS:      &tls.Config{Certificates: []tls.Certificate{pair.Cert}},
		Clients:  []server.ClientAuth{{ID: "device", Token: token}},
		Allow:    []string{ul.Addr().String()},
		Prefetch: prefetch,
		Log:      cfg.Log,
		QUIC:     cfg.ServerQUIC,
	})
	if err != nil {
		return nil, err
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return nil, err
	}
	e.srvDone = make(chan error, 1)
	go func() {
		pprof.SetGoroutineLabels(roleLabel("ct-server"))
		e.srvDone <- e.srv.Serve(udp)
	}()
	return udp, nil
}

// clientConfig is ct-client's configuration over the relay's paths (those
// cfg.Paths names, each cfg.Lanes times), with the scheduler and cache cfg
// asks for.
func (e *env) clientConfig(cfg envConfig, pair *selfsigned.Pair) (agent.ClientConfig, error) {
	addrs := e.relay.PathAddrs()
	var paths []agent.LocalPath
	for i, p := range cfg.Scenario.Paths {
		if cfg.Paths == nil || slices.Contains(cfg.Paths, p.Name) {
			paths = append(paths, agent.LocalPath{Name: p.Name, Addr: addrs[i]})
		}
	}
	if len(paths) == 0 {
		return agent.ClientConfig{}, fmt.Errorf("no scenario path among %v", cfg.Paths)
	}
	paths, err := agent.Lanes(paths, max(cfg.Lanes, 1))
	if err != nil {
		return agent.ClientConfig{}, err
	}
	ccfg := agent.ClientConfig{
		Server: e.relay.Addr().String(), ServerName: "localhost",
		TLS: &tls.Config{RootCAs: pair.Pool}, Token: token,
		Paths: paths, AppRule: agent.AppRule{Kind: "header", Header: AppHeader},
		StripeMin: cfg.StripeMin, StallTimeout: cfg.StallTimeout,
		ReconnectMax: time.Second, FixedLanes: !cfg.AutoLanes, Log: cfg.Log,
	}
	if cfg.Scheduler != "" {
		if ccfg.Scheduler, err = pathchoice.NewScheduler(cfg.Scheduler, len(paths), cfg.Seed); err != nil {
			return ccfg, err
		}
	}
	if cfg.Cache {
		if e.cacheDir, err = os.MkdirTemp("", "ct-exp-cache-"); err != nil {
			return ccfg, err
		}
		if e.cache, err = cache.OpenCache(e.cacheDir, 1<<30, time.Hour, time.Now()); err != nil {
			return ccfg, err
		}
		ccfg.Cache = e.cache
	}
	return ccfg, nil
}

// startClient starts ct-client and its proxy listener, and waits until
// every path is up.
func (e *env) startClient(ctx context.Context, ccfg agent.ClientConfig) error {
	var err error
	// ct-client's goroutines, those NewClient starts (its paths'
	// connections) and those Serve does, carry its role (roleLabel).
	pprof.Do(ctx, pprof.Labels(roleKey, "ct-client"), func(context.Context) { e.cl, err = agent.NewClient(ccfg) })
	if err != nil {
		return err
	}
	if e.proxyL, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		return err
	}
	e.served = make(chan struct{})
	go func() {
		defer close(e.served)
		pprof.SetGoroutineLabels(roleLabel("ct-client"))
		e.cl.Serve(e.proxyL)
	}()
	proxyURL, _ := url.Parse("http://" + e.proxyL.Addr().String())
	e.tr = &http.Transport{Proxy: http.ProxyURL(proxyURL), MaxIdleConnsPerHost: 64, DisableCompression: true}
	e.hc = &http.Client{Transport: e.tr}
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := e.cl.WaitReady(wctx, len(ccfg.Paths)); err != nil {
		return fmt.Errorf("ct-client paths: %w", err)
	}
	return nil
}

// Close stops everything newEnv started, in reverse order.
func (e *env) Close() {
	if e.tr != nil {
		e.tr.CloseIdleConnections()
	}
	if e.cl != nil {
		e.cl.Close()
		if e.served != nil {
			<-e.served
		}
	} else if e.proxyL != nil {
		e.proxyL.Close()
	}
	if e.relay != nil {
		e.relay.Close()
	}
	if e.srv != nil {
		e.srv.Close()
		if e.srvDone != nil {
			select {
			case <-e.srvDone:
			case <-time.After(5 * time.Second):
			}
		}
	}
	if e.up != nil {
		e.up.Close()
	}
	if e.cacheDir != "" {
		os.RemoveAll(e.cacheDir)
	}
}

// fetch is one app's download as the app sees it.
type fetch struct {
	App   string
	Bytes int64
	Dur   time.Duration
	Hit   bool // served from the client's prefetch cache
}

// get downloads /bytes/size as app through ct-client and checks every byte
// against origin's pattern.
func (e *env) get(ctx context.Context, app string, size int64) (fetch, error) {
	return e.getPath(ctx, app, fmt.Sprintf("/bytes/%d", size), size)
}

func (e *env) getPath(ctx context.Context, app, path string, size int64) (fetch, error) {
	return getChecked(ctx, e.hc, e.upURL+path, app, size)
}

// getChecked GETs url with hc, as app (its AppHeader, none when empty),
// and checks the body is origin's /bytes pattern of size bytes: ct's
// downloads through ct-client and the MPTCP baseline's check alike.
func getChecked(ctx context.Context, hc *http.Client, url, app string, size int64) (fetch, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fetch{}, err
	}
	if app != "" {
		req.Header.Set(AppHeader, app)
	}
	what := strings.TrimSpace(app + " GET " + url)
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return fetch{}, fmt.Errorf("%s: %w", what, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fetch{}, fmt.Errorf("%s: %s %s", what, resp.Status, strings.TrimSpace(string(b)))
	}
	n, err := checkPattern(resp.Body)
	f := fetch{App: app, Bytes: n, Dur: time.Since(start), Hit: resp.Header.Get("Ct-Cache") == "hit"}
	if err != nil {
		return f, fmt.Errorf("%s: after %d bytes: %w", what, n, err)
	}
	if n != size {
		return f, fmt.Errorf("%s: %d bytes, want %d", what, n, size)
	}
	return f, nil
}

var errCorrupt = errors.New("body differs from origin's pattern")

// checkPattern reads r to the end and checks it is origin's /bytes pattern.
func checkPattern(r io.Reader) (int64, error) {
	buf := make([]byte, 64<<10)
	var n int64
	for {
		k, err := r.Read(buf)
		for i := range k {
			if buf[i] != origin.PatternByte(n+int64(i)) {
				return n + int64(i), errCorrupt
			}
		}
		n += int64(k)
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}

// parallel runs the fetches at once and returns them in order, and the
// time until the last one ended.
func (e *env) parallel(ctx context.Context, apps []string, sizes []int64) ([]fetch, time.Duration, error) {
	out := make([]fetch, len(apps))
	errs := make([]error, len(apps))
	var wg sync.WaitGroup
	start := time.Now()
	for i := range apps {
		wg.Go(func() { out[i], errs[i] = e.get(ctx, apps[i], sizes[i]) })
	}
	wg.Wait()
	return out, time.Since(start), errors.Join(errs...)
}

// downRate is the sum of the down rates (bytes/s) of the named paths (all
// when names is nil).
func downRate(s *scenario.Scenario, names []string) float64 {
	var r float64
	for _, p := range s.Paths {
		if names == nil || slices.Contains(names, p.Name) {
			r += p.Down.RateMbps * 1e6 / 8
		}
	}
	return r
}

// offeredRate is the mean down rate (bytes/s) the named paths (all when
// names is nil) offered over a transfer's first d: each path's rate as
// the scenario's timed events set it, counted from the transfer's start
// (startEvents), and nothing through an outage. Goodput over it is the
// share of the capacity on offer that the transfer used; downRate, the
// rates at the start, would count a path whose rate halves at 1 s at its
// first rate to the end. Without events the two are the same.
func offeredRate(s *scenario.Scenario, names []string, d time.Duration) float64 {
	if d <= 0 {
		return downRate(s, names)
	}
	var b float64
	for _, p := range s.Paths {
		if names == nil || slices.Contains(names, p.Name) {
			b += offeredBytes(s, p, d.Seconds())
		}
	}
	return b / d.Seconds()
}

// offeredBytes is what path p's down link could carry in the first end
// seconds, its events applied in time order.
func offeredBytes(s *scenario.Scenario, p scenario.Path, end float64) float64 {
	var evs []scenario.Event
	for _, ev := range s.Events {
		if ev.Path == p.Name && ev.AtS < end {
			evs = append(evs, ev)
		}
	}
	slices.SortStableFunc(evs, func(a, b scenario.Event) int { return cmp.Compare(a.AtS, b.AtS) })
	var b, from, dark float64 // dark: when the latest outage ends
	for _, ev := range evs {
		b += carried(p.Down.RateMbps, from, ev.AtS, dark)
		from = ev.AtS
		switch {
		case ev.Set != nil:
			if q, err := ev.Set.Apply(p); err == nil { // Parse has applied each patch once
				p = q
			}
		case ev.OutageS > 0:
			dark = max(dark, ev.AtS+ev.OutageS)
		}
	}
	return b + carried(p.Down.RateMbps, from, end, dark)
}

// carried is the bytes a link of mbps carries from from to to (seconds),
// none before dark.
func carried(mbps, from, to, dark float64) float64 {
	return mbps * 1e6 / 8 * max(0, to-max(from, dark))
}
