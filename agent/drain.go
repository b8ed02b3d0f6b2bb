package agent

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
)

// AppIdleTimeout closes an app's keep-alive connection that has carried
// no request for this long. Each costs ct-client a goroutine and buffers,
// and an app that opens connections and leaves them idle would otherwise
// hold them for ever (an abuse run left 2467 of 3000 open after 30 s);
// 30 s is longer than browsers keep an idle HTTP/1.1 proxy connection in
// use between page loads, and an app that waits longer simply reconnects.
const AppIdleTimeout = 30 * time.Second

// DefaultClientDrain is how long ct-client lets responses and tunnels in
// progress finish when it is stopped (SIGTERM) before resetting them:
// ct-server's own drain (--drain), so a stop of either side gives the
// same grace.
const DefaultClientDrain = 10 * time.Second

// trackConn is the proxy's http.Server.ConnState: it keeps the app
// connections with a request in progress, which Close resets.
func (c *Client) trackConn(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st == http.StateActive {
		c.active[conn] = true
	} else {
		delete(c.active, conn) // idle, closed, or hijacked (a tunnel: c.tunnels)
	}
}

// Shutdown drains ct-client: the proxy takes no new connections and
// closes idle ones; requests and tunnels in progress get until ctx ends to
// finish; then Close resets whatever is left (never a FIN on an
// incomplete response). It returns ctx's error when something was left.
func (c *Client) Shutdown(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	var servers []*http.Server
	for s := range c.servers {
		servers = append(servers, s)
	}
	c.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range servers {
		wg.Go(func() { s.Shutdown(ctx) }) // returns when its requests are done, or at ctx's end
	}
	wg.Wait()
	for c.inProgress() > 0 && wire.SleepCtx(ctx, 20*time.Millisecond) {
	}
	left := c.inProgress()
	c.Close()
	if left > 0 {
		return fmt.Errorf("agent client: drain: %w (%d requests or tunnels reset)", ctx.Err(), left)
	}
	return nil
}

// inProgress counts app connections with a request or tunnel in progress.
func (c *Client) inProgress() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active) + len(c.tunnels)
}
