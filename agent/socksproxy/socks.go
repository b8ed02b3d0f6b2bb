package socksproxy

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/socks5"
	"github.com/hetquic/hetquic/agent/wire"
)

// No authentication (the proxy listens on loopback, like the HTTP one);
// CONNECT to an IPv4 or IPv6 address or a domain name (the name is
// resolved by ct-server, as curl --socks5-hostname asks). A SOCKS5
// CONNECT is a CONNECT tunnel in every other respect: the same allow-list
// at ct-server, the same tunnel gate (fair between apps, by target host
// unless the AppRule is "port"), the same resumable session that moves
// between paths. BIND is answered "command not supported" (0x07).

// Host is ct-client as the SOCKS5 front-end reaches it.
type Host interface {
	// Context ends when the client closes; every connection and
	// association ends with it.
	Context() context.Context
	// Go runs f on a goroutine the client waits for when it closes.
	Go(f func())
	Log() *slog.Logger
	// App names the app of a request for target (host:port, or "udp" for
	// an association) that came in on the local address local.
	App(target string, local net.Addr) string
	// Connect opens a CONNECT tunnel to target for app. When it cannot, or
	// ct-server refuses it, attach is nil and status is the HTTP status
	// that says why; otherwise attach writes reply to conn and carries the
	// bytes both ways (first: what the app sends) until the tunnel ends.
	Connect(ctx context.Context, app, target string) (attach func(conn net.Conn, reply []byte, first io.Reader), status int)
	// Pick returns the ID of a path for app's request, none of avoid,
	// and its connection to ct-server.
	Pick(ctx context.Context, app string, avoid map[int]bool) (int, *quic.Conn, error)
	// StreamSlot waits for one of the client's stream slots and returns
	// its release.
	StreamSlot(ctx context.Context) (func(), error)
	// Datagrams routes ct-server's datagrams to the flows they belong to.
	Datagrams() *wire.DatagramRoutes
	StallTimeout() time.Duration
	MaxAttempts() int
}

// handshakeTimeout bounds the greeting and request, as the HTTP proxy's
// HeaderTimeout bounds a request's head.
const handshakeTimeout = 5 * time.Second

// Serve runs a SOCKS5 proxy on l until l is closed (a closed Host
// context: nil) or fails.
func Serve(l net.Listener, h Host) error {
	for {
		conn, err := l.Accept()
		if err != nil {
			if h.Context().Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return err
		}
		h.Go(func() { serveConn(h, conn) })
	}
}

