package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/abuse"
	"github.com/hetquic/hetquic/agent/clientfile"
	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/ops"
	"github.com/hetquic/hetquic/agent/server"
)

func init() {
	register(command{name: "agent", summary: "Cybertwin agent: ct-server (cloud) and ct-client (device proxy) (agent server|client)", run: runAgent})
}

const agentHelp = `The Cybertwin agent carries every app of a multi-homed device over always-on
QUIC connections, one per interface, between a ct-client on the device and a
ct-server in the cloud beside the app-servers.

server   run ct-server: authenticates ct-clients by token, forwards only to
         the allow-listed app-servers, pushes prefetched content
client   run ct-client: an HTTP proxy (http:// and CONNECT) for local apps;
         each request rides a QUIC stream on the path the scheduler picks
         and moves to another path if its own stalls

Both read an optional YAML file (--config; see agent/README.md); flags
override it.`

func runAgent(ctx context.Context, args []string) error {
	return runSubcommand(ctx, "agent", agentHelp, []subcommand{
		{"server", "run ct-server, the cloud side", agentServer},
		{"client", "run ct-client, the device side's local proxy", agentClient},
		{"token", "write a new random client token to a file (mode 0600)", agentToken},
		{"status", "paths, RTT, bytes and limits hit of a running ct-client or ct-server (from its --metrics)", agentStatus},
		{"abuse", "load-and-abuse test: a real ct-server beside a misbehaving and a good client", agentAbuse},
		{"capacity", "ct-server capacity: N two-path ct-clients against one real ct-server, idle then active (RSS per device, handshakes/s, p99 first byte)", agentCapacity},
		{"faults", "fault matrix: every stop, crash and path failure against each kind of app connection (intact or reset, never short)", agentFaults},
		{"experiment", "run a Cybertwin §V experiment through the emulator", agentExperiment},
	}, args)
}

// serveMetrics serves Prometheus metrics and /healthz on addr ("" none).
func serveMetrics(addr string, g prometheus.Gatherer, health func() error, log *slog.Logger) (func(), error) {
	if addr == "" {
		return func() {}, nil
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, badInput(fmt.Errorf("metrics listen %s: %w", addr, err))
	}
	warnNonLoopback(log, "--metrics", l.Addr(), "the metrics endpoint has no authentication and shows client ids")
	srv := &http.Server{Handler: ops.MetricsHandler(g, health), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(l)
	log.Info("metrics", "url", "http://"+l.Addr().String()+"/metrics", "health", "http://"+l.Addr().String()+"/healthz")
	return func() { srv.Close() }, nil
}

// warnNonLoopback logs a warning when a listener is reachable from other
// hosts: why names the risk.
func warnNonLoopback(log *slog.Logger, flag string, a net.Addr, why string) {
	ap, err := netip.ParseAddrPort(a.String())
	if err == nil && ap.Addr().Unmap().IsLoopback() {
		return
	}
	log.Warn(flag+" is reachable from other hosts", "addr", a.String(), "risk", why)
}

// newLogger makes the command's structured logger: text or JSON on
// stderr, Info and above with -v, else Warn and above.
func newLogger(format string, verbose bool) (*slog.Logger, error) {
	lvl := slog.LevelWarn
	if verbose {
		lvl = slog.LevelInfo
	}
	opts := &slog.HandlerOptions{Level: lvl}
	switch format {
	case "", "text":
		return slog.New(slog.NewTextHandler(os.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(os.Stderr, opts)), nil
	}
	return nil, badInput(fmt.Errorf("--log-format %q: want text or json", format))
}

func agentToken(ctx context.Context, args []string) error {
	fs := newFlagSet("agent token", "agent token FILE", agentHelp+`

token writes a new random token (256 bits, base64url) to FILE with mode 0600
and prints nothing else; it refuses to overwrite FILE. Give the same file to
ct-server (--token-file) and ct-client (--token-file).`)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return badInput(errors.New("agent token: give the file to write, e.g. hetquic agent token ct.token"))
	}
	if _, err := identity.WriteTokenFile(fs.Arg(0), rand.Read); err != nil {
		return badInput(fmt.Errorf("agent token: %w", err))
	}
	fmt.Fprintf(os.Stderr, "wrote a new token to %s (mode 0600)\n", fs.Arg(0))
	return nil
}

func agentStatus(ctx context.Context, args []string) error {
	fs := newFlagSet("agent status", "agent status [--metrics host:port]", agentHelp+`

status reads the metrics endpoint of a running ct-client or ct-server
(its --metrics) and prints its paths (up, RTT, streams, bytes, stalls,
reconnects) or its clients (connections, work, bytes) and the limits that
bit.`)
	metrics := fs.String("metrics", "127.0.0.1:9101", "the agent's --metrics address (host:port) or URL")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("agent status: unexpected argument %q", fs.Arg(0)))
	}
	u := *metrics
	if !strings.Contains(u, "://") {
		u = "http://" + u + "/metrics"
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return badInput(fmt.Errorf("agent status: --metrics %q: %w", *metrics, err))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("agent status: cannot reach %s (is ct-client or ct-server running with --metrics %s?): %w", u, *metrics, errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("agent status: %s answered %s", u, resp.Status)
	}
	if err := ops.WriteStatus(os.Stdout, resp.Body); err != nil {
		return fmt.Errorf("agent status: %s: %w", u, err)
	}
	return nil
}

