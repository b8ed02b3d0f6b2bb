// Package udprelay is the emulator's no-root front end: a UDP relay on
// loopback that carries each path of a scenario between a multi-homed client
// and a real server.
//
// The client binds one loopback address per path (127.0.0.11, 127.0.0.12, …)
// and sends to the relay's listen address. The relay tells the paths apart by
// the client's source IP, runs each packet through that path's upstream link
// of an emu.Engine, and forwards it to the server from a socket of its own
// per client address (like a NAT), so the server sees a different client
// address per path: a real QUIC migration. Replies come back through the
// path's downstream link and leave from the listen address to the client
// address. Any UDP protocol works.
//
// Packets from an address that is not a path's are counted and dropped, and
// so are oversized and empty datagrams. Per-client-address state (a socket
// and a goroutine) expires after IdleTimeout without traffic, so client churn
// leaks nothing; Close ends every goroutine and closes every socket.
//
// On Linux the sockets use UDP GRO and GSO where the kernel grants them, so
// that one system call moves many datagrams; each datagram still goes
// through the engine on its own (see reader.read and Relay.Deliver).
package udprelay

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"

	"github.com/hetquic/hetquic/emu"
	"github.com/hetquic/hetquic/scenario"
)

// batchSize is how many messages one recvmmsg/sendmmsg moves at most
// without GRO (a message is then one datagram).
const batchSize = 32

// With GRO a message is a buffer of up to 64 KB that may hold many
// datagrams, so a read takes fewer, larger messages: groBatch of groBufSize
// bytes (512 KB per reading goroutine, one per client address and one for
// the listen socket).
const (
	groBatch   = 8
	groBufSize = 1 << 16
)

// A GSO send carries at most maxSegments datagrams (the kernel's
// UDP_MAX_SEGMENTS since Linux 4.18) and at most maxGSOBytes of payload
// (the largest UDP payload over IPv4).
const (
	maxSegments = 64
	maxGSOBytes = 65507
)

// batchConn is the batch I/O of golang.org/x/net's ipv4 and ipv6 PacketConn
// (recvmmsg/sendmmsg on Linux; one datagram per call elsewhere).
type batchConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

func newBatchConn(c *net.UDPConn) batchConn {
	if a := c.LocalAddr().(*net.UDPAddr).AddrPort().Addr(); a.Is4() || a.Is4In6() {
		return ipv4.NewPacketConn(c)
	}
	return ipv6.NewPacketConn(c)
}

// udpSock is one of the relay's sockets: its batch I/O and the UDP offloads
// the kernel granted when it was set up.
type udpSock struct {
	c   *net.UDPConn
	b   batchConn
	gro bool // reads may return GRO super-packets; fixed at setup
	// gso: sends may carry UDP_SEGMENT. It is cleared for good when a send
	// shows that the route's device cannot do it (see isGSOError).
	gso atomic.Bool
}

// newSock sets c up: large buffers and, unless noOffload, whatever of GSO
// and GRO the kernel grants (checked once here, not per send).
func newSock(c *net.UDPConn, noOffload bool) *udpSock {
	c.SetReadBuffer(socketBuffer)
	c.SetWriteBuffer(socketBuffer)
	s := &udpSock{c: c, b: newBatchConn(c)}
	if !noOffload {
		gso, gro := offloads(c)
		s.gro = gro
		s.gso.Store(gso)
	}
	return s
}

// socketBuffer is the send and receive buffer the relay asks for on its
// sockets (the kernel caps it at net.core.[rw]mem_max): bursts at line rate
// must not overflow a default 208 KB buffer while a goroutine is descheduled.
const socketBuffer = 4 << 20

// Defaults of Config.
const (
	// DefaultIdleTimeout is how long a client address keeps its upstream
	// socket without traffic. It is above QUIC's usual 30 s idle timeout, so
	// a live connection never loses its server-side address.
	DefaultIdleTimeout = 60 * time.Second
	// DefaultMaxFlows bounds the client addresses served at once (each has
	// a socket and a goroutine); packets from more are dropped and counted.
	DefaultMaxFlows = 1024
)

