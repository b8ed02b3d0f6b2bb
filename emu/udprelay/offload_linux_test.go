package udprelay

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"

	"github.com/hetquic/hetquic/emu"
)

func testEngine(t *testing.T) *emu.Engine {
	t.Helper()
	e, err := emu.New(emu.Config{
		Scenario: parseScenario(t, "name: t\npaths:\n  - name: p\n"),
		Sink:     emu.SinkFunc(func(int, emu.Dir, []*emu.Packet) {}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

// TestSplitGRO checks that a GRO read becomes one packet per datagram, in
// order, with the datagrams' bytes and the read's source.
func TestSplitGRO(t *testing.T) {
	e := testEngine(t)
	from := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 11), Port: 9}
	var data []byte
	for i := range 4 {
		n := 100
		if i == 3 {
			n = 40 // the last segment of a GRO buffer may be shorter
		}
		data = append(data, bytes.Repeat([]byte{byte('a' + i)}, n)...)
	}
	tests := []struct {
		name string
		data []byte
		seg  int
		want []int // datagram sizes
	}{
		{"segments", data, 100, []int{100, 100, 100, 40}},
		{"no cmsg: one datagram", data[:300], 0, []int{300}},
		{"segment size = length", data[:100], 100, []int{100}},
		{"empty datagram", nil, 0, []int{0}},
		// A datagram over MaxPacket stays over it (MaxPacket+1), so the
		// engine drops it as malformed.
		{"oversized", make([]byte, 2*3000), 3000, []int{emu.DefaultMaxPacket + 1, emu.DefaultMaxPacket + 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rd := &reader{}
			rd.split(e, tt.data, tt.seg, from)
			var got []int
			off := 0
			for i, p := range rd.pkts {
				got = append(got, len(p.Data))
				if rd.from[i] != from {
					t.Errorf("packet %d: source %v, want %v", i, rd.from[i], from)
				}
				if len(p.Data) <= emu.DefaultMaxPacket && !bytes.Equal(p.Data, tt.data[off:off+len(p.Data)]) {
					t.Errorf("packet %d: wrong bytes", i)
				}
				off += max(tt.seg, len(p.Data))
				e.Free(p)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("sizes %v, want %v", got, tt.want)
			}
		})
	}
}

func pkt(f *flow, size int) *emu.Packet {
	return &emu.Packet{Data: make([]byte, size), Tag: f}
}

// TestGSORun checks which packets one GSO send may carry: consecutive, to
// the same flow, of the first one's size (the last may be shorter), within
// the kernel's segment and size limits.
func TestGSORun(t *testing.T) {
	a, b := &flow{}, &flow{}
	run := func(n int, f *flow, size int) []*emu.Packet {
		var out []*emu.Packet
		for range n {
			out = append(out, pkt(f, size))
		}
		return out
	}
	tests := []struct {
		name string
		pkts []*emu.Packet
		want int
	}{
		{"alone", run(1, a, 100), 1},
		{"equal", run(5, a, 100), 5},
		{"shorter last", slices.Concat(run(3, a, 100), run(1, a, 50), run(2, a, 100)), 4},
		{"larger next", slices.Concat(run(1, a, 100), run(1, a, 120)), 1},
		{"other flow", slices.Concat(run(2, a, 100), run(1, b, 100), run(1, a, 100)), 2},
		{"segment limit", run(maxSegments+6, a, 100), maxSegments},
		{"byte limit", run(60, a, 1200), maxGSOBytes / 1200},
	}
	for _, tt := range tests {
		if got := gsoRun(tt.pkts); got != tt.want {
			t.Errorf("%s: %d packets, want %d", tt.name, got, tt.want)
		}
	}
}

// fakeConn records the messages written to it; fail, if set, decides an
// error for a message (the write stops there, as sendmmsg does).
type fakeConn struct {
	mu    sync.Mutex
	sent  []sentMsg
	calls int
	fail  func(ipv4.Message) error
}

type sentMsg struct {
	to   string
	seg  int   // UDP_SEGMENT size, 0: none
	lens []int // the buffers' lengths
}

func (c *fakeConn) ReadBatch([]ipv4.Message, int) (int, error) { return 0, net.ErrClosed }

func (c *fakeConn) WriteBatch(ms []ipv4.Message, _ int) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls++
	for i, m := range ms {
		if c.fail != nil {
			if err := c.fail(m); err != nil {
				if i == 0 {
					return 0, err
				}
				return i, nil
			}
		}
		s := sentMsg{to: m.Addr.String(), seg: segmentOf(m.OOB)}
		for _, b := range m.Buffers {
			s.lens = append(s.lens, len(b))
		}
		c.sent = append(c.sent, s)
	}
	return len(ms), nil
}

// segmentOf reads a UDP_SEGMENT cmsg with the standard library's parser, to
// check putSegmentCmsg against an independent reading.
func segmentOf(oob []byte) int {
	cms, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return -1
	}
	for _, m := range cms {
		if m.Header.Level == unix.IPPROTO_UDP && m.Header.Type == unix.UDP_SEGMENT && len(m.Data) >= 2 {
			return int(binary.NativeEndian.Uint16(m.Data))
		}
	}
	return 0
}

