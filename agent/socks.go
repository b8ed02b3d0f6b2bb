package agent

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

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

// SOCKS5 protocol constants (RFC 1928).
const (
	socksVersion     = 5
	socksNoAuth      = 0x00
	socksNoMethod    = 0xff
	socksCmdConnect  = 0x01
	socksCmdBind     = 0x02
	socksCmdUDP      = 0x03
	socksAtypIPv4    = 0x01
	socksAtypDomain  = 0x03
	socksAtypIPv6    = 0x04
	socksOK          = 0x00
	socksFailure     = 0x01
	socksNotAllowed  = 0x02
	socksHostUnreach = 0x04
	socksRefused     = 0x05
	socksCmdUnsupp   = 0x07
	socksAtypUnsupp  = 0x08
)

// socksHandshakeTimeout bounds the greeting and request, as
// HeaderTimeout bounds an HTTP proxy request's head.
const socksHandshakeTimeout = 5 * time.Second

// socksRequest is a parsed SOCKS5 request: the command and its target as
// host:port (a domain name as given, an IPv6 address in brackets).
type socksRequest struct {
	cmd    byte
	target string
}

// errSocks is a malformed SOCKS5 message; code is the reply it gets.
type errSocks struct {
	code byte
	msg  string
}

func (e *errSocks) Error() string { return "socks5: " + e.msg }

// readSocksGreeting reads the method negotiation and says whether the
// client offers "no authentication".
func readSocksGreeting(r io.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, err
	}
	if h[0] != socksVersion {
		return false, &errSocks{socksFailure, fmt.Sprintf("version %d, want 5", h[0])}
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == socksNoAuth {
			return true, nil
		}
	}
	return false, nil
}

// readSocksRequest reads a SOCKS5 request (RFC 1928 §4).
func readSocksRequest(r io.Reader) (socksRequest, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return socksRequest{}, err
	}
	if h[0] != socksVersion {
		return socksRequest{}, &errSocks{socksFailure, fmt.Sprintf("request version %d, want 5", h[0])}
	}
	if h[2] != 0 {
		return socksRequest{}, &errSocks{socksFailure, "reserved byte not zero"}
	}
	host, err := readSocksAddr(r, h[3])
	if err != nil {
		return socksRequest{}, err
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return socksRequest{}, err
	}
	port := binary.BigEndian.Uint16(pb[:]) // 0 is valid in UDP ASSOCIATE
	return socksRequest{cmd: h[1], target: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// readSocksAddr reads an address of type atyp: the host part of a target.
func readSocksAddr(r io.Reader, atyp byte) (string, error) {
	switch atyp {
	case socksAtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case socksAtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).Unmap().String(), nil
	case socksAtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return "", err
		}
		if len(name) == 0 {
			return "", &errSocks{socksFailure, "empty domain name"}
		}
		if !isDNSName(name) {
			return "", &errSocks{socksFailure, fmt.Sprintf("domain name %q: only letters, digits, '-', '_' and '.'", name)}
		}
		return string(name), nil
	}
	return "", &errSocks{socksAtypUnsupp, fmt.Sprintf("address type %d", atyp)}
}

