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

// batchSize is how many datagrams one recvmmsg/sendmmsg moves at most.
const batchSize = 32

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
}

// Stats are the relay's own counters (the engine counts the rest).
type Stats struct {
	UnknownSource uint64 `json:"unknown_source"` // packets from no path's address
	StrayDown     uint64 `json:"stray_down"`     // packets to a flow socket not from the server
	FlowLimit     uint64 `json:"flow_limit"`     // packets dropped: too many client addresses
	WriteErrors   uint64 `json:"write_errors"`
	FlowsOpened   uint64 `json:"flows_opened"`
	FlowsExpired  uint64 `json:"flows_expired"`
	FlowsActive   int    `json:"flows_active"`
}

// Relay is a running relay.
type Relay struct {
	cfg     Config
	eng     *emu.Engine
	listen  *net.UDPConn
	listenB batchConn
	server  *net.UDPAddr
	paths   []netip.Addr
	// flowNet and flowLocal are where flow sockets bind.
	flowNet   string
	flowLocal netip.AddrPort
	// out are per-link scratch message slices for Deliver (calls for one
	// link never overlap; different links may run at once).
	out [][2][]ipv4.Message

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
	conn      *net.UDPConn
	connB     batchConn
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
	ln.SetReadBuffer(socketBuffer)
	ln.SetWriteBuffer(socketBuffer)
	r := &Relay{cfg: cfg, listen: ln, flowNet: flowNet, flowLocal: flowLocal, listenB: newBatchConn(ln), server: net.UDPAddrFromAddrPort(cfg.Server),
		paths: cfg.Paths, flows: map[netip.AddrPort]*flow{}, done: make(chan struct{})}
	r.out = make([][2][]ipv4.Message, len(cfg.Paths))
	for i := range r.out {
		for d := range r.out[i] {
			r.out[i][d] = newMessages()
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
func (r *Relay) Addr() netip.AddrPort { return r.listen.LocalAddr().(*net.UDPAddr).AddrPort() }

// Engine is the relay's emulator (for Apply, Outage, Stats).
func (r *Relay) Engine() *emu.Engine { return r.eng }

// PathAddrs are the client source IPs, in scenario path order.
func (r *Relay) PathAddrs() []netip.Addr { return append([]netip.Addr(nil), r.paths...) }

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
		r.listen.Close()
		r.mu.Lock()
		for k, f := range r.flows {
			f.conn.Close()
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
	ms := newMessages()
	pk := make([]*emu.Packet, batchSize)
	batch := make([]*emu.Packet, 0, batchSize)
	for {
		n, err := r.readBatch(r.listenB, ms, pk)
		if err != nil {
			if r.isDone() || errors.Is(err, net.ErrClosed) {
				r.freeAll(pk)
				return
			}
			continue // e.g. ICMP errors surfaced on the socket
		}
		batch, cur := batch[:0], -1
		for i := range n {
			p := pk[i]
			pk[i] = nil
			p.Data = p.Data[:ms[i].N]
			ua, ok := ms[i].Addr.(*net.UDPAddr)
			if !ok { // never seen; but a datagram without a source is no path's
				r.unknown.Add(1)
				r.eng.Free(p)
				continue
			}
			src := ua.AddrPort()
			pi := r.pathOf(src.Addr())
			if pi < 0 {
				r.unknown.Add(1)
				r.eng.Free(p)
				continue
			}
			f := r.flow(src, pi)
			if f == nil {
				r.eng.Free(p)
				continue
			}
			f.last.Store(time.Now().UnixNano())
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

func newMessages() []ipv4.Message {
	ms := make([]ipv4.Message, batchSize)
	for i := range ms {
		ms[i].Buffers = make([][]byte, 1)
	}
	return ms
}

// readBatch fills the empty slots of pk with fresh packets and reads up to
// len(pk) datagrams into them; ms[i].N and ms[i].Addr describe pk[i].
func (r *Relay) readBatch(c batchConn, ms []ipv4.Message, pk []*emu.Packet) (int, error) {
	for i := range pk {
		if pk[i] == nil {
			pk[i] = r.eng.NewPacket()
		}
		ms[i].Buffers[0] = pk[i].Data[:cap(pk[i].Data)]
		ms[i].Addr = nil
	}
	return c.ReadBatch(ms, 0)
}

func (r *Relay) freeAll(pk []*emu.Packet) {
	for i, p := range pk {
		if p != nil {
			r.eng.Free(p)
			pk[i] = nil
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
	conn.SetReadBuffer(socketBuffer)
	conn.SetWriteBuffer(socketBuffer)
	f := &flow{client: src, clientUDP: net.UDPAddrFromAddrPort(src), path: pi, conn: conn, connB: newBatchConn(conn)}
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
	ms := newMessages()
	pk := make([]*emu.Packet, batchSize)
	batch := make([]*emu.Packet, 0, batchSize)
	server := r.cfg.Server
	for {
		n, err := r.readBatch(f.connB, ms, pk)
		if err != nil {
			if r.isDone() || errors.Is(err, net.ErrClosed) {
				r.freeAll(pk)
				return
			}
			continue
		}
		batch = batch[:0]
		for i := range n {
			p := pk[i]
			pk[i] = nil
			ua, ok := ms[i].Addr.(*net.UDPAddr)
			if !ok || ua.Port != int(server.Port()) || ua.AddrPort().Addr().Unmap() != server.Addr().Unmap() {
				r.stray.Add(1)
				r.eng.Free(p)
				continue
			}
			p.Data = p.Data[:ms[i].N]
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

// Deliver implements emu.Sink: upstream packets leave from their flow's
// socket to the server, downstream ones from the listen socket to the client,
// batched with sendmmsg.
func (r *Relay) Deliver(path int, dir emu.Dir, pkts []*emu.Packet) {
	ms := r.out[path][dir]
	for len(pkts) > 0 {
		// A run of packets that leave from the same socket, up to a batch.
		f := pkts[0].Tag.(*flow)
		n := 0
		for n < len(pkts) && n < len(ms) {
			p := pkts[n]
			if dir == emu.Up && p.Tag.(*flow) != f {
				break
			}
			ms[n].Buffers[0] = p.Data
			ms[n].Addr = r.server
			if dir == emu.Down {
				ms[n].Addr = p.Tag.(*flow).clientUDP
			}
			n++
		}
		c := r.listenB
		if dir == emu.Up {
			c = f.connB
		}
		r.writeAll(c, ms[:n])
		for i := range ms[:n] {
			ms[i].Buffers[0], ms[i].Addr = nil, nil
		}
		pkts = pkts[n:]
	}
}

// writeAll sends every message, retrying the rest after a partial write;
// an error drops the message it stopped at (counted).
func (r *Relay) writeAll(c batchConn, ms []ipv4.Message) {
	for len(ms) > 0 {
		n, err := c.WriteBatch(ms, 0)
		if err != nil {
			r.writeErrs.Add(1) // a flow that expired meanwhile, a full buffer, ...
			n++
		}
		ms = ms[min(n, len(ms)):]
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
				f.conn.Close()
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