func fakeRelay(listen *fakeConn, gso bool) *Relay {
	r := &Relay{
		listen: &udpSock{b: listen},
		server: net.UDPAddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:443")),
		out:    [][2]*sender{{newSender(), newSender()}},
	}
	r.listen.gso.Store(gso)
	return r
}

func fakeFlow(port uint16, gso bool) (*flow, *fakeConn) {
	c := &fakeConn{}
	f := &flow{clientUDP: net.UDPAddrFromAddrPort(netip.AddrPortFrom(netip.MustParseAddr("127.0.0.11"), port)), sock: &udpSock{b: c}}
	f.sock.gso.Store(gso)
	return f, c
}

// TestDeliverCoalesces checks what Deliver hands the kernel: one released
// batch becomes GSO messages of equal-size packets to one destination, each
// packet's bytes as they are, in release order; without GSO, one packet per
// message.
func TestDeliverCoalesces(t *testing.T) {
	for _, gso := range []bool{true, false} {
		t.Run(fmt.Sprintf("gso=%v", gso), func(t *testing.T) {
			listen := &fakeConn{}
			r := fakeRelay(listen, gso)
			f1, c1 := fakeFlow(1, gso)
			f2, c2 := fakeFlow(2, gso)
			batch := []*emu.Packet{pkt(f1, 100), pkt(f1, 100), pkt(f1, 50), pkt(f1, 100), pkt(f2, 100), pkt(f2, 100), pkt(f1, 100)}

			r.Deliver(0, emu.Up, batch)
			r.Deliver(0, emu.Down, batch)

			c1want := []sentMsg{{"127.0.0.1:443", 100, []int{100, 100, 50}}, {"127.0.0.1:443", 0, []int{100}}, {"127.0.0.1:443", 0, []int{100}}}
			c2want := []sentMsg{{"127.0.0.1:443", 100, []int{100, 100}}}
			lwant := []sentMsg{{"127.0.0.11:1", 100, []int{100, 100, 50}}, {"127.0.0.11:1", 0, []int{100}}, {"127.0.0.11:2", 100, []int{100, 100}}, {"127.0.0.11:1", 0, []int{100}}}
			if !gso {
				c1want, c2want, lwant = single(c1want), single(c2want), single(lwant)
			}
			check := func(name string, c *fakeConn, want []sentMsg) {
				t.Helper()
				if !slices.EqualFunc(c.sent, want, func(a, b sentMsg) bool {
					return a.to == b.to && a.seg == b.seg && slices.Equal(a.lens, b.lens)
				}) {
					t.Errorf("%s got %v, want %v", name, c.sent, want)
				}
			}
			check("flow 1 (up)", c1, c1want)
			check("flow 2 (up)", c2, c2want)
			check("listen (down)", listen, lwant)
			if r.writeErrs.Load() != 0 {
				t.Errorf("write errors %d", r.writeErrs.Load())
			}
		})
	}
}

// single is want without GSO: every buffer a message of its own.
func single(ms []sentMsg) []sentMsg {
	var out []sentMsg
	for _, m := range ms {
		for _, l := range m.lens {
			out = append(out, sentMsg{m.to, 0, []int{l}})
		}
	}
	return out
}

