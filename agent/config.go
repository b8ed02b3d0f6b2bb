package agent

import (
	"crypto/tls"
	"fmt"
	"os"
	"time"

	"github.com/hetquic/hetquic/agent/cache"
	"github.com/hetquic/hetquic/agent/pathchoice"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/internal/yamlfile"
)

// ClientFile is the YAML configuration of "hetquic agent client".
type ClientFile struct {
	Server         string            `yaml:"server"`      // ct-server UDP host:port
	ServerName     string            `yaml:"server_name"` // TLS name (default: server's host)
	CA             string            `yaml:"ca"`          // PEM certificate to trust
	Token          string            `yaml:"token"`
	TokenFile      string            `yaml:"token_file"`
	Paths          []string          `yaml:"paths"`          // NAME=IP, one per interface
	ConnsPerPath   int               `yaml:"conns_per_path"` // QUIC connections per interface (default 1; see Lanes)
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

// LoadClientFile reads and strictly decodes a client configuration.
func LoadClientFile(name string) (ClientFile, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return ClientFile{}, err
	}
	return ParseClientFile(name, data)
}

// ParseClientFile strictly decodes and checks a client configuration read
// from name.
func ParseClientFile(name string, data []byte) (ClientFile, error) {
	var f ClientFile
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

// ClientConfig turns a loaded file into a ClientConfig: paths and lanes,
// scheduler, app rule, CA and cache. QUIC and Log are left to the caller.
func (f ClientFile) ClientConfig(now time.Time) (ClientConfig, error) {
	cfg := ClientConfig{Server: f.Server, ServerName: f.ServerName, Token: f.Token, Priority: f.Priority, AppPaths: f.AppPaths,
		StallTimeout: time.Duration(f.StallTimeoutMS) * time.Millisecond, IdleTimeout: time.Duration(f.IdleTimeoutMS) * time.Millisecond,
		TLS: &tls.Config{}}
	for _, p := range f.Paths {
		lp, err := ParseLocalPath(p)
		if err != nil {
			return cfg, fmt.Errorf("agent client: %w", err)
		}
		cfg.Paths = append(cfg.Paths, lp)
	}
	var err error
	if cfg.Paths, err = Lanes(cfg.Paths, max(f.ConnsPerPath, 1)); err != nil {
		return cfg, fmt.Errorf("agent client: %w", err)
	}
	if cfg.Scheduler, err = pathchoice.NewScheduler(f.Scheduler, len(cfg.Paths), 1); err != nil {
		return cfg, fmt.Errorf("agent client: %w", err)
	}
	if f.AppRule != "" {
		if cfg.AppRule, err = ParseAppRule(f.AppRule); err != nil {
			return cfg, fmt.Errorf("agent client: %w", err)
		}
	}
	if f.CA != "" {
		if _, err := LoadCAFile(f.CA); err != nil {
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