// Config configures a Relay.
type Config struct {
	Scenario *scenario.Scenario // required
	// Listen is the address clients send to, e.g. 127.0.0.1:4433 (port 0
	// picks one; see Relay.Addr). Zero means 127.0.0.1:0.
	Listen netip.AddrPort
	// Server is where the relay forwards to.
	Server netip.AddrPort
	// Paths are the client source IPs, one per scenario path, in the
	// scenario's path order.
	Paths []netip.Addr

	Seed        uint64
	Clock       emu.Clock    // nil: emu.SystemClock
	Log         emu.EventLog // optional per-packet log
	MaxPacket   int          // 0: emu.DefaultMaxPacket
	NoEvents    bool         // do not run the scenario's timed events
	IdleTimeout time.Duration
	MaxFlows    int
	// NoOffload makes the relay move one datagram per message even where
	// the kernel offers UDP GSO and GRO (to compare, or to rule them out).
	NoOffload bool
}

// Stats are the relay's own counters (the engine counts the rest).
type Stats struct {
	UnknownSource uint64 `json:"unknown_source"` // packets from no path's address
	StrayDown     uint64 `json:"stray_down"`     // packets to a flow socket not from the server
	FlowLimit     uint64 `json:"flow_limit"`     // packets dropped: too many client addresses
	WriteErrors   uint64 `json:"write_errors"`   // packets the kernel refused to send
	FlowsOpened   uint64 `json:"flows_opened"`
	FlowsExpired  uint64 `json:"flows_expired"`
	FlowsActive   int    `json:"flows_active"`
}

// Relay is a running relay.
type Relay struct {
	cfg    Config
	eng    *emu.Engine
	listen *udpSock
	server *net.UDPAddr
	paths  []netip.Addr
	// flowNet and flowLocal are where flow sockets bind.
	flowNet   string
	flowLocal netip.AddrPort
	// out is Deliver's scratch per link (path, dir).
	out [][2]*sender

	mu    sync.Mutex // guards flows
	flows map[netip.AddrPort]*flow

	unknown, stray, flowLimit, writeErrs, opened, expired atomic.Uint64

	done    chan struct{}
	closing sync.Once
	wg      sync.WaitGroup
}

// flow is one client address: its path and its socket towards the server.
type flow struct {
	client    netip.AddrPort
	clientUDP *net.UDPAddr // the same, for batch writes
	path      int
	sock      *udpSock
	last      atomic.Int64 // unix ns of the last packet either way
}

// New starts a relay: it binds Listen, builds the engine and serves until
// Close.
func New(cfg Config) (*Relay, error) {
	if cfg.Scenario == nil {
		return nil, errors.New("udprelay: no scenario")
	}
	if len(cfg.Paths) != len(cfg.Scenario.Paths) {
		return nil, fmt.Errorf("paths: %d addresses for %d scenario paths (give one per path, in order)", len(cfg.Paths), len(cfg.Scenario.Paths))
	}
	cfg.Paths = append([]netip.Addr(nil), cfg.Paths...)
	if !cfg.Listen.IsValid() {
		cfg.Listen = netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0)
	}
	seen := map[netip.Addr]bool{}
	for i, a := range cfg.Paths {
		a = a.Unmap()
		if !a.IsValid() || seen[a] {
			return nil, fmt.Errorf("paths[%d]: %v is invalid or given twice", i, a)
		}
		seen[a] = true
		cfg.Paths[i] = a
	}
	if !cfg.Server.IsValid() {
		return nil, errors.New("server: missing address")
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxFlows <= 0 {
		cfg.MaxFlows = DefaultMaxFlows
	}
	if cfg.MaxPacket <= 0 {
		cfg.MaxPacket = emu.DefaultMaxPacket
	}
	ln, err := net.ListenUDP("udp", net.UDPAddrFromAddrPort(cfg.Listen))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	// Flow sockets: on loopback when the server is (so nothing listens on
	// other interfaces), else on the wildcard address of the server's family.
	flowNet, flowLocal := "udp4", netip.AddrPortFrom(netip.IPv4Unspecified(), 0)
	if sa := cfg.Server.Addr().Unmap(); sa.Is6() {
		flowNet, flowLocal = "udp6", netip.AddrPortFrom(netip.IPv6Unspecified(), 0)
	}
	if sa := cfg.Server.Addr().Unmap(); sa.IsLoopback() {
		flowLocal = netip.AddrPortFrom(sa, 0)
	}
	r := &Relay{cfg: cfg, listen: newSock(ln, cfg.NoOffload), flowNet: flowNet, flowLocal: flowLocal, server: net.UDPAddrFromAddrPort(cfg.Server),
		paths: cfg.Paths, flows: map[netip.AddrPort]*flow{}, done: make(chan struct{})}
	r.out = make([][2]*sender, len(cfg.Paths))
	for i := range r.out {
		for d := range r.out[i] {
			r.out[i][d] = newSender()
		}
	}
	r.eng, err = emu.New(emu.Config{
		Scenario: cfg.Scenario, Sink: r, Seed: cfg.Seed, Clock: cfg.Clock,
		Log: cfg.Log, MaxPacket: cfg.MaxPacket, NoEvents: cfg.NoEvents,
	})
	if err != nil {
		ln.Close()
		return nil, err
	}
	r.wg.Add(2)
	go r.readUp()
	go r.expire()
	return r, nil
}