func qlogConfig(dir string) *quic.Config {
	if dir == "" {
		return nil
	}
	os.Setenv("QLOGDIR", dir) // qlog.DefaultConnectionTracer reads it
	return &quic.Config{Tracer: qlog.DefaultConnectionTracer}
}

func agentServer(ctx context.Context, args []string) error {
	fs := newFlagSet("agent server", "agent server [--config FILE] [flags]", agentHelp)
	flags := registerServerFlags(fs)
	logFormat := fs.String("log-format", "text", "log format: text or json (stderr)")
	verbose := fs.Bool("v", false, "log connections and refusals (info level)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("agent server: unexpected argument %q", fs.Arg(0)))
	}
	log, err := newLogger(*logFormat, *verbose)
	if err != nil {
		return err
	}
	f, err := flags.Load()
	if err != nil {
		return badInput(err)
	}
	warn := func(w string) { log.Warn(w) }
	pol, err := f.Policy(warn)
	if err != nil {
		return badInput(err)
	}
	tlsConf, certPEM, err := f.TLS(time.Now(), log)
	if err != nil {
		return badInput(err)
	}
	if flags.WriteCA != "" && certPEM != nil {
		if err := os.WriteFile(flags.WriteCA, certPEM, 0o644); err != nil {
			return badInput(fmt.Errorf("agent server: --write-ca: %w", err))
		}
	}
	srv, err := server.NewServer(server.Config{
		TLS: tlsConf, QUIC: qlogConfig(f.QlogDir), Clients: pol.Clients, Limits: pol.Limits, Allow: pol.Allow, AllowInternal: pol.AllowInternal,
		Prefetch: pol.Prefetch, HeaderTimeout: time.Duration(f.HeaderTimeoutMS) * time.Millisecond, Log: log,
		MemoryBudget: f.MemoryBudget,
	})
	if err != nil {
		return badInput(err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The budget bounds what work reserves; a soft limit a little
		// above twice it makes the GC work before the heap doubles past it.
		debug.SetMemoryLimit(2*max(f.MemoryBudget, server.DefaultMemoryBudget) + 64<<20)
	}
	pc, err := net.ListenPacket("udp", f.Listen)
	if err != nil {
		return badInput(fmt.Errorf("agent server: listen %s: %w", f.Listen, err))
	}
	warnNonLoopback(log, "--listen", pc.LocalAddr(), "ct-server is reachable from other hosts (as a cloud ct-server must be): only the tokens keep them out")
	stopMetrics, err := serveMetrics(f.Metrics, srv.Registry(), srv.Health, log)
	if err != nil {
		pc.Close()
		return err
	}
	defer stopMetrics()
	fmt.Fprintf(os.Stderr, "ct-server on %s, %d client(s), allow %s\n", pc.LocalAddr(), len(pol.Clients), strings.Join(f.Allow, ","))
	reload := func() error {
		g, err := flags.Load()
		if err != nil {
			return err
		}
		if names := f.RestartOnly(g); len(names) > 0 {
			log.Warn("reload: these settings changed but need a restart", "settings", strings.Join(names, ","))
		}
		p, err := g.Policy(warn)
		if err != nil {
			return err
		}
		return srv.Reload(p)
	}
	return runServer(ctx, srv, pc, flags.Drain, reload, log)
}

// runServer serves until ctx ends, then drains for up to drain. SIGHUP
// calls reload (the configuration and token files, read again); a reload
// that fails leaves the running configuration as it was.
func runServer(ctx context.Context, srv *server.Server, pc net.PacketConn, drain time.Duration, reload func() error, log *slog.Logger) error {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(pc) }()
	sdNotify(log, "READY=1")
	for {
		select {
		case <-hup:
			sdNotify(log, "RELOADING=1")
			if err := reload(); err != nil {
				log.Warn("reload failed; the running configuration stays", "err", err)
			} else {
				log.Info("reloaded the configuration and token files")
			}
			sdNotify(log, "READY=1")
		case <-ctx.Done():
			sdNotify(log, "STOPPING=1")
			dctx, cancel := context.WithTimeout(context.Background(), drain)
			defer cancel()
			log.Info("draining", "for", drain.String())
			if err := srv.Shutdown(dctx); err != nil {
				log.Warn(err.Error())
			}
			return <-done
		case err := <-done:
			srv.Close()
			return err
		}
	}
}