// TestDeliverGSOErrors checks the fallback after a GSO send fails: the
// packets go out one by one; EIO (the device cannot do GSO) also turns GSO
// off on that socket; errors on single sends count per packet.
func TestDeliverGSOErrors(t *testing.T) {
	eio := &os.SyscallError{Syscall: "sendmmsg", Err: syscall.EIO}
	einval := &os.SyscallError{Syscall: "sendmmsg", Err: syscall.EINVAL}
	failGSO := func(err error) func(ipv4.Message) error {
		return func(m ipv4.Message) error {
			if len(m.OOB) > 0 {
				return err
			}
			return nil
		}
	}
	for _, tt := range []struct {
		name    string
		fail    func(ipv4.Message) error
		gsoOff  bool
		errs    uint64
		singles int
	}{
		{"EIO", failGSO(eio), true, 0, 4},
		{"EINVAL", failGSO(einval), false, 0, 4},
		{"every send", func(ipv4.Message) error { return errors.New("no route") }, false, 4, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := fakeRelay(&fakeConn{}, true)
			f, c := fakeFlow(1, true)
			c.fail = tt.fail
			r.Deliver(0, emu.Up, []*emu.Packet{pkt(f, 100), pkt(f, 100), pkt(f, 100), pkt(f, 100)})
			if got := !f.sock.gso.Load(); got != tt.gsoOff {
				t.Errorf("GSO off %v, want %v", got, tt.gsoOff)
			}
			if got := r.writeErrs.Load(); got != tt.errs {
				t.Errorf("write errors %d, want %d", got, tt.errs)
			}
			if len(c.sent) != tt.singles {
				t.Errorf("sent %v, want %d single datagrams", c.sent, tt.singles)
			}
			for _, m := range c.sent {
				if m.seg != 0 || len(m.lens) != 1 {
					t.Errorf("message %v is not a single datagram", m)
				}
			}
		})
	}
	t.Run("EIO then", func(t *testing.T) {
		// After EIO the socket sends without GSO from the start.
		r := fakeRelay(&fakeConn{}, true)
		f, c := fakeFlow(1, true)
		c.fail = failGSO(eio)
		r.Deliver(0, emu.Up, []*emu.Packet{pkt(f, 100), pkt(f, 100)})
		c.sent, c.calls = nil, 0
		r.Deliver(0, emu.Up, []*emu.Packet{pkt(f, 100), pkt(f, 100)})
		if c.calls != 1 || len(c.sent) != 2 {
			t.Errorf("%d calls sent %v, want one call with 2 single datagrams", c.calls, c.sent)
		}
	})
}

// gsoPeer is a UDP socket that sends with GSO and reads with GRO where the
// kernel allows (as quic-go sends), so that the relay gets super-packets.
type gsoPeer struct {
	c        *net.UDPConn
	gso, gro bool
}

func newGSOPeer(t *testing.T, c *net.UDPConn) *gsoPeer {
	t.Helper()
	p := &gsoPeer{c: c}
	p.gso, p.gro = offloads(c)
	if !p.gso || !p.gro {
		t.Skip("the kernel grants no UDP GSO/GRO")
	}
	return p
}

// send sends dgrams to `to` in one GSO send (all of the first one's size
// but the last, which may be shorter).
func (p *gsoPeer) send(dgrams [][]byte, to netip.AddrPort) error {
	var oob []byte
	if len(dgrams) > 1 {
		oob = putSegmentCmsg(make([]byte, segmentCmsgLen), len(dgrams[0]))
	}
	_, _, err := p.c.WriteMsgUDPAddrPort(slices.Concat(dgrams...), oob, to)
	return err
}

// recv reads one GRO buffer and returns its datagrams and their source.
func (p *gsoPeer) recv(buf, oob []byte) ([][]byte, netip.AddrPort, error) {
	n, oobn, _, from, err := p.c.ReadMsgUDPAddrPort(buf, oob)
	if err != nil {
		return nil, from, err
	}
	seg := groSegment(oob[:oobn])
	if seg == 0 {
		seg = max(n, 1)
	}
	var out [][]byte
	for off := 0; off < n; off += seg {
		out = append(out, slices.Clone(buf[off:min(off+seg, n)]))
	}
	return out, from, nil
}

// echoGSO echoes each GRO buffer srv reads back as one GSO send until its
// socket fails (closes); the channel closes when it has stopped.
func echoGSO(srv *gsoPeer) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf, oob := make([]byte, 1<<16), make([]byte, 64)
		for {
			dgrams, from, err := srv.recv(buf, oob)
			if err != nil || srv.send(dgrams, from) != nil {
				return
			}
		}
	}()
	return done
}

