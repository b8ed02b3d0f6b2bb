package agent

import (
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hetquic/hetquic/agent/ops"
)

// ClientPolicy is the part of ct-client's configuration that Reload
// replaces while it runs (SIGHUP in "hetquic agent client"): the token
// (from its file, read again) used by every hello from then on, and the
// apps' rule, priorities and pinned paths used by every request from then
// on. What is in progress keeps what it started with.
type ClientPolicy struct {
	Token    string
	AppRule  AppRule
	Priority map[string]int
	AppPaths map[string]string
}

// clientPolicy holds the running ClientPolicy.
type clientPolicy struct{ p atomic.Pointer[ClientPolicy] }

func (c *Client) policy() *ClientPolicy { return c.pol.p.Load() }

// Reload replaces the running ClientPolicy with p, checked first: a bad
// one leaves the running one as it was.
func (c *Client) Reload(p ClientPolicy) error {
	if p.Token == "" {
		return errors.New("agent client: reload: no token")
	}
	if p.AppRule.Kind == "" {
		p.AppRule.Kind = "host"
	}
	for app, name := range p.AppPaths {
		if !c.hasPath(name) {
			return fmt.Errorf("agent client: reload: app_paths: %s → %q: no such path", app, name)
		}
	}
	c.pol.p.Store(&p)
	c.cfg.Log.Info("reloaded", "app_rule", p.AppRule.Kind, "priorities", len(p.Priority), "app_paths", len(p.AppPaths))
	return nil
}

// hasPath: a path of this client is named name (lanes share their
// interface's name).
func (c *Client) hasPath(name string) bool {
	for _, p := range c.paths {
		if p.Name == name || p.Iface == name {
			return true
		}
	}
	return false
}

// ClientPolicy is the reloadable part of a loaded file (Client.Reload).
func (f ClientFile) ClientPolicy() (ClientPolicy, error) {
	p := ClientPolicy{Token: f.Token, Priority: f.Priority, AppPaths: f.AppPaths}
	if f.AppRule != "" {
		var err error
		if p.AppRule, err = ParseAppRule(f.AppRule); err != nil {
			return p, fmt.Errorf("agent client: %w", err)
		}
	}
	return p, nil
}

// RestartOnly names the settings that differ between f and g and that a
// reload does not apply (they need a restart): the paths and connections,
// listeners, scheduler, timeouts, cache, metrics and qlog.
func (f ClientFile) RestartOnly(g ClientFile) []string {
	return ops.Changed([]ops.Setting{
		{Name: "server", A: f.Server, B: g.Server}, {Name: "server_name", A: f.ServerName, B: g.ServerName}, {Name: "ca", A: f.CA, B: g.CA},
		{Name: "paths", A: f.Paths, B: g.Paths}, {Name: "conns_per_path", A: f.ConnsPerPath, B: g.ConnsPerPath},
		{Name: "listen", A: f.Listen, B: g.Listen}, {Name: "socks", A: f.Socks, B: g.Socks}, {Name: "scheduler", A: f.Scheduler, B: g.Scheduler},
		{Name: "stall_timeout_ms", A: f.StallTimeoutMS, B: g.StallTimeoutMS}, {Name: "idle_timeout_ms", A: f.IdleTimeoutMS, B: g.IdleTimeoutMS},
		{Name: "cache", A: f.Cache, B: g.Cache}, {Name: "metrics", A: f.Metrics, B: g.Metrics}, {Name: "qlog_dir", A: f.QlogDir, B: g.QlogDir},
	})
}