// sdNotify tells systemd (Type=notify units) about the service's state.
func sdNotify(log *slog.Logger, state string) {
	if _, err := ops.SdNotify(state); err != nil {
		log.Warn("sd_notify", "state", state, "err", err)
	}
}

func agentClient(ctx context.Context, args []string) error {
	fs := newFlagSet("agent client", "agent client [--config FILE] [flags]", agentHelp)
	flags := registerClientFlags(fs)
	logFormat := fs.String("log-format", "text", "log format: text or json (stderr)")
	verbose := fs.Bool("v", false, "log connections, stalls and migrations (info level)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return badInput(fmt.Errorf("agent client: unexpected argument %q", fs.Arg(0)))
	}
	log, err := newLogger(*logFormat, *verbose)
	if err != nil {
		return err
	}
	f, err := flags.Load(func(w string) { log.Warn(w) })
	if err != nil {
		return badInput(err)
	}
	cfg, err := f.Config(time.Now())
	if err != nil {
		return badInput(err)
	}
	cfg.QUIC, cfg.Log = qlogConfig(f.QlogDir), log
	ls, err := listenAll(f.Listen, log)
	if err != nil {
		return err
	}
	defer closeAll(ls)
	socks, err := listenAll(f.Socks, log)
	if err != nil {
		return err
	}
	defer closeAll(socks)
	c, err := agent.NewClient(cfg)
	if err != nil {
		return badInput(err)
	}
	defer c.Close()
	stopMetrics, err := serveMetrics(f.Metrics, c.Registry(), func() error {
		if c.Ready() == 0 {
			return errors.New("no path connected to ct-server")
		}
		return nil
	}, log)
	if err != nil {
		return err
	}
	defer stopMetrics()
	errs := make(chan error, len(ls)+len(socks))
	for _, l := range ls {
		fmt.Fprintf(os.Stderr, "ct-client proxy on http://%s (ct-server %s, %d paths, scheduler %s)\n", l.Addr(), f.Server, len(cfg.Paths), f.Scheduler)
		go func() { errs <- c.Serve(l) }()
	}
	for _, l := range socks {
		fmt.Fprintf(os.Stderr, "ct-client SOCKS5 on socks5h://%s\n", l.Addr())
		go func() { errs <- c.ServeSOCKS(l) }()
	}
	// SIGHUP is caught before READY=1: a reload sent the moment the
	// service says it is ready must not kill it.
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	sdNotify(log, "READY=1") // the proxy accepts; paths come up on their own
	defer sdNotify(log, "STOPPING=1")
	for {
		select {
		case <-hup:
			sdNotify(log, "RELOADING=1")
			reloadClient(c, flags, f, log)
			sdNotify(log, "READY=1")
		case <-ctx.Done():
			// Drain: responses and tunnels in progress may finish, then
			// what is left is reset (never a FIN on an incomplete response).
			dctx, cancel := context.WithTimeout(context.Background(), agent.DefaultClientDrain)
			defer cancel()
			log.Info("draining", "for", agent.DefaultClientDrain.String())
			if err := c.Shutdown(dctx); err != nil {
				log.Warn(err.Error())
			}
			return nil
		case err := <-errs:
			return err
		}
	}
}

