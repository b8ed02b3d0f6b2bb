package pcm

import (
	"errors"
	"fmt"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/pathsel"
)

// AddPath adds a local path while the client runs (an interface that came
// up) and returns its index, the PathID the selector knows it by. The
// selector tries it like any path without samples. Rebind mode's socket
// set is fixed at Dial: there it is an error.
func (c *Client) AddPath(lp LocalPath) (int, error) {
	if c.multi != nil {
		return -1, errors.New("pcm: AddPath: rebind mode's paths are fixed at Dial")
	}
	udp, err := c.cfg.ListenPacket(lp.Addr.AsSlice())
	if err != nil {
		return -1, fmt.Errorf("pcm: path %s: bind %s: %w", lp.Name, lp.Addr, err)
	}
	c.mu.Lock()
	i := len(c.paths)
	// A new slice, not an append: readers that took the old one under mu
	// keep a consistent view.
	c.paths = append(c.paths[:i:i], &pathState{LocalPath: lp, tr: &quic.Transport{Conn: udp}})
	c.mu.Unlock()
	c.local.set(udp.LocalAddr(), i)
	c.selMu.Lock()
	c.sel.AddPath(pathsel.PathID(i))
	c.selMu.Unlock()
	return i, nil
}

// RemovePath takes path i out for good (an interface that went away): the
// selector forgets it, its quic-go path closes (returning its connection
// ID), and its index is not reused; its socket is closed with the client. If
// the connection is on it, the connection first moves to another path as
// a failover does; with none that works, RemovePath fails and the path
// stays. Responses in flight on it stall and fail over (Get) or fail.
func (c *Client) RemovePath(i int) error {
	ctx := c.s().conn.Context()
	owned := c.lockSwitch(ctx)
	defer c.unlockSwitch(owned)
	if !owned {
		return c.Err()
	}
	if i < 0 || i >= len(c.paths) || c.paths[i].removed {
		return fmt.Errorf("pcm: RemovePath: no path %d", i)
	}
	ps := c.paths[i]
	if i == c.active {
		if moved, _ := c.moveAwayLocked(ctx, i); !moved {
			return fmt.Errorf("pcm: RemovePath: the connection is on %s and no other path works", ps.Name)
		}
	}
	ps.removed = true
	if ps.qp != nil {
		c.closePathLocked(i)
	}
	// The socket stays open until Close: closing a quic.Transport the
	// connection has been seen on closes the connection with it.
	if c.pin == i {
		c.pin = -1
	}
	c.selMu.Lock()
	c.sel.RemovePath(pathsel.PathID(i))
	c.selMu.Unlock()
	return nil
}

// pathName is path i's name; it takes c.mu (AddPath replaces the slice).
func (c *Client) pathName(i int) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.paths[i].Name
}

// numPaths is how many paths the client has had, removed ones included.
func (c *Client) numPaths() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.paths)
}
