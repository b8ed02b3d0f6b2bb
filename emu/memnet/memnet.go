// Package memnet is an in-memory UDP network for tests: net.PacketConns
// that exchange datagrams through queues instead of sockets, with switches
// to black-hole an address and to delay datagrams. It plays the part of
// wireguard-go's conn/bindtest: the same code under test runs over it and
// over real sockets, so PCM-QUIC's, the agent's and the emulator's timer
// behaviour (probe deadlines, stall detection, failover) can be tested
// under testing/synctest — fast, and deterministic.
//
// Datagrams from one sender arrive in the order they were sent, as over one
// link. (Reordering is not modelled: with it, a quic-go client's first
// request after a switch could overtake its PATH_RESPONSE, and the quic-go
// server then kept sending on the old, dead path — found by pcm's failover
// test before delivery was made FIFO.)
//
// A Network and its Conns must be made inside the synctest bubble that uses
// them (channels and timers belong to the bubble that made them). Nothing
// here reads a clock except through the time package, which synctest fakes.
package memnet

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync"
	"time"

	"github.com/hetquic/hetquic/internal/pktqueue"
)

// queueLen is how many datagrams a Conn holds before dropping more, like a
// socket's receive buffer: QUIC must see loss, not block, when a reader
// falls behind.
const queueLen = 1024

// Network is a set of addresses that reach one another.
type Network struct {
	mu    sync.Mutex
	conns map[netip.AddrPort]*Conn
	next  map[netip.Addr]uint16 // the next ephemeral port per address
	drop  map[netip.Addr]bool
	delay map[netip.Addr]time.Duration
}

// New returns an empty network.
func New() *Network {
	return &Network{
		conns: map[netip.AddrPort]*Conn{},
		next:  map[netip.Addr]uint16{},
		drop:  map[netip.Addr]bool{},
		delay: map[netip.Addr]time.Duration{},
	}
}

// ListenPacket opens a Conn on addr; port 0 picks a free one.
func (n *Network) ListenPacket(addr netip.AddrPort) (*Conn, error) {
	if !addr.Addr().IsValid() {
		return nil, fmt.Errorf("memnet: listen on %v: no address", addr)
	}
	addr = netip.AddrPortFrom(addr.Addr().Unmap(), addr.Port())
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr.Port() == 0 {
		p := max(n.next[addr.Addr()], 49152)
		for n.conns[netip.AddrPortFrom(addr.Addr(), p)] != nil {
			if p++; p == 0 {
				return nil, fmt.Errorf("memnet: listen on %v: no free port", addr.Addr())
			}
		}
		n.next[addr.Addr()] = p + 1
		addr = netip.AddrPortFrom(addr.Addr(), p)
	}
	if n.conns[addr] != nil {
		return nil, fmt.Errorf("memnet: listen on %v: address in use", addr)
	}
	c := &Conn{net: n, addr: addr, q: pktqueue.New(queueLen)}
	n.conns[addr] = c
	return c, nil
}

// ListenIP opens a Conn on ip with a free port: the shape of the agent's and
// PCM-QUIC's Config.ListenPacket.
func (n *Network) ListenIP(ip net.IP) (net.PacketConn, error) {
	a, ok := netip.AddrFromSlice(ip)
	if !ok {
		return nil, fmt.Errorf("memnet: listen on %v: not an IP address", ip)
	}
	return n.ListenPacket(netip.AddrPortFrom(a, 0))
}

// SetDrop black-holes (or restores) every datagram from or to addr: a path
// whose link went dead.
func (n *Network) SetDrop(addr netip.Addr, drop bool) {
	n.mu.Lock()
	n.drop[addr.Unmap()] = drop
	n.mu.Unlock()
}

// SetDelay delays every datagram sent from addr by d (0: delivered at once).
func (n *Network) SetDelay(addr netip.Addr, d time.Duration) {
	n.mu.Lock()
	n.delay[addr.Unmap()] = d
	n.mu.Unlock()
}