// Addr is the address clients send to.
func (r *Relay) Addr() netip.AddrPort { return r.listen.c.LocalAddr().(*net.UDPAddr).AddrPort() }

// Engine is the relay's emulator (for Apply, Outage, Stats).
func (r *Relay) Engine() *emu.Engine { return r.eng }

// PathAddrs are the client source IPs, in scenario path order.
func (r *Relay) PathAddrs() []netip.Addr { return append([]netip.Addr(nil), r.paths...) }

// FlowPath is the path of the flow whose socket towards the server has
// the address from: the server sees each client address as one of those
// sockets (like a NAT), so this is how a server-side trace names its
// connection's path. ok is false for an address no open flow has.
func (r *Relay) FlowPath(from netip.AddrPort) (path int, ok bool) {
	from = netip.AddrPortFrom(from.Addr().Unmap(), from.Port())
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.flows {
		a := f.sock.c.LocalAddr().(*net.UDPAddr).AddrPort()
		if a.Port() == from.Port() && a.Addr().Unmap() == from.Addr() {
			return f.path, true
		}
	}
	return 0, false
}

// Stats returns the relay's counters.
func (r *Relay) Stats() Stats {
	r.mu.Lock()
	n := len(r.flows)
	r.mu.Unlock()
	return Stats{
		UnknownSource: r.unknown.Load(), StrayDown: r.stray.Load(), FlowLimit: r.flowLimit.Load(),
		WriteErrors: r.writeErrs.Load(), FlowsOpened: r.opened.Load(), FlowsExpired: r.expired.Load(),
		FlowsActive: n,
	}
}

// Close stops the relay: every socket closes and every goroutine ends before
// it returns. It is idempotent.
func (r *Relay) Close() error {
	r.closing.Do(func() {
		close(r.done)
		r.listen.c.Close()
		r.mu.Lock()
		for k, f := range r.flows {
			f.sock.c.Close()
			delete(r.flows, k)
		}
		r.mu.Unlock()
	})
	r.wg.Wait()
	r.eng.Close()
	return nil
}

// Run serves until ctx ends, then closes the relay.
func (r *Relay) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
	case <-r.done:
	}
	return r.Close()
}

func (r *Relay) pathOf(a netip.Addr) int {
	a = a.Unmap()
	for i, p := range r.paths {
		if p == a {
			return i
		}
	}
	return -1
}

