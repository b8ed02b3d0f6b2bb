package socksproxy

import (
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/hetquic/hetquic/agent/internal/memquic"
	"github.com/hetquic/hetquic/agent/wire"
	"github.com/hetquic/hetquic/emu/memnet"
)

// The flow tests' in-memory network: a fake ct-server at udpCT, the
// client's paths at 10.8.0.1, 10.8.0.2.
var udpCT = netip.MustParseAddrPort("10.9.0.1:443")

// udpTarget is the target every flow asks for (ct-server echoes it).
const udpTarget = "10.6.0.53:53"

// fakeUDPCT is ct-server's connect-udp side, enough for a flow: it
// answers refuse (0: 101 Switching Protocols) and echoes each datagram of
// an accepted flow; flows lists the path each flow came from.
type fakeUDPCT struct {
	refuse int
	routes wire.DatagramRoutes
	mu     sync.Mutex
	flows  []netip.Addr
}

// flow answers one connect-udp request; an accepted flow's route echoes.
func (s *fakeUDPCT) flow(conn *quic.Conn, str *quic.Stream) {
	req, err := wire.NewHeadReader(str).ReadRequest()
	if err != nil || s.refuse != 0 {
		io.WriteString(str, "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n")
		str.Close()
		return
	}
	if target, err := wire.ParseUDPPath(req.URL.Path); err != nil || target != udpTarget {
		str.CancelWrite(wire.CodeOK)
		return
	}
	s.mu.Lock()
	s.flows = append(s.flows, memquic.From(conn))
	s.mu.Unlock()
	id := str.StreamID()
	s.routes.Add(conn, id, func(p []byte) { conn.SendDatagram(wire.AppendDatagram(nil, id, p)) })
	io.WriteString(str, "HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: "+wire.UDPUpgrade+"\r\n\r\n")
}

// udpHost is the client as a flow's Host, with paths on memnet: Pick
// takes the first path with a connection not in avoid; slots counts the
// stream slots held.
type udpHost struct {
	fakeHost
	mu    sync.Mutex
	conns []*quic.Conn // per path; nil: cut
	slots atomic.Int64
}

func (h *udpHost) Pick(_ context.Context, _ string, avoid map[int]bool) (int, *quic.Conn, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, c := range h.conns {
		if c != nil && !avoid[i] {
			return i, c, nil
		}
	}
	return 0, nil, errNoPath
}

func (h *udpHost) StreamSlot(context.Context) (func(), error) {
	h.slots.Add(1)
	return func() { h.slots.Add(-1) }, nil
}

// cut closes path i's connection.
func (h *udpHost) cut(i int) {
	h.mu.Lock()
	c := h.conns[i]
	h.conns[i] = nil
	h.mu.Unlock()
	c.CloseWithError(0, "cut")
}

// newUDPRig starts the fake ct-server and two connected paths whose
// datagrams go to the host's routes; it must run in the test's bubble.
func newUDPRig(t *testing.T, refuse int) (*udpHost, *fakeUDPCT, *memnet.Network) {
	t.Helper()
	n := memnet.New()
	srv := memquic.Listen(t, n, udpCT)
	ct := &fakeUDPCT{refuse: refuse}
	ctx, cancel := context.WithCancel(context.Background())
	h := &udpHost{fakeHost: fakeHost{ctx: ctx}}
	var wg sync.WaitGroup
	wg.Go(func() { srv.Serve(func(conn *quic.Conn) { ct.routes.Dispatch(context.Background(), conn) }, ct.flow) })
	for i := range 2 {
		tr := memquic.Transport(t, n, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 8, 0, byte(1 + i)}), 0))
		conn, err := srv.Dial(ctx, tr)
		if err != nil {
			t.Fatal(err)
		}
		h.conns = append(h.conns, conn)
		wg.Go(func() { h.routes.Dispatch(ctx, conn) })
	}
	t.Cleanup(func() { // before memquic's: the sockets close after
		cancel()
		for i := range h.conns {
			if h.conns[i] != nil {
				h.cut(i)
			}
		}
		srv.Close()
		wg.Wait()
	})
	return h, ct, n
}

// TestFlowReopens: a flow's datagrams come back through its route; when
// its path's connection has died, the next send opens the flow again on
// another path and goes through; close gives its stream slot back and
// ends it for good.
func TestFlowReopens(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h, ct, _ := newUDPRig(t, 0)
		got := make(chan string, 4)
		f, err := openFlow(h.ctx, h, "app", udpTarget, func(p []byte) { got <- string(p) })
		if err != nil {
			t.Fatal(err)
		}
		for i, msg := range []string{"one", "two"} {
			if i == 1 {
				h.cut(0)
			}
			if err := f.send(h.ctx, []byte(msg)); err != nil {
				t.Fatalf("send %q: %v", msg, err)
			}
			synctest.Wait()
			select {
			case back := <-got:
				if back != msg {
					t.Fatalf("echo %q, want %q", back, msg)
				}
			default:
				t.Fatalf("no echo of %q", msg)
			}
		}
		ct.mu.Lock()
		from := ct.flows
		ct.mu.Unlock()
		if len(from) != 2 || from[0] != netip.MustParseAddr("10.8.0.1") || from[1] != netip.MustParseAddr("10.8.0.2") {
			t.Fatalf("flows opened from %v, want p0 then p1", from)
		}
		if n := h.slots.Load(); n != 1 {
			t.Fatalf("%d stream slots held by one flow", n)
		}
		f.close()
		if n := h.slots.Load(); n != 0 {
			t.Fatalf("%d stream slots held after close", n)
		}
		if err := f.send(h.ctx, []byte("three")); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("send after close: %v, want net.ErrClosed", err)
		}
	})
}

// TestFlowNotOpened: a flow ct-server refuses says its status; one it
// never answers gives up when its stream's deadline passes; neither keeps
// a stream slot.
func TestFlowNotOpened(t *testing.T) {
	for _, c := range []struct {
		name   string
		refuse int
		silent bool
	}{
		{"refused", 403, false},
		{"ct-server silent", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				h, _, n := newUDPRig(t, c.refuse)
				if c.silent {
					n.SetDrop(udpCT.Addr(), true)
				}
				start := time.Now()
				_, err := openFlow(h.ctx, h, "app", udpTarget, func([]byte) {})
				var re *refusedError
				switch {
				case c.refuse != 0 && (!errors.As(err, &re) || re.status != c.refuse):
					t.Fatalf("open: %v, want refused with %d", err, c.refuse)
				case c.silent && (err == nil || time.Since(start) < 5*time.Second):
					t.Fatalf("open: %v after %v, want a failure after the stream's deadline (5 s)", err, time.Since(start))
				}
				if k := h.slots.Load(); k != 0 {
					t.Fatalf("%d stream slots held after a failed open", k)
				}
			})
		})
	}
}
