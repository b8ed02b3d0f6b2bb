package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/wire"
)

// UDP over the agent: the protocol is in package wire's comment.

// Limits of a UDP flow.
const (
	// udpFlowIdle ends a flow at ct-server that moved no datagram this
	// long (a UDP association has no end of its own).
	udpFlowIdle = 2 * time.Minute
	// maxUDPPayload is the largest UDP payload read from a socket.
	maxUDPPayload = 64 << 10
)

// ---- ct-server ----

// udpFlow runs a connect-udp stream at ct-server: admitted already, the
// target allowed. It answers 101, relays datagrams both ways and ends
// with the stream, the connection, or udpFlowIdle without traffic.
func (s *Server) udpFlow(conn *quic.Conn, str *quic.Stream, target string) {
	// Resolved, checked against the egress rules and pinned, as a TCP
	// upstream is.
	up, err := s.dialUpstream(s.ctx, "udp", target)
	if err != nil {
		str.CancelRead(wire.CodeOK)
		s.upstreamFailed(str, target, err)
		return
	}
	defer up.Close()
	active := make(chan struct{}, 1)
	touch := func() {
		select {
		case active <- struct{}{}:
		default:
		}
	}
	// The route exists before the 101 goes out: ct-client sends its first
	// datagram as soon as it reads the 101, and an unrouted one is dropped.
	s.udp.Add(conn, str.StreamID(), func(p []byte) { up.Write(p); touch() })
	defer s.udp.Remove(conn, str.StreamID())
	resp := &http.Response{StatusCode: http.StatusSwitchingProtocols, ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Connection": {"Upgrade"}, "Upgrade": {wire.UDPUpgrade}, "Capsule-Protocol": {"?1"}}}
	if err := resp.Write(str); err != nil {
		return
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	defer up.Close() // ends the reader below
	wg.Go(func() {
		buf := make([]byte, maxUDPPayload)
		var out []byte
		for {
			n, err := up.Read(buf)
			if err != nil {
				if errors.Is(err, net.ErrClosed) {
					return
				}
				continue // an ICMP error on a connected socket: UDP goes on
			}
			out = wire.AppendDatagram(out[:0], str.StreamID(), buf[:n])
			conn.SendDatagram(out) // too large or queue full: dropped, as UDP
			touch()
		}
	})
	ended := make(chan struct{})
	wg.Go(func() { io.Copy(io.Discard, str); close(ended) }) // no capsules are defined; the end ends the flow
	idle := time.NewTimer(udpFlowIdle)
	defer idle.Stop()
	for {
		select {
		case <-active:
			idle.Reset(udpFlowIdle)
			continue
		case <-ended:
		case <-idle.C:
			str.CancelRead(wire.CodeOK)
		case <-conn.Context().Done():
		case <-s.ctx.Done():
			str.CancelRead(wire.CodeShutdown)
		}
		str.Close()
		return
	}
}

// ---- ct-client ----

// clientUDPFlow is ct-client's side of one UDP flow to target: the stream
// and connection it is on now, reopened on a path that works when the
// connection has died.
type clientUDPFlow struct {
	c       *Client
	app     string
	target  string
	deliver func([]byte) // a datagram from the target, for the app

	mu      sync.Mutex
	str     *quic.Stream
	conn    *quic.Conn
	release func()
	closed  bool
	out     []byte
}

// openUDP starts a UDP flow to target (host:port) for app; deliver gets
// every datagram the target sends back.
func (c *Client) openUDP(ctx context.Context, app, target string, deliver func([]byte)) (*clientUDPFlow, error) {
	f := &clientUDPFlow{c: c, app: app, target: target, deliver: deliver}
	if err := f.open(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// open opens the flow's stream on a path (f.mu held or f not shared yet).
func (f *clientUDPFlow) open(ctx context.Context) error {
	c := f.c
	p, err := wire.UDPRequestPath(f.target)
	if err != nil {
		return err
	}
	release, err := c.streamSlot(ctx)
	if err != nil {
		return err
	}
	avoid := map[int]bool{}
	for attempt := 0; attempt < c.cfg.MaxAttempts; attempt++ {
		pth, conn, err := c.pick(ctx, c.request(f.app), avoid)
		if err != nil {
			release()
			return err
		}
		avoid[pth.id] = true
		str, status, err := openUDPStream(ctx, conn, p, c.cfg.StallTimeout)
		if err != nil {
			continue
		}
		if status != http.StatusSwitchingProtocols {
			release()
			return &udpRefused{status}
		}
		f.str, f.conn, f.release = str, conn, release
		c.udp.Add(conn, str.StreamID(), f.deliver)
		return nil
	}
	release()
	return errors.New("ct-server unreachable")
}

// udpRefused is ct-server's refusal of a flow, by HTTP status.
type udpRefused struct{ status int }

func (e *udpRefused) Error() string { return fmt.Sprintf("connect-udp refused: status %d", e.status) }

// openUDPStream sends the connect-udp request on conn and reads the head
// of the answer.
func openUDPStream(ctx context.Context, conn *quic.Conn, p string, wait time.Duration) (*quic.Stream, int, error) {
	octx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	str, err := conn.OpenStreamSync(octx)
	if err != nil {
		return nil, 0, err
	}
	str.SetDeadline(time.Now().Add(max(4*wait, 5*time.Second)))
	head := "GET " + p + " HTTP/1.1\r\nHost: ct\r\nConnection: Upgrade\r\nUpgrade: " + wire.UDPUpgrade + "\r\nCapsule-Protocol: ?1\r\n\r\n"
	if _, err := io.WriteString(str, head); err != nil {
		str.CancelRead(wire.CodeOK)
		str.CancelWrite(wire.CodeOK)
		return nil, 0, err
	}
	resp, err := wire.NewHeadReader(str).ReadResponse(&http.Request{Method: http.MethodGet})
	if err != nil {
		str.CancelRead(wire.CodeOK)
		str.CancelWrite(wire.CodeOK)
		return nil, 0, err
	}
	str.SetDeadline(time.Time{})
	if resp.StatusCode != http.StatusSwitchingProtocols {
		str.CancelRead(wire.CodeOK)
		str.CancelWrite(wire.CodeOK)
	}
	return str, resp.StatusCode, nil
}

// send sends one UDP payload to the target; a flow whose connection died
// is opened again first (on another path).
func (f *clientUDPFlow) send(ctx context.Context, payload []byte) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return net.ErrClosed
	}
	if f.conn.Context().Err() != nil {
		f.endLocked()
		if err := f.open(ctx); err != nil {
			f.closed = true
			return err
		}
	}
	f.out = wire.AppendDatagram(f.out[:0], f.str.StreamID(), payload)
	err := f.conn.SendDatagram(f.out)
	var tooLarge *quic.DatagramTooLargeError
	if errors.As(err, &tooLarge) {
		return nil // dropped, as an oversized UDP datagram is
	}
	return err
}

func (f *clientUDPFlow) endLocked() {
	if f.str == nil {
		return
	}
	f.c.udp.Remove(f.conn, f.str.StreamID())
	f.str.CancelRead(wire.CodeOK)
	f.str.Close()
	f.release()
	f.str = nil
}

// close ends the flow (ct-server closes its socket when the stream ends).
func (f *clientUDPFlow) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.endLocked()
}
