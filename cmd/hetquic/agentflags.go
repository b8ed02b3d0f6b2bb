package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/hetquic/hetquic/agent/clientfile"
	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/server"
	"github.com/hetquic/hetquic/agent/wire"
)

// flagOverlay lays command-line flags over a YAML file: every flag given
// records a setter, and apply runs them in order after the file is read.
// A flag left out keeps the file's value; a flag given overrides it, even
// with a zero value. Flags are registered with one line each (see
// registerServerFlags), so a new file field gets its flag without a new
// merge rule in cmd.
type flagOverlay[T any] struct {
	sets []func(*T)
}

func (o *flagOverlay[T]) apply(f *T) {
	for _, set := range o.sets {
		set(f)
	}
}

// str registers a string flag that replaces *field.
func (o *flagOverlay[T]) str(fs *flag.FlagSet, name, usage string, field func(*T) *string) {
	fs.Func(name, usage, func(v string) error {
		o.sets = append(o.sets, func(f *T) { *field(f) = v })
		return nil
	})
}

// list registers a comma-separated flag that replaces (or, with add,
// extends) *field.
func (o *flagOverlay[T]) list(fs *flag.FlagSet, name, usage string, add bool, field func(*T) *[]string) {
	fs.Func(name, usage, func(v string) error {
		items := splitList(v)
		o.sets = append(o.sets, func(f *T) {
			if add {
				*field(f) = append(*field(f), items...)
			} else {
				*field(f) = items
			}
		})
		return nil
	})
}

// integer registers an integer flag; set stores it.
func (o *flagOverlay[T]) integer(fs *flag.FlagSet, name, usage string, set func(*T, int64)) {
	fs.Func(name, usage, func(v string) error {
		n, err := strconv.ParseInt(v, 0, 64)
		if err != nil {
			return fmt.Errorf("want an integer, got %q", v)
		}
		o.sets = append(o.sets, func(f *T) { set(f, n) })
		return nil
	})
}

// millis registers a duration flag (800ms, 2s) stored in milliseconds.
func (o *flagOverlay[T]) millis(fs *flag.FlagSet, name, usage string, field func(*T) *int64) {
	fs.Func(name, usage, func(v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return fmt.Errorf("want a duration such as 800ms or 2s, got %q", v)
		}
		o.sets = append(o.sets, func(f *T) { *field(f) = d.Milliseconds() })
		return nil
	})
}

// boolean registers a flag that sets *field to true.
func (o *flagOverlay[T]) boolean(fs *flag.FlagSet, name, usage string, field func(*T) *bool) {
	fs.BoolFunc(name, usage, func(v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return err
		}
		o.sets = append(o.sets, func(f *T) { *field(f) = b })
		return nil
	})
}