// isDNSName says whether name holds only what a host name may (letters,
// digits, '-', '_', '.'): anything else ("]", ":", "/", controls) would
// make the target unparsable or smuggle a second address into it.
func isDNSName(name []byte) bool {
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// socksReply is a reply with the given code and a zero bound address
// (ct-client's address toward the target is ct-server's, not worth
// telling; RFC 1928 lets the client ignore it for CONNECT).
func socksReply(code byte) []byte {
	return []byte{socksVersion, code, 0, socksAtypIPv4, 0, 0, 0, 0, 0, 0}
}

// socksCode maps an HTTP status of the tunnel's refusal to a SOCKS5 reply.
func socksCode(status int) byte {
	switch status {
	case http.StatusForbidden:
		return socksNotAllowed
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return socksHostUnreach
	case http.StatusBadRequest:
		return socksRefused
	}
	return socksFailure
}

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
	ok, err := readSocksGreeting(br)
	if err != nil || !ok {
		if err == nil {
			conn.Write([]byte{socksVersion, socksNoMethod})
		}
		c.cfg.Log.Warn("SOCKS5 greeting refused", "remote", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if _, err := conn.Write([]byte{socksVersion, socksNoAuth}); err != nil {
		conn.Close()
		return
	}
	req, err := readSocksRequest(br)
	if err != nil {
		var se *errSocks
		if errors.As(err, &se) {
			conn.Write(socksReply(se.code))
		}
		c.cfg.Log.Warn("SOCKS5 request refused", "remote", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if req.cmd == socksCmdUDP {
		conn.SetDeadline(time.Time{})
		c.socksUDP(conn, br)
		return
	}
	if req.cmd != socksCmdConnect {
		conn.Write(socksReply(socksCmdUnsupp))
		c.cfg.Log.Warn("SOCKS5 command not supported", "cmd", req.cmd, "target", req.target)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	c.socksConnect(conn, br, req.target)
}

// socksConnect is a SOCKS5 CONNECT: a CONNECT tunnel (openAppTunnel,
// attachApp) answered in SOCKS5.
func (c *Client) socksConnect(conn net.Conn, br *bufio.Reader, target string) {
	target, err := wire.NormHostPort(target, "")
	if err != nil || strings.HasSuffix(target, ":0") {
		conn.Write(socksReply(socksRefused))
		conn.Close()
		return
	}
	app := c.identifyTarget(target, conn.LocalAddr())
	st := c.app(app)
	o, code, err := c.openAppTunnel(c.ctx, app, target, st)
	if err != nil {
		conn.Write(socksReply(socksCode(code)))
		conn.Close()
		return
	}
	if o.resp.StatusCode != http.StatusOK {
		c.cfg.Log.Warn("SOCKS5 CONNECT refused by ct-server", "target", target, "status", o.resp.StatusCode, "reason", o.resp.Header.Get(wire.HdrError))
		conn.Write(socksReply(socksCode(o.resp.StatusCode)))
		o.refused()
		conn.Close()
		return
	}
	var first io.Reader = conn
	if br.Buffered() > 0 {
		first = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), conn)
	}
	c.attachApp(o, conn, socksReply(socksOK), first, st)
}

// parseSocksUDP splits a SOCKS5 UDP request header (RFC 1928 §7) off a
// datagram: the target as host:port, the raw address part (ATYP, address,
// port: replies carry it back) and the payload. Fragments are refused.
func parseSocksUDP(b []byte) (target string, addr, payload []byte, err error) {
	if len(b) < 4 {
		return "", nil, nil, errors.New("socks5 udp: short header")
	}
	if b[0] != 0 || b[1] != 0 {
		return "", nil, nil, errors.New("socks5 udp: reserved bytes not zero")
	}
	if b[2] != 0 {
		return "", nil, nil, errors.New("socks5 udp: fragments are not supported")
	}
	r := bytes.NewReader(b[4:])
	host, err := readSocksAddr(r, b[3])
	if err != nil {
		return "", nil, nil, err
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return "", nil, nil, err
	}
	port := binary.BigEndian.Uint16(pb[:])
	if port == 0 {
		return "", nil, nil, errors.New("socks5 udp: port 0")
	}
	end := len(b) - r.Len()
	return net.JoinHostPort(host, strconv.Itoa(int(port))), b[3:end], b[end:], nil
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
		ctrl.Write(socksReply(socksFailure))
		return
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: la.IP})
	if err != nil {
		ctrl.Write(socksReply(socksFailure))
		return
	}
	defer pc.Close()
	bound := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	reply := []byte{socksVersion, socksOK, 0}
	if bound.Addr().Unmap().Is4() {
		ip := bound.Addr().Unmap().As4()
		reply = append(append(reply, socksAtypIPv4), ip[:]...)
	} else {
		ip := bound.Addr().As16()
		reply = append(append(reply, socksAtypIPv6), ip[:]...)
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
		target, addr, payload, err := parseSocksUDP(buf[:n])
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
