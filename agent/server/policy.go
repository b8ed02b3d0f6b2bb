package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/hetquic/hetquic/agent/identity"
	"github.com/hetquic/hetquic/agent/wire"
)

// Policy is the part of a ct-server's configuration that Reload replaces
// while it runs (SIGHUP in "hetquic agent server"): who may connect, with
// what limits, and where they may go. The rest — listen address,
// certificate, memory budget, timeouts — needs a restart.
type Policy struct {
	Clients       []ClientAuth
	Limits        Limits // defaults for clients without their own
	Allow         []string
	AllowInternal []string
	Prefetch      []string
}

// policy is a checked Policy, as the server reads it (Server.pol).
type policy struct {
	allowList []string
	allow     map[string]bool // normalised host:port
	egress    *egress
	prefetch  []string
	clients   []*clientState
	hashes    [][32]byte // sha256 of each client's token, same order
}

// newPolicy checks p and builds what the server reads. A client whose id
// old knows keeps its state — its connections, work in progress and
// counters — with the new limits: a reload never resets what a client
// holds, so it cannot be used to exceed a limit.
func (s *Server) newPolicy(p Policy, old *policy) (*policy, error) {
	if len(p.Clients) == 0 {
		return nil, errors.New("agent server: no clients configured (there is no anonymous access)")
	}
	pol := &policy{allowList: p.Allow, allow: map[string]bool{}, prefetch: p.Prefetch}
	for _, a := range p.Allow {
		hp, err := wire.NormHostPort(a, "80")
		if err != nil {
			return nil, fmt.Errorf("agent server: allow %q: %w", a, err)
		}
		pol.allow[hp] = true
	}
	allowInternal, err := ParseAllowInternal(p.AllowInternal)
	if err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	pol.egress = &egress{allowInternal: allowInternal, resolver: s.cfg.Resolver, connect: s.cfg.Dial}
	if pol.egress.resolver == nil {
		pol.egress.resolver = net.DefaultResolver
	}
	if err := s.addClients(pol, p, old); err != nil {
		return nil, err
	}
	for _, u := range p.Prefetch {
		hp, err := wire.UpstreamOf(u)
		if err != nil {
			return nil, fmt.Errorf("agent server: prefetch %q: %w", u, err)
		}
		if !pol.allow[hp] {
			return nil, fmt.Errorf("agent server: prefetch %q: upstream %s is not in the allow-list", u, hp)
		}
	}
	return pol, nil
}

// addClients checks p's clients and adds them to pol, reusing old's state.
func (s *Server) addClients(pol *policy, p Policy, old *policy) error {
	kept := map[string]*clientState{}
	if old != nil {
		for _, cs := range old.clients {
			kept[cs.id] = cs
		}
	}
	defaults := p.Limits.withDefaults(DefaultLimits)
	seen := map[string]bool{}
	for i, c := range p.Clients {
		if c.ID == "" || len(c.Token) < 16 {
			return fmt.Errorf("agent server: client %d: needs an id and a token of at least 16 characters", i+1)
		}
		if seen[c.ID] {
			return fmt.Errorf("agent server: client id %q twice", c.ID)
		}
		if bits := identity.TokenBits(c.Token); bits < identity.MinTokenBits && !s.cfg.AllowWeakTokens {
			return fmt.Errorf("agent server: client %q: token too weak (about %.0f bits, want >= %d; make one with \"hetquic agent token\")", c.ID, bits, identity.MinTokenBits)
		}
		seen[c.ID] = true
		lim := defaults
		if c.Limits != nil {
			lim = c.Limits.withDefaults(defaults)
		}
		cs := kept[c.ID]
		if cs == nil {
			cs = &clientState{id: c.ID}
		}
		cs.setLimits(lim)
		pol.clients = append(pol.clients, cs)
		pol.hashes = append(pol.hashes, sha256.Sum256([]byte(c.Token)))
	}
	return nil
}

// Reload replaces the server's Policy while it runs. Connections and work
// in progress go on; a client whose token is gone (revoked) is refused at
// its next hello, and a new allow-list applies to the next request. On an
// error nothing changes.
func (s *Server) Reload(p Policy) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	pol, err := s.newPolicy(p, s.pol.Load())
	if err != nil {
		return err
	}
	s.pol.Store(pol)
	s.cfg.Log.Info("reloaded", "clients", len(pol.clients), "allow", len(pol.allowList))
	if s.ln != nil && s.ctx.Err() == nil {
		s.wg.Add(1)
		go s.warnEgress()
	}
	return nil
}

// dialUpstream dials an upstream under the current egress rules.
func (s *Server) dialUpstream(ctx context.Context, network, hostport string) (net.Conn, error) {
	return s.pol.Load().egress.dial(ctx, network, hostport)
}

// warnEgress logs the allow-list names that resolve to internal
// addresses (in the background: a slow resolver must not delay serving).
func (s *Server) warnEgress() {
	defer s.wg.Done()
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Second)
	defer cancel()
	pol := s.pol.Load()
	for _, w := range pol.egress.warnInternal(ctx, pol.allowList) {
		s.cfg.Log.Warn(w)
	}
}

// setLimits and currentLimits guard a client's limits, which Reload may
// change while its work runs.
func (c *clientState) setLimits(l Limits) {
	c.mu.Lock()
	c.limits = l
	c.mu.Unlock()
}

func (c *clientState) currentLimits() Limits {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limits
}