// send delivers b from src to to after src's delay, or drops it.
func (n *Network) send(src *Conn, b []byte, to netip.AddrPort) {
	n.mu.Lock()
	dst := n.conns[to]
	dropped := n.drop[src.addr.Addr()] || n.drop[to.Addr()]
	delay := n.delay[src.addr.Addr()]
	n.mu.Unlock()
	if dst == nil || dropped {
		return // UDP: nobody there, or a dead link, loses the datagram
	}
	d := datagram{b: append([]byte(nil), b...), from: src.addr}
	if delay <= 0 && src.line.empty() {
		dst.deliver(d)
		return
	}
	src.line.push(time.Now().Add(delay), dst, d)
}

// line delivers a sender's delayed datagrams in the order they were sent,
// as a link does: timers that expire at the same instant run in no set
// order, so one timer at a time takes the head of a FIFO. Changing the
// delay never reorders (a datagram leaves no earlier than the one before).
type line struct {
	mu    sync.Mutex
	queue []inFlight
	last  time.Time
	timer *time.Timer
}

type inFlight struct {
	at  time.Time
	dst *Conn
	d   datagram
}

func (l *line) empty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.queue) == 0
}

func (l *line) push(at time.Time, dst *Conn, d datagram) {
	l.mu.Lock()
	defer l.mu.Unlock()
	at = maxTime(at, l.last)
	l.last = at
	l.queue = append(l.queue, inFlight{at, dst, d})
	if len(l.queue) == 1 {
		l.timer = time.AfterFunc(time.Until(at), l.fire)
	}
}

// fire delivers every datagram that is due, then waits for the next.
func (l *line) fire() {
	l.mu.Lock()
	now := time.Now()
	var due []inFlight
	for len(l.queue) > 0 && !l.queue[0].at.After(now) {
		due = append(due, l.queue[0])
		l.queue = l.queue[1:]
	}
	if len(l.queue) > 0 {
		l.timer = time.AfterFunc(l.queue[0].at.Sub(now), l.fire)
	}
	l.mu.Unlock()
	for _, f := range due {
		f.dst.deliver(f.d)
	}
}

// stop drops what is still in flight (the sender closed).
func (l *line) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.timer != nil {
		l.timer.Stop()
	}
	l.queue = nil
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

type datagram struct {
	b    []byte
	from netip.AddrPort
}

// Conn is one endpoint: a net.PacketConn whose addresses are *net.UDPAddr,
// as a UDP socket's are.
type Conn struct {
	net  *Network
	addr netip.AddrPort
	line line // what it sent that is still in flight
	q    *pktqueue.Queue
}

var _ net.PacketConn = (*Conn)(nil)

func (c *Conn) deliver(d datagram) {
	c.q.TryPush(pktqueue.Datagram{B: d.b, From: net.UDPAddrFromAddrPort(d.from)})
}

// ReadFrom waits for a datagram, the read deadline or Close.
func (c *Conn) ReadFrom(b []byte) (int, net.Addr, error) { return c.q.ReadFrom(b) }

// WriteTo sends b to addr, which must be a *net.UDPAddr.
func (c *Conn) WriteTo(b []byte, addr net.Addr) (int, error) {
	select {
	case <-c.q.Done():
		return 0, net.ErrClosed
	default:
	}
	ua, ok := addr.(*net.UDPAddr)
	if !ok {
		return 0, fmt.Errorf("memnet: write to %v: not a UDP address", addr)
	}
	to := ua.AddrPort()
	to = netip.AddrPortFrom(to.Addr().Unmap(), to.Port())
	c.net.send(c, b, to)
	return len(b), nil
}

// Close frees the address; pending and later reads return net.ErrClosed.
func (c *Conn) Close() error {
	if !c.q.Close() {
		return errors.New("memnet: close: already closed")
	}
	c.line.stop()
	c.net.mu.Lock()
	delete(c.net.conns, c.addr)
	c.net.mu.Unlock()
	return nil
}

func (c *Conn) LocalAddr() net.Addr { return net.UDPAddrFromAddrPort(c.addr) }

func (c *Conn) SetDeadline(t time.Time) error { return c.SetReadDeadline(t) }

func (c *Conn) SetReadDeadline(t time.Time) error {
	c.q.SetReadDeadline(t)
	return nil
}

// SetWriteDeadline is accepted and has no effect: a write never blocks.
func (c *Conn) SetWriteDeadline(time.Time) error { return nil }
