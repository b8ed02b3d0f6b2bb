package agent

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/socks5"
	"github.com/hetquic/hetquic/agent/wire"
)

// SOCKS5 (RFC 1928) beside the HTTP proxy, for apps that speak SOCKS but
// not HTTP proxies: no authentication (the proxy listens on loopback, like
// the HTTP one), CONNECT to an IPv4 or IPv6 address or a domain name (the
// name is resolved by ct-server, as curl --socks5-hostname asks). A SOCKS5
// CONNECT is a CONNECT tunnel in every other respect: the same allow-list
// at ct-server, the same tunnel gate (fair between apps, by target host
// unless the AppRule is "port"), the same resumable session that moves
// between paths. UDP ASSOCIATE and BIND are answered "command not
// supported" (0x07): ct-client carries no UDP yet.

// socksHandshakeTimeout bounds the greeting and request, as
// HeaderTimeout bounds an HTTP proxy request's head.
const socksHandshakeTimeout = 5 * time.Second

// ServeSOCKS runs a SOCKS5 proxy on l until Close; see the comment at
// the top of socks.go.
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
	for {
		conn, err := l.Accept()
		if err != nil {
			if c.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		c.wg.Go(func() { c.serveSOCKSConn(conn) })
	}
}

// serveSOCKSConn runs one SOCKS5 client connection.
func (c *Client) serveSOCKSConn(conn net.Conn) {
	conn.SetDeadline(time.Now().Add(socksHandshakeTimeout))
	br := bufio.NewReader(conn)
	ok, err := socks5.ReadGreeting(br)
	if err != nil || !ok {
		if err == nil {
			conn.Write([]byte{socks5.Version, socks5.NoMethod})
		}
		c.cfg.Log.Warn("SOCKS5 greeting refused", "remote", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if _, err := conn.Write([]byte{socks5.Version, socks5.NoAuth}); err != nil {
		conn.Close()
		return
	}
	req, err := socks5.ReadRequest(br)
	if err != nil {
		var se *socks5.Error
		if errors.As(err, &se) {
			conn.Write(socks5.Reply(se.Code))
		}
		c.cfg.Log.Warn("SOCKS5 request refused", "remote", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if req.Cmd == socks5.CmdUDP {
		conn.SetDeadline(time.Time{})
		c.socksUDP(conn, br)
		return
	}
	if req.Cmd != socks5.CmdConnect {
		conn.Write(socks5.Reply(socks5.CmdUnsupported))
		c.cfg.Log.Warn("SOCKS5 command not supported", "cmd", req.Cmd, "target", req.Target)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	c.socksConnect(conn, br, req.Target)
}

// socksConnect is a SOCKS5 CONNECT: a CONNECT tunnel (openAppTunnel,
// attachApp) answered in SOCKS5.
func (c *Client) socksConnect(conn net.Conn, br *bufio.Reader, target string) {
	target, err := wire.NormHostPort(target, "")
	if err != nil || strings.HasSuffix(target, ":0") {
		conn.Write(socks5.Reply(socks5.Refused))
		conn.Close()
		return
	}
	app := c.identifyTarget(target, conn.LocalAddr())
	st := c.app(app)
	o, code, err := c.openAppTunnel(c.ctx, app, target, st)
	if err != nil {
		conn.Write(socks5.Reply(socks5.Code(code)))
		conn.Close()
		return
	}
	if o.resp.StatusCode != http.StatusOK {
		c.cfg.Log.Warn("SOCKS5 CONNECT refused by ct-server", "target", target, "status", o.resp.StatusCode, "reason", o.resp.Header.Get(wire.HdrError))
		conn.Write(socks5.Reply(socks5.Code(o.resp.StatusCode)))
		o.refused()
		conn.Close()
		return
	}
	var first io.Reader = conn
	if br.Buffered() > 0 {
		first = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), conn)
	}
	c.attachApp(o, conn, socks5.Reply(socks5.OK), first, st)
}

// socksUDPFlows bounds the targets of one UDP association.
const socksUDPFlows = 64

// socksUDP runs a UDP ASSOCIATE: a UDP socket on the control connection's
// local address relays the app's datagrams (from the address that sends
// first) to their targets as UDP flows, and the targets' answers back with
// the SOCKS5 header; all ends with the control connection.
func (c *Client) socksUDP(ctrl net.Conn, br *bufio.Reader) {
	defer ctrl.Close()
	la, _ := ctrl.LocalAddr().(*net.TCPAddr)
	if la == nil {
		ctrl.Write(socks5.Reply(socks5.Failure))
		return
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: la.IP})
	if err != nil {
		ctrl.Write(socks5.Reply(socks5.Failure))
		return
	}
	defer pc.Close()
	bound := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	reply := []byte{socks5.Version, socks5.OK, 0}
	if bound.Addr().Unmap().Is4() {
		ip := bound.Addr().Unmap().As4()
		reply = append(append(reply, socks5.AtypIPv4), ip[:]...)
	} else {
		ip := bound.Addr().As16()
		reply = append(append(reply, socks5.AtypIPv6), ip[:]...)
	}
	reply = binary.BigEndian.AppendUint16(reply, bound.Port())
	if _, err := ctrl.Write(reply); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	c.wg.Go(func() { io.Copy(io.Discard, br); cancel(); pc.Close() }) // the association ends with its TCP connection
	context.AfterFunc(ctx, func() { ctrl.Close(); pc.Close() })
	app := c.identifyTarget("udp", ctrl.LocalAddr())
	flows := map[string]*clientUDPFlow{}
	defer func() {
		for _, f := range flows {
			f.close()
		}
	}()
	var appAddr *net.UDPAddr
	var wmu sync.Mutex
	buf := make([]byte, wire.MaxUDPPayload)
	for {
		n, from, err := pc.ReadFromUDP(buf)
		if err != nil {
			return
		}
		if appAddr == nil {
			appAddr = from
		} else if !from.IP.Equal(appAddr.IP) || from.Port != appAddr.Port {
			continue // only the app that associated
		}
		target, addr, payload, err := socks5.ParseUDP(buf[:n])
		if err != nil {
			c.cfg.Log.Warn("SOCKS5 UDP datagram dropped", "err", err)
			continue
		}
		if target, err = wire.NormHostPort(target, ""); err != nil {
			continue
		}
		f := flows[target]
		if f == nil {
			if len(flows) >= socksUDPFlows {
				continue
			}
			head := append([]byte{0, 0, 0}, addr...)
			to := appAddr
			f, err = c.openUDP(ctx, app, target, func(p []byte) {
				wmu.Lock()
				defer wmu.Unlock()
				pc.WriteToUDP(append(head[:len(head):len(head)], p...), to)
			})
			if err != nil {
				c.cfg.Log.Warn("SOCKS5 UDP flow refused", "target", target, "err", err)
				continue
			}
			flows[target] = f
		}
		if err := f.send(ctx, payload); err != nil {
			c.cfg.Log.Warn("SOCKS5 UDP send failed", "target", target, "err", err)
			f.close()
			delete(flows, target)
		}
	}
}