// readUp reads client packets from the listen socket, a batch at a time,
// and hands each run of packets of one path to the engine.
func (r *Relay) readUp() {
	defer r.wg.Done()
	rd := newReader(r.listen.gro)
	defer rd.free(r.eng)
	batch := make([]*emu.Packet, 0, batchSize)
	for {
		if err := rd.read(r.eng, r.listen); err != nil {
			if r.isDone() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // e.g. ICMP errors surfaced on the socket
		}
		now := time.Now().UnixNano()
		batch, cur := batch[:0], -1
		// The datagrams of one GRO read share their source: look its
		// flow up once.
		var lastUA *net.UDPAddr
		var f *flow
		pi := -1
		for i, p := range rd.pkts {
			if ua := rd.from[i]; ua != lastUA {
				lastUA, f, pi = ua, nil, -1
				if ua != nil { // never nil; but a datagram without a source is no path's
					src := ua.AddrPort()
					if pi = r.pathOf(src.Addr()); pi >= 0 {
						f = r.flow(src, pi)
					}
				}
			}
			if pi < 0 {
				r.unknown.Add(1)
				r.eng.Free(p)
				continue
			}
			if f == nil {
				// r.flow counted this drop; forget the lookup so that it
				// counts each further datagram from the source too.
				lastUA = nil
				r.eng.Free(p)
				continue
			}
			f.last.Store(now)
			p.Tag = f
			if pi != cur && len(batch) > 0 {
				r.eng.Input(cur, emu.Up, batch)
				batch = batch[:0]
			}
			cur = pi
			batch = append(batch, p)
		}
		if len(batch) > 0 {
			r.eng.Input(cur, emu.Up, batch)
		}
	}
}

func newMessages(n int) []ipv4.Message {
	ms := make([]ipv4.Message, n)
	for i := range ms {
		ms[i].Buffers = make([][]byte, 1)
	}
	return ms
}

// reader is the receive state of the one goroutine that reads a socket.
type reader struct {
	ms []ipv4.Message
	// Without GRO, ms read straight into engine packets: pk[i] is ms[i]'s
	// (nil once handed on). With GRO, ms read into bufs and oob, and the
	// datagrams are copied out into packets.
	pk   []*emu.Packet
	bufs [][]byte
	oob  [][]byte
	// pkts are the last read's datagrams, one packet each, in arrival
	// order; from[i] is pkts[i]'s source.
	pkts []*emu.Packet
	from []*net.UDPAddr
}

func newReader(gro bool) *reader {
	if !gro {
		return &reader{ms: newMessages(batchSize), pk: make([]*emu.Packet, batchSize)}
	}
	rd := &reader{ms: newMessages(groBatch)}
	for range rd.ms {
		rd.bufs = append(rd.bufs, make([]byte, groBufSize))
		rd.oob = append(rd.oob, make([]byte, groCmsgLen))
	}
	return rd
}

// read reads one batch from s into rd.pkts and rd.from: one packet per
// datagram, however the kernel grouped them. Each datagram goes through the
// engine on its own (loss, delay and rate stay per packet).
func (rd *reader) read(eng *emu.Engine, s *udpSock) error {
	rd.pkts, rd.from = rd.pkts[:0], rd.from[:0]
	if rd.pk == nil {
		for i := range rd.ms {
			rd.ms[i].Buffers[0], rd.ms[i].OOB, rd.ms[i].Addr = rd.bufs[i], rd.oob[i], nil
		}
		n, err := s.b.ReadBatch(rd.ms, 0)
		if err != nil {
			return err
		}
		for _, m := range rd.ms[:n] {
			ua, _ := m.Addr.(*net.UDPAddr)
			rd.split(eng, m.Buffers[0][:m.N], groSegment(m.OOB[:m.NN]), ua)
		}
		return nil
	}
	for i := range rd.pk {
		if rd.pk[i] == nil {
			rd.pk[i] = eng.NewPacket()
		}
		rd.ms[i].Buffers[0] = rd.pk[i].Data[:cap(rd.pk[i].Data)]
		rd.ms[i].Addr = nil
	}
	n, err := s.b.ReadBatch(rd.ms, 0)
	if err != nil {
		return err
	}
	for i, m := range rd.ms[:n] {
		p := rd.pk[i]
		rd.pk[i] = nil
		p.Data = p.Data[:m.N]
		ua, _ := m.Addr.(*net.UDPAddr)
		rd.pkts = append(rd.pkts, p)
		rd.from = append(rd.from, ua)
	}
	return nil
}

