// Package clientfile is ct-client's YAML configuration ("hetquic agent
// client --config"): its fields, strict parsing and checks, and what it
// becomes — an agent.ClientConfig to start a client with, an
// agent.ClientPolicy to reload one with, and the settings that need a
// restart. It is apart from the client, which takes a ClientConfig and reads
// no file; ct-server's file is server.File.
package clientfile

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/cache"
	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/ops"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/yamlfile"
)

// File is the YAML configuration of "hetquic agent client".
type File struct {
	Server         string            `yaml:"server"`      // ct-server UDP host:port
	ServerName     string            `yaml:"server_name"` // TLS name (default: server's host)
	CA             string            `yaml:"ca"`          // PEM certificate to trust
	Token          string            `yaml:"token"`
	TokenFile      string            `yaml:"token_file"`
	Paths          []string          `yaml:"paths"`          // NAME=IP, one per interface
	ConnsPerPath   int               `yaml:"conns_per_path"` // QUIC connections per interface (default 1; see agent.Lanes)
	FixedLanes     bool              `yaml:"fixed_lanes"`    // no lanes added to lossy interfaces (agent/lanes.go)
	Listen         []string          `yaml:"listen"`         // proxy listen addresses
	Socks          []string          `yaml:"socks"`          // SOCKS5 listen addresses (none by default)
	Scheduler      string            `yaml:"scheduler"`      // see pathchoice.SchedulerNames
	AppRule        string            `yaml:"app_rule"`       // host | port | header:NAME
	Priority       map[string]int    `yaml:"priority"`       // app → priority
	AppPaths       map[string]string `yaml:"app_paths"`      // app → path name it is pinned to
	StallTimeoutMS int64             `yaml:"stall_timeout_ms"`
	IdleTimeoutMS  int64             `yaml:"idle_timeout_ms"`
	Cache          *CacheFile        `yaml:"cache"`
	Metrics        string            `yaml:"metrics"`
	QlogDir        string            `yaml:"qlog_dir"`
}

// CacheFile configures the prefetch cache.
type CacheFile struct {
	Dir         string `yaml:"dir"`
	MaxBytes    int64  `yaml:"max_bytes"`
	DefaultTTLS int64  `yaml:"default_ttl_s"` // freshness of responses that state none (default 600)
}

// Load reads and strictly decodes a client configuration.
func Load(name string) (File, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return File{}, err
	}
	return Parse(name, data)
}

// Parse strictly decodes and checks a client configuration read
// from name.
func Parse(name string, data []byte) (File, error) {
	var f File
	if err := yamlfile.Decode(name, data, &f); err != nil {
		return f, err
	}
	if f.ConnsPerPath < 0 || f.ConnsPerPath > wire.MaxLanes {
		return f, fmt.Errorf("%s: conns_per_path %d: want 1 to %d", name, f.ConnsPerPath, wire.MaxLanes)
	}
	if f.StallTimeoutMS < 0 || f.IdleTimeoutMS < 0 {
		return f, fmt.Errorf("%s: timeouts must be >= 0", name)
	}
	if f.Cache != nil && (f.Cache.Dir == "" || f.Cache.MaxBytes <= 0 || f.Cache.DefaultTTLS < 0) {
		return f, fmt.Errorf("%s: cache needs a dir and max_bytes > 0", name)
	}
	for app, p := range f.Priority {
		if p < 1 {
			return f, fmt.Errorf("%s: priority of %q must be >= 1", name, app)
		}
	}
	return f, nil
}

// Config turns a loaded file into an agent.ClientConfig: paths and lanes,
// scheduler, app rule, CA and cache. QUIC and Log are left to the caller.
func (f File) Config(now time.Time) (agent.ClientConfig, error) {
	cfg := agent.ClientConfig{Server: f.Server, ServerName: f.ServerName, Token: f.Token, Priority: f.Priority, AppPaths: f.AppPaths,
		StallTimeout: time.Duration(f.StallTimeoutMS) * time.Millisecond, IdleTimeout: time.Duration(f.IdleTimeoutMS) * time.Millisecond,
		FixedLanes: f.FixedLanes, TLS: &tls.Config{}}
	var err error
	if cfg.Paths, err = f.LocalPaths(); err != nil {
		return cfg, err
	}
	if cfg.Scheduler, err = pathchoice.NewScheduler(f.Scheduler, len(cfg.Paths), 1); err != nil {
		return cfg, fmt.Errorf("agent client: %w", err)
	}
	if f.AppRule != "" {
		if cfg.AppRule, err = agent.ParseAppRule(f.AppRule); err != nil {
			return cfg, fmt.Errorf("agent client: %w", err)
		}
	}
	if f.CA != "" {
		if _, err := identity.LoadCAFile(f.CA); err != nil {
			return cfg, fmt.Errorf("agent client: --ca: %w", err)
		}
		cfg.CAFile = f.CA // re-read before every dial
	}
	if f.Cache != nil {
		ttl := time.Duration(f.Cache.DefaultTTLS) * time.Second
		if ttl == 0 {
			ttl = 10 * time.Minute
		}
		if cfg.Cache, err = cache.OpenCache(f.Cache.Dir, f.Cache.MaxBytes, ttl, now); err != nil {
			return cfg, fmt.Errorf("agent client: %w", err)
		}
	}
	return cfg, nil
}

// LocalPaths are the file's paths, each as conns_per_path lanes.
func (f File) LocalPaths() ([]agent.LocalPath, error) {
	var ps []agent.LocalPath
	for _, p := range f.Paths {
		lp, err := agent.ParseLocalPath(p)
		if err != nil {
			return nil, fmt.Errorf("agent client: %w", err)
		}
		ps = append(ps, lp)
	}
	ps, err := agent.Lanes(ps, max(f.ConnsPerPath, 1))
	if err != nil {
		return nil, fmt.Errorf("agent client: %w", err)
	}
	return ps, nil
}

// Policy is the reloadable part of a loaded file (agent.Client.Reload).
func (f File) Policy() (agent.ClientPolicy, error) {
	p := agent.ClientPolicy{Token: f.Token, Priority: f.Priority, AppPaths: f.AppPaths}
	if f.AppRule != "" {
		var err error
		if p.AppRule, err = agent.ParseAppRule(f.AppRule); err != nil {
			return p, fmt.Errorf("agent client: %w", err)
		}
	}
	return p, nil
}

// RestartOnly names the settings that differ between f and g and that a
// reload does not apply (they need a restart): the server, the
// listeners, scheduler, timeouts, cache, metrics, qlog and fixed_lanes.
func (f File) RestartOnly(g File) []string {
	return ops.Changed([]ops.Setting{
		{Name: "server", A: f.Server, B: g.Server}, {Name: "server_name", A: f.ServerName, B: g.ServerName}, {Name: "ca", A: f.CA, B: g.CA},
		{Name: "listen", A: f.Listen, B: g.Listen}, {Name: "socks", A: f.Socks, B: g.Socks}, {Name: "scheduler", A: f.Scheduler, B: g.Scheduler},
		{Name: "stall_timeout_ms", A: f.StallTimeoutMS, B: g.StallTimeoutMS}, {Name: "idle_timeout_ms", A: f.IdleTimeoutMS, B: g.IdleTimeoutMS},
		{Name: "cache", A: f.Cache, B: g.Cache}, {Name: "metrics", A: f.Metrics, B: g.Metrics}, {Name: "qlog_dir", A: f.QlogDir, B: g.QlogDir},
		{Name: "fixed_lanes", A: f.FixedLanes, B: g.FixedLanes},
	})
}