// serveConn runs one SOCKS5 client connection.
func serveConn(h Host, conn net.Conn) {
	conn.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReader(conn)
	ok, err := socks5.ReadGreeting(br)
	if err != nil || !ok {
		if err == nil {
			conn.Write([]byte{socks5.Version, socks5.NoMethod})
		}
		h.Log().Warn("SOCKS5 greeting refused", "remote", conn.RemoteAddr().String(), "err", err)
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
		h.Log().Warn("SOCKS5 request refused", "remote", conn.RemoteAddr().String(), "err", err)
		conn.Close()
		return
	}
	if req.Cmd == socks5.CmdUDP {
		conn.SetDeadline(time.Time{})
		associate(h, conn, br)
		return
	}
	if req.Cmd != socks5.CmdConnect {
		conn.Write(socks5.Reply(socks5.CmdUnsupported))
		h.Log().Warn("SOCKS5 command not supported", "cmd", req.Cmd, "target", req.Target)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	connect(h, conn, br, req.Target)
}

// connect is a SOCKS5 CONNECT: a CONNECT tunnel answered in SOCKS5.
func connect(h Host, conn net.Conn, br *bufio.Reader, target string) {
	target, err := wire.NormHostPort(target, "")
	if err != nil || strings.HasSuffix(target, ":0") {
		conn.Write(socks5.Reply(socks5.Refused))
		conn.Close()
		return
	}
	attach, status := h.Connect(h.Context(), h.App(target, conn.LocalAddr()), target)
	if attach == nil {
		conn.Write(socks5.Reply(socks5.Code(status)))
		conn.Close()
		return
	}
	var first io.Reader = conn
	if br.Buffered() > 0 {
		first = io.MultiReader(io.LimitReader(br, int64(br.Buffered())), conn)
	}
	attach(conn, socks5.Reply(socks5.OK), first)
}

// maxFlows bounds the targets of one UDP association.
const maxFlows = 64

// associate runs a UDP ASSOCIATE: a UDP socket on the control
// connection's local address relays the app's datagrams (from the address
// that sends first) to their targets as UDP flows, and the targets'
// answers back with the SOCKS5 header; all ends with the control
// connection.
func associate(h Host, ctrl net.Conn, br *bufio.Reader) {
	defer ctrl.Close()
	pc, reply := listenRelay(ctrl)
	if pc == nil {
		ctrl.Write(socks5.Reply(socks5.Failure))
		return
	}
	defer pc.Close()
	if _, err := ctrl.Write(reply); err != nil {
		return
	}
	ctx, cancel := context.WithCancel(h.Context())
	defer cancel()
	h.Go(func() { io.Copy(io.Discard, br); cancel(); pc.Close() }) // the association ends with its TCP connection
	context.AfterFunc(ctx, func() { ctrl.Close(); pc.Close() })
	r := &relay{h: h, pc: pc, app: h.App("udp", ctrl.LocalAddr()), flows: map[string]*flow{}}
	defer r.closeAll()
	buf := make([]byte, wire.MaxUDPPayload)
	for {
		n, from, err := pc.ReadFromUDP(buf)
		if err != nil {
			return
		}
		r.relay(ctx, from, buf[:n])
	}
}

// listenRelay opens the association's UDP socket on ctrl's local address
// and returns it with the SOCKS5 reply that gives its address (nil: no
// socket).
func listenRelay(ctrl net.Conn) (*net.UDPConn, []byte) {
	la, _ := ctrl.LocalAddr().(*net.TCPAddr)
	if la == nil {
		return nil, nil
	}
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: la.IP})
	if err != nil {
		return nil, nil
	}
	bound := pc.LocalAddr().(*net.UDPAddr).AddrPort()
	reply := []byte{socks5.Version, socks5.OK, 0}
	if bound.Addr().Unmap().Is4() {
		ip := bound.Addr().Unmap().As4()
		reply = append(append(reply, socks5.AtypIPv4), ip[:]...)
	} else {
		ip := bound.Addr().As16()
		reply = append(append(reply, socks5.AtypIPv6), ip[:]...)
	}
	return pc, binary.BigEndian.AppendUint16(reply, bound.Port())
}

// relay is one association's state: the app's address (the first that
// sent) and a flow per target.
type relay struct {
	h       Host
	pc      *net.UDPConn
	app     string
	appAddr *net.UDPAddr
	flows   map[string]*flow
	wmu     sync.Mutex // one write to the app at a time
}

// relay sends one datagram from the app (at from) on to its target's
// flow, opening the flow first.
func (r *relay) relay(ctx context.Context, from *net.UDPAddr, datagram []byte) {
	if r.appAddr == nil {
		r.appAddr = from
	} else if !from.IP.Equal(r.appAddr.IP) || from.Port != r.appAddr.Port {
		return // only the app that associated
	}
	target, addr, payload, err := socks5.ParseUDP(datagram)
	if err != nil {
		r.h.Log().Warn("SOCKS5 UDP datagram dropped", "err", err)
		return
	}
	if target, err = wire.NormHostPort(target, ""); err != nil {
		return
	}
	f := r.flows[target]
	if f == nil {
		if len(r.flows) >= maxFlows {
			return
		}
		head := append([]byte{0, 0, 0}, addr...)
		to := r.appAddr
		f, err = openFlow(ctx, r.h, r.app, target, func(p []byte) {
			r.wmu.Lock()
			defer r.wmu.Unlock()
			r.pc.WriteToUDP(append(head[:len(head):len(head)], p...), to)
		})
		if err != nil {
			r.h.Log().Warn("SOCKS5 UDP flow refused", "target", target, "err", err)
			return
		}
		r.flows[target] = f
	}
	if err := f.send(ctx, payload); err != nil {
		r.h.Log().Warn("SOCKS5 UDP send failed", "target", target, "err", err)
		f.close()
		delete(r.flows, target)
	}
}

func (r *relay) closeAll() {
	for _, f := range r.flows {
		f.close()
	}
}