// split appends the datagrams of one GRO read to rd.pkts: data holds seg
// bytes per datagram, the last one possibly fewer (seg 0: data is one
// datagram, maybe empty). A datagram over the engine's MaxPacket is cut to
// MaxPacket+1 bytes, so that the engine drops and counts it as malformed,
// exactly as a read into the packet would have.
func (rd *reader) split(eng *emu.Engine, data []byte, seg int, from *net.UDPAddr) {
	if seg <= 0 {
		seg = len(data)
	}
	for off := 0; ; {
		end := min(off+seg, len(data))
		p := eng.NewPacket()
		p.Data = p.Data[:min(end-off, cap(p.Data))]
		copy(p.Data, data[off:end])
		rd.pkts = append(rd.pkts, p)
		rd.from = append(rd.from, from)
		if off = end; off >= len(data) {
			return
		}
	}
}

// free returns the packets rd still holds to the engine.
func (rd *reader) free(eng *emu.Engine) {
	for i, p := range rd.pk {
		if p != nil {
			eng.Free(p)
			rd.pk[i] = nil
		}
	}
}

// flow returns src's flow, opening it if new (nil: over the limit or closing).
func (r *Relay) flow(src netip.AddrPort, pi int) *flow {
	r.mu.Lock()
	defer r.mu.Unlock()
	if f, ok := r.flows[src]; ok {
		return f
	}
	if len(r.flows) >= r.cfg.MaxFlows || r.isDone() {
		r.flowLimit.Add(1)
		return nil
	}
	conn, err := net.ListenUDP(r.flowNet, net.UDPAddrFromAddrPort(r.flowLocal))
	if err != nil {
		r.writeErrs.Add(1)
		return nil
	}
	f := &flow{client: src, clientUDP: net.UDPAddrFromAddrPort(src), path: pi, sock: newSock(conn, r.cfg.NoOffload)}
	f.last.Store(time.Now().UnixNano())
	r.flows[src] = f
	r.opened.Add(1)
	r.wg.Add(1)
	go r.readDown(f)
	return f
}

