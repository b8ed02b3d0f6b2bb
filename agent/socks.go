package agent

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/socksproxy"
	"github.com/hetquic/hetquic/agent/wire"
)

// ServeSOCKS runs a SOCKS5 proxy (package socksproxy) on l until Close.
func (c *Client) ServeSOCKS(l net.Listener) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		l.Close()
		return net.ErrClosed
	}
	c.socksListeners[l] = struct{}{}
	c.wg.Add(1)
	c.mu.Unlock()
	defer c.wg.Done()
	return socksproxy.Serve(l, socksHost{c})
}

// socksHost is the client as its SOCKS5 front-end's Host.
type socksHost struct{ c *Client }

func (h socksHost) Context() context.Context { return h.c.ctx }
func (h socksHost) Go(f func())              { h.c.wg.Go(f) }
func (h socksHost) Log() *slog.Logger        { return h.c.cfg.Log }
func (h socksHost) App(target string, local net.Addr) string {
	return h.c.identifyTarget(target, local)
}
func (h socksHost) StreamSlot(ctx context.Context) (func(), error) { return h.c.streamSlot(ctx) }
func (h socksHost) Datagrams() *wire.DatagramRoutes                { return &h.c.udp }
func (h socksHost) StallTimeout() time.Duration                    { return h.c.cfg.StallTimeout }
func (h socksHost) MaxAttempts() int                               { return h.c.cfg.MaxAttempts }

func (h socksHost) Pick(ctx context.Context, app string, avoid map[int]bool) (int, *quic.Conn, error) {
	p, conn, err := h.c.pick(ctx, h.c.request(app), avoid)
	if err != nil {
		return 0, nil, err
	}
	return p.id, conn, nil
}

// Connect is a SOCKS5 CONNECT's tunnel: openAppTunnel, then attachApp.
func (h socksHost) Connect(ctx context.Context, app, target string) (func(net.Conn, []byte, io.Reader), int) {
	st := h.c.app(app)
	o, code, err := h.c.openAppTunnel(ctx, app, target, st)
	if err != nil {
		return nil, code
	}
	if o.resp.StatusCode != http.StatusOK {
		h.c.cfg.Log.Warn("SOCKS5 CONNECT refused by ct-server", "target", target, "status", o.resp.StatusCode, "reason", o.resp.Header.Get(wire.HdrError))
		o.refused()
		return nil, o.resp.StatusCode
	}
	return func(conn net.Conn, reply []byte, first io.Reader) { h.c.attachApp(o, conn, reply, first, st) }, 0
}
