package agent

import (
	"errors"
	"fmt"
	"sync/atomic"
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
	for _, p := range c.pathList() {
		if !p.retired.Load() && (p.Name == name || p.Iface == name) {
			return true
		}
	}
	return false
}