// readDown reads the server's replies to one client address.
func (r *Relay) readDown(f *flow) {
	defer r.wg.Done()
	rd := newReader(f.sock.gro)
	defer rd.free(r.eng)
	batch := make([]*emu.Packet, 0, batchSize)
	server := r.cfg.Server
	for {
		if err := rd.read(r.eng, f.sock); err != nil {
			if r.isDone() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		batch = batch[:0]
		var lastUA *net.UDPAddr
		fromServer := false
		for i, p := range rd.pkts {
			if ua := rd.from[i]; ua != lastUA {
				lastUA = ua
				fromServer = ua != nil && ua.Port == int(server.Port()) && ua.AddrPort().Addr().Unmap() == server.Addr().Unmap()
			}
			if !fromServer {
				r.stray.Add(1)
				r.eng.Free(p)
				continue
			}
			p.Addr = f.client
			p.Tag = f
			batch = append(batch, p)
		}
		if len(batch) > 0 {
			f.last.Store(time.Now().UnixNano())
			r.eng.Input(f.path, emu.Down, batch)
		}
	}
}

// sender is Deliver's scratch for one link (calls for one link never
// overlap; different links may run at once).
type sender struct {
	ms  []ipv4.Message
	iov [][]byte // backs ms[i].Buffers: one slice per packet, not copied
	oob []byte   // backs ms[i].OOB: one UDP_SEGMENT cmsg per message
	npk []int    // packets in ms[i], so that errors count per packet
}

func newSender() *sender {
	return &sender{
		ms:  make([]ipv4.Message, batchSize),
		iov: make([][]byte, 0, batchSize*maxSegments),
		oob: make([]byte, batchSize*segmentCmsgLen),
		npk: make([]int, batchSize),
	}
}

// Deliver implements emu.Sink: upstream packets leave from their flow's
// socket to the server, downstream ones from the listen socket to the client,
// batched with sendmmsg. Where the socket has GSO, each message carries a
// run of packets to one destination that gsoRun allows, and the kernel
// cuts it back into the same datagrams.
func (r *Relay) Deliver(path int, dir emu.Dir, pkts []*emu.Packet) {
	sd := r.out[path][dir]
	for len(pkts) > 0 {
		// Messages that leave from the same socket, up to a batch.
		f := pkts[0].Tag.(*flow)
		s := r.listen
		if dir == emu.Up {
			s = f.sock
		}
		gso := s.gso.Load()
		iov, m := sd.iov[:0], 0
		for len(pkts) > 0 && m < len(sd.ms) {
			g := pkts[0].Tag.(*flow)
			if dir == emu.Up && g != f {
				break
			}
			k := 1
			if gso {
				k = gsoRun(pkts)
			}
			start := len(iov)
			for _, p := range pkts[:k] {
				iov = append(iov, p.Data)
			}
			msg := &sd.ms[m]
			msg.Buffers = iov[start:len(iov):len(iov)]
			msg.Addr = r.server
			if dir == emu.Down {
				msg.Addr = g.clientUDP
			}
			msg.OOB = nil
			if k > 1 {
				msg.OOB = putSegmentCmsg(sd.oob[m*segmentCmsgLen:], len(pkts[0].Data))
			}
			sd.npk[m] = k
			m++
			pkts = pkts[k:]
		}
		r.writeAll(s, sd.ms[:m], sd.npk[:m])
		for i := range sd.ms[:m] {
			sd.ms[i].Buffers, sd.ms[i].Addr, sd.ms[i].OOB = nil, nil, nil
		}
		clear(iov)
	}
}

// gsoRun is how many packets from the head of pkts one GSO send may carry:
// a run to the same flow (so the same socket and destination) of the first
// packet's size, where only the last may be shorter, since the kernel cuts
// a GSO buffer into equal segments. They were released by the link at the
// same time (one Deliver call), so sending them together changes no
// packet's timing.
func gsoRun(pkts []*emu.Packet) int {
	f, size := pkts[0].Tag, len(pkts[0].Data)
	k, total := 1, size
	for k < len(pkts) && k < maxSegments {
		p := pkts[k]
		if p.Tag != f || len(p.Data) > size || total+len(p.Data) > maxGSOBytes {
			break
		}
		k++
		total += len(p.Data)
		if len(p.Data) < size {
			break
		}
	}
	return k
}

// writeAll sends every message, retrying the rest after a partial write. A
// message the kernel refuses is dropped and its packets counted, except a
// GSO message: its packets are sent again one by one (a route may take them
// singly though not as one GSO send), and on the error that says the device
// cannot do GSO, the socket stops using it.
func (r *Relay) writeAll(s *udpSock, ms []ipv4.Message, npk []int) {
	for len(ms) > 0 {
		n, err := s.b.WriteBatch(ms, 0)
		if err != nil {
			// sendmmsg reports an error only when it sent nothing: the
			// first message failed.
			if npk[0] > 1 {
				if isGSOError(err) {
					s.gso.Store(false)
				}
				r.writeEach(s, ms[0])
			} else {
				r.writeErrs.Add(1) // a flow that expired meanwhile, a full buffer, ...
			}
			n = 1
		}
		n = min(n, len(ms))
		ms, npk = ms[n:], npk[n:]
	}
}

// writeEach sends each buffer of m as a datagram of its own.
func (r *Relay) writeEach(s *udpSock, m ipv4.Message) {
	one := []ipv4.Message{{Buffers: make([][]byte, 1), Addr: m.Addr}}
	for _, b := range m.Buffers {
		one[0].Buffers[0] = b
		if _, err := s.b.WriteBatch(one, 0); err != nil {
			r.writeErrs.Add(1)
		}
	}
}

// expire closes flows idle for longer than IdleTimeout.
func (r *Relay) expire() {
	defer r.wg.Done()
	every := min(r.cfg.IdleTimeout/4, time.Second)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-r.done:
			return
		case <-t.C:
		}
		cut := time.Now().Add(-r.cfg.IdleTimeout).UnixNano()
		r.mu.Lock()
		for k, f := range r.flows {
			if f.last.Load() < cut {
				f.sock.c.Close()
				delete(r.flows, k)
				r.expired.Add(1)
			}
		}
		r.mu.Unlock()
	}
}

func (r *Relay) isDone() bool {
	select {
	case <-r.done:
		return true
	default:
		return false
	}
}
