package socksproxy

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

// flow is ct-client's side of one UDP flow to target: the stream and
// connection it is on now, reopened on a path that works when the
// connection has died.
type flow struct {
	h       Host
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

// openFlow starts a UDP flow to target (host:port) for app; deliver gets
// every datagram the target sends back.
func openFlow(ctx context.Context, h Host, app, target string, deliver func([]byte)) (*flow, error) {
	f := &flow{h: h, app: app, target: target, deliver: deliver}
	if err := f.open(ctx); err != nil {
		return nil, err
	}
	return f, nil
}

// open opens the flow's stream on a path (f.mu held or f not shared yet).
func (f *flow) open(ctx context.Context) error {
	h := f.h
	p, err := wire.UDPRequestPath(f.target)
	if err != nil {
		return err
	}
	release, err := h.StreamSlot(ctx)
	if err != nil {
		return err
	}
	avoid := map[int]bool{}
	for attempt := 0; attempt < h.MaxAttempts(); attempt++ {
		id, conn, err := h.Pick(ctx, f.app, avoid)
		if err != nil {
			release()
			return err
		}
		avoid[id] = true
		str, status, err := openStream(ctx, conn, p, h.StallTimeout())
		if err != nil {
			continue
		}
		if status != http.StatusSwitchingProtocols {
			release()
			return &refusedError{status}
		}
		f.str, f.conn, f.release = str, conn, release
		h.Datagrams().Add(conn, str.StreamID(), f.deliver)
		return nil
	}
	release()
	return errors.New("ct-server unreachable")
}

// refusedError is ct-server's refusal of a flow, by HTTP status.
type refusedError struct{ status int }

func (e *refusedError) Error() string { return fmt.Sprintf("connect-udp refused: status %d", e.status) }

// openStream sends the connect-udp request on conn and reads the head of
// the answer.
func openStream(ctx context.Context, conn *quic.Conn, p string, wait time.Duration) (*quic.Stream, int, error) {
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
func (f *flow) send(ctx context.Context, payload []byte) error {
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

func (f *flow) endLocked() {
	if f.str == nil {
		return
	}
	f.h.Datagrams().Remove(f.conn, f.str.StreamID())
	f.str.CancelRead(wire.CodeOK)
	f.str.Close()
	f.release()
	f.str = nil
}

// close ends the flow (ct-server closes its socket when the stream ends).
func (f *flow) close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.endLocked()
}
