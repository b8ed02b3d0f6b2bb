package server

import (
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/hetquic/hetquic/agent/wire"
	"github.com/quic-go/quic-go"
)

// udpFlowIdle ends a flow at ct-server that moved no datagram this long (a
// UDP association has no end of its own).
const udpFlowIdle = 2 * time.Minute

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
		buf := make([]byte, wire.MaxUDPPayload)
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