// loadOver reads the YAML file name with load ("" none) and lays the
// given flags over it.
func loadOver[T any](name string, load func(string) (T, error), over *flagOverlay[T]) (T, error) {
	var f T
	if name != "" {
		var err error
		if f, err = load(name); err != nil {
			return f, err
		}
	}
	over.apply(&f)
	return f, nil
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

// serverFlags are the flags of "hetquic agent server": the YAML file
// (--config) and the flags laid over it. Load after the FlagSet is parsed.
type serverFlags struct {
	Config  string        // --config
	WriteCA string        // --write-ca: where the self-signed certificate goes for clients
	Drain   time.Duration // --drain
	over    flagOverlay[server.File]
}

// registerServerFlags registers ct-server's flags on fs.
func registerServerFlags(fs *flag.FlagSet) *serverFlags {
	sf := &serverFlags{}
	o := &sf.over
	fs.StringVar(&sf.Config, "config", "", "YAML configuration file (flags override it)")
	fs.StringVar(&sf.WriteCA, "write-ca", "", "with --self-signed: write the certificate to FILE for clients' --ca")
	fs.DurationVar(&sf.Drain, "drain", 10*time.Second, "on Ctrl-C/SIGTERM, let streams in progress finish for up to this long")
	o.str(fs, "listen", "UDP address to listen on (default 0.0.0.0:4433)", func(f *server.File) *string { return &f.Listen })
	o.str(fs, "cert", "PEM certificate chain", func(f *server.File) *string { return &f.Cert })
	o.str(fs, "key", "PEM private key", func(f *server.File) *string { return &f.Key })
	o.boolean(fs, "self-signed", "use a self-signed certificate, kept in --state-dir across restarts", func(f *server.File) *bool { return &f.SelfSigned })
	o.str(fs, "state-dir", "with --self-signed: keep the certificate and key here (default $HOME/.local/state/hetquic)", func(f *server.File) *string { return &f.StateDir })
	o.list(fs, "allow", "upstream app-servers host:port, comma-separated (added to the file's allow-list)", true, func(f *server.File) *[]string { return &f.Allow })
	o.list(fs, "allow-internal", "internal addresses or prefixes (10.1.2.3,192.168.0.0/24) allow-listed names may resolve to, comma-separated (added to the file's allow_internal)", true, func(f *server.File) *[]string { return &f.AllowInternal })
	o.str(fs, "token", "accept one client, id \"default\", with this token (>= 96 bits; see agent token)", func(f *server.File) *string { return &f.Token })
	o.str(fs, "token-file", "like --token, read from FILE (make one with: hetquic agent token FILE)", func(f *server.File) *string { return &f.TokenFile })
	o.str(fs, "tokens-dir", "accept one client per file in DIR: the file name is its id, the content its token", func(f *server.File) *string { return &f.TokensDir })
	o.str(fs, "metrics", "serve Prometheus metrics and /healthz on host:port", func(f *server.File) *string { return &f.Metrics })
	o.str(fs, "qlog-dir", "write a qlog trace per connection into DIR", func(f *server.File) *string { return &f.QlogDir })
	o.integer(fs, "memory-budget", "bytes all clients' work may reserve before new work gets 503 (default 512 MiB)", func(f *server.File, n int64) { f.MemoryBudget = n })
	return sf
}

// Load reads --config (if given), lays the flags over it and fills in the
// defaults. Errors name the file or flag that was wrong.
func (sf *serverFlags) Load() (server.File, error) {
	f, err := loadOver(sf.Config, server.LoadFile, &sf.over)
	if err != nil {
		return f, err
	}
	if f.Listen == "" {
		f.Listen = "0.0.0.0:4433"
	}
	if f.MemoryBudget < 0 {
		return f, errors.New("agent server: --memory-budget must be >= 0")
	}
	return f, nil
}

// clientFlags are the flags of "hetquic agent client": the YAML file
// (--config) and the flags laid over it. Load after the FlagSet is parsed.
type clientFlags struct {
	Config     string // --config
	cacheDir   string
	cacheBytes int64
	over       flagOverlay[clientfile.File]
}

// registerClientFlags registers ct-client's flags on fs.
func registerClientFlags(fs *flag.FlagSet) *clientFlags {
	cf := &clientFlags{}
	o := &cf.over
	fs.StringVar(&cf.Config, "config", "", "YAML configuration file (flags override it)")
	o.str(fs, "server", "ct-server UDP host:port", func(f *clientfile.File) *string { return &f.Server })
	o.str(fs, "server-name", "ct-server's TLS name (default: the host of --server)", func(f *clientfile.File) *string { return &f.ServerName })
	o.str(fs, "ca", "PEM certificate to trust for ct-server (e.g. from agent server --write-ca)", func(f *clientfile.File) *string { return &f.CA })
	o.str(fs, "token", "this client's token", func(f *clientfile.File) *string { return &f.Token })
	o.str(fs, "token-file", "read the token from FILE", func(f *clientfile.File) *string { return &f.TokenFile })
	o.list(fs, "paths", "local interfaces NAME=IP, NAME=INTERFACE (its address followed while running) or IP, each optionally /backup or /metered, comma-separated: one QUIC connection each (see --conns-per-path)", false, func(f *clientfile.File) *[]string { return &f.Paths })
	o.integer(fs, "conns-per-path", fmt.Sprintf("QUIC connections per interface, 1 to %d (default 1): more fill lossy links (agent/README.md, Lanes)", wire.MaxLanes), func(f *clientfile.File, n int64) { f.ConnsPerPath = int(n) })
	o.list(fs, "listen", "proxy listen addresses, comma-separated (default 127.0.0.1:8080)", false, func(f *clientfile.File) *[]string { return &f.Listen })
	o.list(fs, "socks", "SOCKS5 listen addresses, comma-separated (default none; e.g. 127.0.0.1:1080)", false, func(f *clientfile.File) *[]string { return &f.Socks })
	o.str(fs, "scheduler", fmt.Sprintf("path scheduler, one of %v (default %s)", pathchoice.SchedulerNames, pathchoice.DefaultScheduler), func(f *clientfile.File) *string { return &f.Scheduler })
	o.str(fs, "app-rule", "how apps are told apart: host, port or header:NAME (default host)", func(f *clientfile.File) *string { return &f.AppRule })
	o.millis(fs, "stall-timeout", "silence after which a response's path is checked and the stream moved (default 800ms)", func(f *clientfile.File) *int64 { return &f.StallTimeoutMS })
	o.str(fs, "metrics", "serve Prometheus metrics and /healthz on host:port", func(f *clientfile.File) *string { return &f.Metrics })
	o.str(fs, "qlog-dir", "write a qlog trace per connection into DIR", func(f *clientfile.File) *string { return &f.QlogDir })
	fs.StringVar(&cf.cacheDir, "cache-dir", "", "prefetch cache directory (enables prefetch)")
	fs.Int64Var(&cf.cacheBytes, "cache-bytes", 256<<20, "prefetch cache size bound in bytes")
	return cf
}

// Load reads --config (if given), lays the flags over it, reads the token
// file and fills in the defaults. Errors name what was wrong; warn
// receives warnings about the token file.
func (cf *clientFlags) Load(warn func(string)) (clientfile.File, error) {
	f, err := loadOver(cf.Config, clientfile.Load, &cf.over)
	if err != nil {
		return f, err
	}
	if cf.cacheDir != "" {
		f.Cache = &clientfile.CacheFile{Dir: cf.cacheDir, MaxBytes: cf.cacheBytes}
	}
	if f.Server == "" {
		return f, errors.New("agent client: give --server or server in --config")
	}
	host, _, err := net.SplitHostPort(f.Server)
	if err != nil {
		return f, fmt.Errorf("agent client: --server %q: %w", f.Server, err)
	}
	f.ServerName = cmp.Or(f.ServerName, host)
	if f.TokenFile != "" {
		if f.Token, err = identity.ReadTokenFile(f.TokenFile, warn); err != nil {
			return f, err
		}
	}
	if f.Token == "" {
		return f, errors.New("agent client: give --token or --token-file")
	}
	if len(f.Paths) == 0 {
		return f, errors.New("agent client: give --paths (one local address per interface)")
	}
	f.Scheduler = cmp.Or(f.Scheduler, pathchoice.DefaultScheduler)
	if len(f.Listen) == 0 {
		f.Listen = []string{"127.0.0.1:8080"}
	}
	return f, nil
}