// TestRelayGSOPeers sends GSO super-packets through a lossy relay both ways
// (a client and an echo server that send with GSO and read with GRO), with
// the relay's offloads and with the fallback forced (Config.NoOffload). The
// loss model must decide per datagram, identically in both modes for the
// same seed, and every delivered datagram must arrive intact.
func TestRelayGSOPeers(t *testing.T) {
	type result struct {
		stats emu.PathStats
		got   []int // indices of the datagrams the client got back
	}
	run := func(t *testing.T, noOffload bool) result {
		server, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
		if err != nil {
			t.Fatal(err)
		}
		defer server.Close()
		echoDone := echoGSO(newGSOPeer(t, server))
		defer func() { server.Close(); <-echoDone }()

		s := parseScenario(t, "name: lossy\npaths:\n  - name: p\n    up: {loss: 0.3}\n    down: {loss: 0.3}\n")
		cfg := loopbackConfig(s, server.LocalAddr().(*net.UDPAddr).AddrPort(), 7)
		cfg.NoOffload = noOffload
		r, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		if r.listen.gro == noOffload {
			t.Fatalf("relay GRO %v with NoOffload %v", r.listen.gro, noOffload)
		}
		conn, err := r.ListenPath(0)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		cl := newGSOPeer(t, conn)

		// 30 sends of 10 datagrams: 9 of 200 bytes and a shorter last one.
		const sends, per = 30, 10
		dgram := func(i int) []byte {
			n := 200
			if i%per == per-1 {
				n = 120
			}
			b := bytes.Repeat([]byte{byte(i)}, n)
			binary.BigEndian.PutUint32(b, uint32(i))
			return b
		}
		for s := range sends {
			var ds [][]byte
			for j := range per {
				ds = append(ds, dgram(s*per+j))
			}
			if err := cl.send(ds, r.Addr()); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Millisecond) // no socket buffer is to overflow
		}
		var res result
		buf, oob := make([]byte, 1<<16), make([]byte, 64)
		deadline := time.Now().Add(5 * time.Second)
		for {
			res.stats = r.Engine().Stats()[0]
			if res.stats.Up.PacketsIn == sends*per && res.stats.Down.PacketsIn == res.stats.Up.PacketsOut &&
				uint64(len(res.got)) == res.stats.Down.PacketsOut {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("stats %+v, client got %d", res.stats, len(res.got))
			}
			conn.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
			dgrams, _, err := cl.recv(buf, oob)
			if err != nil {
				continue
			}
			for _, d := range dgrams {
				i := int(binary.BigEndian.Uint32(d))
				if !bytes.Equal(d, dgram(i)) {
					t.Fatalf("datagram %d came back damaged (%d bytes)", i, len(d))
				}
				res.got = append(res.got, i)
			}
		}
		if st := r.Stats(); st.WriteErrors != 0 || st.StrayDown != 0 {
			t.Errorf("relay stats %+v", st)
		}
		return res
	}
	offload := run(t, false)
	fallback := run(t, true)
	for _, res := range []result{offload, fallback} {
		for _, l := range []emu.LinkStats{res.stats.Up, res.stats.Down} {
			if l.PacketsIn != l.PacketsOut+l.Dropped.Total() || l.Dropped.Total() != l.Dropped[emu.CauseLoss] {
				t.Errorf("link stats do not add up: %+v", l)
			}
		}
	}
	if offload.stats.Up.Dropped != fallback.stats.Up.Dropped || offload.stats.Down.Dropped != fallback.stats.Down.Dropped {
		t.Errorf("loss differs: offload up %v down %v, fallback up %v down %v",
			offload.stats.Up.Dropped, offload.stats.Down.Dropped, fallback.stats.Up.Dropped, fallback.stats.Down.Dropped)
	}
	if !slices.Equal(offload.got, fallback.got) {
		t.Errorf("delivered datagrams differ:\noffload  %v\nfallback %v", offload.got, fallback.got)
	}
	if n := offload.stats.Up.Dropped[emu.CauseLoss]; n == 0 || n == 300 {
		t.Errorf("up loss %d of 300: the loss model did not decide per datagram", n)
	}
}

// TestRelayGSOFlowLimit checks that the datagrams of a GRO read that the
// flow limit refuses are counted one by one.
func TestRelayGSOFlowLimit(t *testing.T) {
	echo := startEcho(t)
	r, err := New(Config{
		Scenario: parseScenario(t, "name: t\npaths:\n  - name: p\n"),
		Server:   echo.addr(),
		Paths:    LoopbackPathAddrs(1),
		MaxFlows: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var peers []*gsoPeer
	for range 2 {
		c, err := r.ListenPath(0)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		peers = append(peers, newGSOPeer(t, c))
	}
	dgrams := [][]byte{make([]byte, 100), make([]byte, 100), make([]byte, 100), make([]byte, 100), make([]byte, 60)}
	for _, p := range peers { // the first opens the one flow; the second is over the limit
		if err := p.send(dgrams, r.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for r.Stats().FlowLimit < 5 || r.Engine().Stats()[0].Up.PacketsIn < 5 {
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st, in := r.Stats(), r.Engine().Stats()[0].Up.PacketsIn; st.FlowLimit != 5 || in != 5 {
		t.Errorf("flow_limit %d, packets in %d; want 5 and 5", st.FlowLimit, in)
	}
}