// reloadClient applies SIGHUP to a running ct-client: the file, flags and
// token file read again; the paths, the token and the apps' rule,
// priorities and pinned paths replaced (Client.ReloadAll: a path removed
// hands its transfers to the others, one added is dialled); settings that need a restart
// named in one log line. A file that fails to load or check leaves the
// running configuration as it was, with one log line saying why.
func reloadClient(c *agent.Client, flags *clientFlags, running clientfile.File, log *slog.Logger) {
	g, err := flags.Load(func(w string) { log.Warn(w) })
	if err == nil {
		if names := running.RestartOnly(g); len(names) > 0 {
			log.Warn("reload: these settings changed but need a restart", "settings", strings.Join(names, ","))
		}
		var p agent.ClientPolicy
		var paths []agent.LocalPath
		if p, err = g.Policy(); err == nil {
			if paths, err = g.LocalPaths(); err == nil {
				err = c.ReloadAll(paths, p)
			}
		}
	}
	if err != nil {
		log.Warn("reload failed; the running configuration stays", "err", err)
	}
}

// listenAll opens ct-client's proxy listeners (all or none).
func listenAll(addrs []string, log *slog.Logger) ([]net.Listener, error) {
	var ls []net.Listener
	for _, a := range addrs {
		l, err := net.Listen("tcp", a)
		if err != nil {
			closeAll(ls)
			return nil, badInput(fmt.Errorf("agent client: listen %s: %w", a, err))
		}
		warnNonLoopback(log, "--listen", l.Addr(), "ct-client's proxy has no authentication: anyone who reaches it uses this client's token")
		ls = append(ls, l)
	}
	return ls, nil
}

func closeAll(ls []net.Listener) {
	for _, l := range ls {
		l.Close()
	}
}

func agentAbuse(ctx context.Context, args []string) error {
	fs := newFlagSet("agent abuse", "agent abuse [--full] [--md] [-v]", agentHelp+`

abuse starts a real ct-server process (this binary, default configuration)
on loopback, runs one misbehaving authenticated client (connections beyond
max_conns, thousands of unread requests, unread CONNECT tunnels, a prefetch
flood, handshakes that never say hello, short tunnels opened and closed one
after another) beside a good ct-client that checks
every byte, and reports ct-server's peak RSS and the good client's latency.
It exits 1 when a bound is broken (agent/DESIGN.md, "Abuse").`)
	full := fs.Bool("full", false, "the issue's size (4x the CI size; about a minute)")
	md := fs.Bool("md", false, "print the README's markdown block")
	verbose := fs.Bool("v", false, "progress and ct-server's log on stderr")
	maxRSS := fs.Int64("max-rss-mib", 0, "bound on ct-server's peak RSS in MiB (default 400)")
	only := fs.String("only", "", "tunnels, streams or cycles: only that abuse, to measure what one costs ct-server")
	maxP99 := fs.Duration("max-p99", 0, "bound on the good client's p99 latency (default 2s)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	cfg := abuse.Default
	command := "hetquic agent abuse --md"
	if *full {
		cfg, command = abuse.Full, "hetquic agent abuse --full --md"
	}
	if *maxRSS > 0 {
		cfg.MaxRSSBytes = *maxRSS << 20
	}
	if *maxP99 > 0 {
		cfg.MaxP99 = *maxP99
	}
	if *only != "" {
		cfg.Only = *only
		command = strings.Replace(command, " --md", " --only "+*only+" --md", 1)
	}
	cfg.Server = func(args ...string) *exec.Cmd {
		return exec.Command(exe, append([]string{"agent", "server"}, args...)...)
	}
	if *verbose {
		cfg.Log = os.Stderr
	}
	rep, err := abuse.Run(ctx, cfg)
	if err != nil {
		return err
	}
	if *md {
		load, _ := os.ReadFile("/proc/loadavg")
		rep.Markdown(os.Stdout, command, "loadavg "+string(load), time.Now())
	} else {
		fmt.Printf("peak RSS %d MiB, good p50 %v p99 %v over %d requests, %d bytes checked, %d failed\n",
			rep.PeakRSS>>20, rep.P50.Round(time.Millisecond), rep.P99.Round(time.Millisecond), rep.GoodReqs, rep.BytesOK, rep.GoodFailed)
	}
	if !rep.Passed() {
		return fmt.Errorf("agent abuse: %s", strings.Join(rep.Violations, "; "))
	}
	return nil
}
