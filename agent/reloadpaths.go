package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/pathchoice"
)

// newPath is path id on lp, its socket pc.
func newPath(id int, lp LocalPath, pc net.PacketConn) *path {
	return &path{id: id, LocalPath: lp, pc: pc, tr: &quic.Transport{Conn: pc}, bound: lp.Addr, want: lp.Addr}
}

// pathList is every path the client has had, retired ones included, by
// id. The slice is never written after it is published: use it freely.
func (c *Client) pathList() []*path {
	c.pathsMu.RLock()
	defer c.pathsMu.RUnlock()
	return c.paths
}

// activePaths are the paths not retired.
func (c *Client) activePaths() []*path {
	return slices.DeleteFunc(slices.Clone(c.pathList()), func(p *path) bool { return p.retired.Load() })
}

// startPath keeps p's connection up until the client closes or p is
// retired, and starts the interface watcher if p is the first path given
// by interface name. Called with c.mu held, or before the client is
// shared: Close's wait must not begin between its check and wg.Go.
func (c *Client) startPath(p *path) {
	ctx, stop := context.WithCancel(c.ctx)
	p.stop = stop
	c.wg.Go(func() {
		c.runPath(ctx, p)
		if p.retired.Load() {
			p.tr.Close()
			p.pc.Close()
		}
	})
	if p.Iface == "" || c.cfg.InterfacePoll <= 0 {
		return
	}
	if !c.watching {
		c.watching = true
		c.wg.Go(func() { c.watchInterfaces(c.ctx) })
	}
}

// ReloadPaths makes the client's paths those of want (SIGHUP): a running
// path that want has (samePath) stays as it is; one it lacks
// is retired — it takes no new work and its connection is closed, so its
// requests, stripes and tunnels carry on over the others from the byte
// where they stopped, as when a path dies; a path of want the client lacks
// is opened and dialled. Nothing changes when want is empty, names a path
// twice, or a new path's socket cannot be opened.
func (c *Client) ReloadPaths(want []LocalPath) error {
	if len(want) == 0 {
		return errors.New("agent client: reload: no local paths")
	}
	names := map[string]bool{}
	for _, lp := range want {
		if names[lp.Name] {
			return fmt.Errorf("agent client: reload: path name %q twice", lp.Name)
		}
		names[lp.Name] = true
	}
	c.mu.Lock()
	defer c.changed() // after the unlock: changed takes c.mu
	defer c.mu.Unlock()
	if c.closed {
		return errors.New("agent client: reload: closed")
	}
	cur := c.pathList()
	keep := make([]bool, len(want)) // want[i] runs already
	var gone []*path
	for _, p := range cur {
		if p.retired.Load() {
			continue
		}
		if i := slices.IndexFunc(want, func(lp LocalPath) bool { return samePath(p.LocalPath, lp) }); i >= 0 && !keep[i] {
			keep[i] = true
		} else {
			gone = append(gone, p)
		}
	}
	next := slices.Clone(cur)
	var added []*path
	for i, lp := range want {
		if keep[i] {
			continue
		}
		pc, err := c.cfg.ListenPacket(net.IP(lp.Addr.AsSlice()))
		if err != nil {
			for _, p := range added {
				p.tr.Close()
				p.pc.Close()
			}
			return fmt.Errorf("agent client: reload: path %s: bind %s: %w", lp.Name, lp.Addr, err)
		}
		p := newPath(len(next), lp, pc)
		next = append(next, p)
		added = append(added, p)
	}
	c.pathsMu.Lock()
	c.paths = next
	c.pathsMu.Unlock()
	for _, p := range gone {
		p.retired.Store(true)
		p.stop()
		c.cfg.Log.Info("path removed; its transfers move to the others", "path", p.Name)
	}
	for _, p := range added {
		c.startPath(p)
		c.cfg.Log.Info("path added", "path", p.Name, "addr", p.Addr.String())
	}
	c.tellScheduler(gone, added)
	return nil
}

// tellScheduler tells a scheduler with state per path (the learned one)
// of the paths gone and added: one it does not know it never chooses.
func (c *Client) tellScheduler(gone, added []*path) {
	ps, ok := c.cfg.Scheduler.(pathchoice.PathSet)
	if !ok {
		return
	}
	for _, p := range gone {
		if err := ps.RemovePath(p.id); err != nil {
			c.cfg.Log.Warn("scheduler: remove path", "path", p.Name, "err", err)
		}
	}
	for _, p := range added {
		if err := ps.AddPath(p.id); err != nil {
			c.cfg.Log.Warn("scheduler: add path", "path", p.Name, "err", err)
		}
	}
}

// samePath: a and b are the same path. One named by interface is the same
// whatever address its interface has now (watchInterfaces follows it), so
// a reload does not move its transfers for nothing.
func samePath(a, b LocalPath) bool {
	if a.Iface != "" {
		return a.Name == b.Name && a.Iface == b.Iface && a.Role == b.Role
	}
	return a == b
}

// ReloadAll applies a reloaded file: the paths want (ReloadPaths), then
// the policy p (Reload). p's pinned paths are checked against want first,
// so that a bad file changes neither.
func (c *Client) ReloadAll(want []LocalPath, p ClientPolicy) error {
	if p.Token == "" {
		return errors.New("agent client: reload: no token")
	}
	for app, name := range p.AppPaths {
		if !slices.ContainsFunc(want, func(lp LocalPath) bool { return lp.Name == name || lp.Iface == name }) {
			return fmt.Errorf("agent client: reload: app_paths: %s → %q: no such path", app, name)
		}
	}
	if err := c.ReloadPaths(want); err != nil {
		return err
	}
	return c.Reload(p)
}
