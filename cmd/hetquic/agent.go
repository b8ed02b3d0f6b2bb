package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/qlog"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/abuse"
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
		{"abuse", "load-and-abuse test: a real ct-server beside a misbehaving and a good client", agentAbuse},
		{"experiment", "run a Cybertwin §V experiment through the emulator", agentExperiment},
	}, args)
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
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
	srv := &http.Server{Handler: agent.MetricsHandler(g, health), ReadHeaderTimeout: 5 * time.Second}
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

// readTokenFile reads a token file, warning when others can read it.
func readTokenFile(log *slog.Logger, name string) (string, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return "", badInput(err)
	}
	if w := agent.CheckTokenFile(name); w != "" {
		log.Warn(w)
	}
	return strings.TrimSpace(string(b)), nil
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
	if _, err := agent.WriteTokenFile(fs.Arg(0), rand.Read); err != nil {
		return badInput(fmt.Errorf("agent token: %w", err))
	}
	fmt.Fprintf(os.Stderr, "wrote a new token to %s (mode 0600)\n", fs.Arg(0))
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
	cfgFile := fs.String("config", "", "YAML configuration file (flags override it)")
	listen := fs.String("listen", "", "UDP address to listen on (default 0.0.0.0:4433)")
	cert := fs.String("cert", "", "PEM certificate chain")
	key := fs.String("key", "", "PEM private key")
	self := fs.Bool("self-signed", false, "use a self-signed certificate, kept in --state-dir across restarts")
	stateDir := fs.String("state-dir", "", "with --self-signed: keep the certificate and key here (default $HOME/.local/state/hetquic)")
	writeCA := fs.String("write-ca", "", "with --self-signed: write the certificate to FILE for clients' --ca")
	allow := fs.String("allow", "", "upstream app-servers host:port, comma-separated (added to the file's allow-list)")
	token := fs.String("token", "", "accept one client, id \"default\", with this token (>= 96 bits; see agent token)")
	tokenFile := fs.String("token-file", "", "like --token, read from FILE (make one with: hetquic agent token FILE)")
	metrics := fs.String("metrics", "", "serve Prometheus metrics and /healthz on host:port")
	qlogDir := fs.String("qlog-dir", "", "write a qlog trace per connection into DIR")
	budget := fs.Int64("memory-budget", 0, "bytes all clients' work may reserve before new work gets 503 (default 512 MiB)")
	drain := fs.Duration("drain", 10*time.Second, "on Ctrl-C/SIGTERM, let streams in progress finish for up to this long")
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
	var f agent.ServerFile
	if *cfgFile != "" {
		if f, err = agent.LoadServerFile(*cfgFile); err != nil {
			return badInput(err)
		}
	}
	setStr := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setStr(&f.Listen, *listen)
	setStr(&f.Cert, *cert)
	setStr(&f.Key, *key)
	setStr(&f.Metrics, *metrics)
	setStr(&f.QlogDir, *qlogDir)
	setStr(&f.StateDir, *stateDir)
	if *budget != 0 {
		f.MemoryBudget = *budget
	}
	f.SelfSigned = f.SelfSigned || *self
	f.Allow = append(f.Allow, splitList(*allow)...)
	if *tokenFile != "" {
		if *token, err = readTokenFile(log, *tokenFile); err != nil {
			return err
		}
	}
	if *token != "" {
		f.Clients = append(f.Clients, agent.ClientAuth{ID: "default", Token: *token})
	}
	if f.Listen == "" {
		f.Listen = "0.0.0.0:4433"
	}
	if len(f.Clients) == 0 {
		return badInput(errors.New("agent server: no clients: give --token-file (make one with: hetquic agent token FILE), --token or clients in --config"))
	}
	if len(f.Allow) == 0 {
		return badInput(errors.New("agent server: empty allow-list: give --allow or allow in --config (ct-server never forwards anywhere)"))
	}
	var tlsConf tls.Config
	switch {
	case f.SelfSigned:
		if f.StateDir == "" {
			home, err := os.UserHomeDir()
			if err != nil {
				return badInput(errors.New("agent server: --self-signed needs --state-dir (no home directory)"))
			}
			f.StateDir = filepath.Join(home, ".local", "state", "hetquic")
		}
		var names []string
		if host, _, err := net.SplitHostPort(f.Listen); err == nil && host != "" && host != "0.0.0.0" && host != "::" {
			names = append(names, host)
		}
		c, certPEM, created, err := agent.LoadOrCreateIdentity(f.StateDir, time.Now(), names...)
		if err != nil {
			return badInput(fmt.Errorf("agent server: %w", err))
		}
		tlsConf.Certificates = []tls.Certificate{c}
		if created {
			log.Warn("made a new self-signed certificate; clients need it as --ca", "state_dir", f.StateDir)
		} else {
			log.Info("reusing the self-signed certificate", "state_dir", f.StateDir)
		}
		if *writeCA != "" {
			if err := os.WriteFile(*writeCA, certPEM, 0o644); err != nil {
				return badInput(fmt.Errorf("agent server: --write-ca: %w", err))
			}
		}
	case f.Cert != "" && f.Key != "":
		c, err := tls.LoadX509KeyPair(f.Cert, f.Key)
		if err != nil {
			return badInput(fmt.Errorf("agent server: certificate: %w", err))
		}
		tlsConf.Certificates = []tls.Certificate{c}
	default:
		return badInput(errors.New("agent server: give --cert and --key, or --self-signed"))
	}
	srv, err := agent.NewServer(agent.ServerConfig{
		TLS: &tlsConf, QUIC: qlogConfig(f.QlogDir), Clients: f.Clients, Limits: f.Limits, Allow: f.Allow,
		Prefetch: f.Prefetch, HeaderTimeout: time.Duration(f.HeaderTimeoutMS) * time.Millisecond, Log: log,
		MemoryBudget: f.MemoryBudget,
	})
	if err != nil {
		return badInput(err)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		// The budget bounds what work reserves; a soft limit a little
		// above twice it makes the GC work before the heap doubles past it.
		debug.SetMemoryLimit(2*max(f.MemoryBudget, agent.DefaultMemoryBudget) + 64<<20)
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
	fmt.Fprintf(os.Stderr, "ct-server on %s, %d client(s), allow %s\n", pc.LocalAddr(), len(f.Clients), strings.Join(f.Allow, ","))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(pc) }()
	select {
	case <-ctx.Done():
		dctx, cancel := context.WithTimeout(context.Background(), *drain)
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

func agentClient(ctx context.Context, args []string) error {
	fs := newFlagSet("agent client", "agent client [--config FILE] [flags]", agentHelp)
	cfgFile := fs.String("config", "", "YAML configuration file (flags override it)")
	server := fs.String("server", "", "ct-server UDP host:port")
	serverName := fs.String("server-name", "", "ct-server's TLS name (default: the host of --server)")
	ca := fs.String("ca", "", "PEM certificate to trust for ct-server (e.g. from agent server --write-ca)")
	token := fs.String("token", "", "this client's token")
	tokenFile := fs.String("token-file", "", "read the token from FILE")
	paths := fs.String("paths", "", "local interfaces NAME=IP (or IP), comma-separated: one QUIC connection each (see --conns-per-path)")
	lanes := fs.Int("conns-per-path", 0, "QUIC connections per interface, 1 to 4 (default 1): more fill lossy links (agent/README.md, Lanes)")
	listen := fs.String("listen", "", "proxy listen addresses, comma-separated (default 127.0.0.1:8080)")
	sched := fs.String("scheduler", "", fmt.Sprintf("path scheduler, one of %v (default %s)", agent.SchedulerNames, agent.DefaultScheduler))
	appRule := fs.String("app-rule", "", "how apps are told apart: host, port or header:NAME (default host)")
	stall := fs.Duration("stall-timeout", 0, "silence after which a response's path is checked and the stream moved (default 800ms)")
	cacheDir := fs.String("cache-dir", "", "prefetch cache directory (enables prefetch)")
	cacheBytes := fs.Int64("cache-bytes", 256<<20, "prefetch cache size bound in bytes")
	metrics := fs.String("metrics", "", "serve Prometheus metrics and /healthz on host:port")
	qlogDir := fs.String("qlog-dir", "", "write a qlog trace per connection into DIR")
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
	var f agent.ClientFile
	if *cfgFile != "" {
		if f, err = agent.LoadClientFile(*cfgFile); err != nil {
			return badInput(err)
		}
	}
	setStr := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	setStr(&f.Server, *server)
	setStr(&f.ServerName, *serverName)
	setStr(&f.CA, *ca)
	setStr(&f.Token, *token)
	setStr(&f.TokenFile, *tokenFile)
	setStr(&f.Scheduler, *sched)
	setStr(&f.AppRule, *appRule)
	setStr(&f.Metrics, *metrics)
	setStr(&f.QlogDir, *qlogDir)
	if *paths != "" {
		f.Paths = splitList(*paths)
	}
	if *listen != "" {
		f.Listen = splitList(*listen)
	}
	if *lanes != 0 {
		f.ConnsPerPath = *lanes
	}
	if *stall > 0 {
		f.StallTimeoutMS = stall.Milliseconds()
	}
	if *cacheDir != "" {
		f.Cache = &agent.CacheFile{Dir: *cacheDir, MaxBytes: *cacheBytes}
	}
	if f.Server == "" {
		return badInput(errors.New("agent client: give --server or server in --config"))
	}
	host, _, err := net.SplitHostPort(f.Server)
	if err != nil {
		return badInput(fmt.Errorf("agent client: --server %q: %w", f.Server, err))
	}
	if f.ServerName == "" {
		f.ServerName = host
	}
	if f.TokenFile != "" {
		if f.Token, err = readTokenFile(log, f.TokenFile); err != nil {
			return err
		}
	}
	if f.Token == "" {
		return badInput(errors.New("agent client: give --token or --token-file"))
	}
	if len(f.Paths) == 0 {
		return badInput(errors.New("agent client: give --paths (one local address per interface)"))
	}
	cfg := agent.ClientConfig{Server: f.Server, ServerName: f.ServerName, Token: f.Token, Priority: f.Priority,
		StallTimeout: time.Duration(f.StallTimeoutMS) * time.Millisecond, IdleTimeout: time.Duration(f.IdleTimeoutMS) * time.Millisecond,
		QUIC: qlogConfig(f.QlogDir)}
	for _, p := range f.Paths {
		lp, err := agent.ParseLocalPath(p)
		if err != nil {
			return badInput(fmt.Errorf("agent client: %w", err))
		}
		cfg.Paths = append(cfg.Paths, lp)
	}
	if cfg.Paths, err = agent.Lanes(cfg.Paths, max(f.ConnsPerPath, 1)); err != nil {
		return badInput(fmt.Errorf("agent client: %w", err))
	}
	if f.Scheduler == "" {
		f.Scheduler = agent.DefaultScheduler
	}
	if cfg.Scheduler, err = agent.NewScheduler(f.Scheduler, len(cfg.Paths), 1); err != nil {
		return badInput(fmt.Errorf("agent client: %w", err))
	}
	if f.AppRule != "" {
		if cfg.AppRule, err = agent.ParseAppRule(f.AppRule); err != nil {
			return badInput(fmt.Errorf("agent client: %w", err))
		}
	}
	cfg.TLS = &tls.Config{}
	if f.CA != "" {
		if _, err := agent.LoadCAFile(f.CA); err != nil {
			return badInput(fmt.Errorf("agent client: --ca: %w", err))
		}
		cfg.CAFile = f.CA // re-read before every dial
	}
	if f.Cache != nil {
		ttl := time.Duration(f.Cache.DefaultTTLS) * time.Second
		if ttl == 0 {
			ttl = 10 * time.Minute
		}
		if cfg.Cache, err = agent.OpenCache(f.Cache.Dir, f.Cache.MaxBytes, ttl, time.Now()); err != nil {
			return badInput(fmt.Errorf("agent client: %w", err))
		}
	}
	cfg.Log = log
	if len(f.Listen) == 0 {
		f.Listen = []string{"127.0.0.1:8080"}
	}
	var ls []net.Listener
	for _, a := range f.Listen {
		l, err := net.Listen("tcp", a)
		if err != nil {
			for _, l := range ls {
				l.Close()
			}
			return badInput(fmt.Errorf("agent client: listen %s: %w", a, err))
		}
		warnNonLoopback(log, "--listen", l.Addr(), "ct-client's proxy has no authentication: anyone who reaches it uses this client's token")
		ls = append(ls, l)
	}
	c, err := agent.NewClient(cfg)
	if err != nil {
		for _, l := range ls {
			l.Close()
		}
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
		for _, l := range ls {
			l.Close()
		}
		return err
	}
	defer stopMetrics()
	errs := make(chan error, len(ls))
	for _, l := range ls {
		fmt.Fprintf(os.Stderr, "ct-client proxy on http://%s (ct-server %s, %d paths, scheduler %s)\n", l.Addr(), f.Server, len(cfg.Paths), f.Scheduler)
		go func() { errs <- c.Serve(l) }()
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

func agentAbuse(ctx context.Context, args []string) error {
	fs := newFlagSet("agent abuse", "agent abuse [--full] [--md] [-v]", agentHelp+`

abuse starts a real ct-server process (this binary, default configuration)
on loopback, runs one misbehaving authenticated client (connections beyond
max_conns, thousands of unread requests, unread CONNECT tunnels, a prefetch
flood, handshakes that never say hello) beside a good ct-client that checks
every byte, and reports ct-server's peak RSS and the good client's latency.
It exits 1 when a bound is broken (agent/README.md, "Abuse").`)
	full := fs.Bool("full", false, "the issue's size (4x the CI size; about a minute)")
	md := fs.Bool("md", false, "print the README's markdown block")
	verbose := fs.Bool("v", false, "progress and ct-server's log on stderr")
	maxRSS := fs.Int64("max-rss-mib", 0, "bound on ct-server's peak RSS in MiB (default 400)")
	only := fs.String("only", "", "tunnels or streams: only that abuse, to measure what one costs ct-server")
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
