// Package memnet is an in-memory UDP network for tests: net.PacketConns
// that exchange datagrams through queues instead of sockets, with switches
// to black-hole an address, to delay datagrams, and to give an address an
// access link of a set rate and queue (SetLink). It plays the part of
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
	links map[netip.Addr]*link
}

// link is an address's access link: a bottleneck each way.
type link struct{ up, down serializer }

// serializer sends datagrams one after another at rate bytes/s, holding
// at most queue bytes waiting (tail drop beyond, as a router's buffer).
type serializer struct {
	rate  float64
	queue int
	busy  time.Time // when the datagrams admitted so far have all left
}

// admit is when a datagram of size bytes that arrives at now has left,
// or false when the queue is full.
func (s *serializer) admit(now time.Time, size int) (time.Time, bool) {
	start := maxTime(now, s.busy)
	if waiting := start.Sub(now).Seconds() * s.rate; waiting+float64(size) > float64(s.queue) && waiting > 0 {
		return time.Time{}, false
	}
	s.busy = start.Add(time.Duration(float64(size) / s.rate * float64(time.Second)))
	return s.busy, true
}

// New returns an empty network.
func New() *Network {
	return &Network{
		conns: map[netip.AddrPort]*Conn{},
		next:  map[netip.Addr]uint16{},
		drop:  map[netip.Addr]bool{},
		delay: map[netip.Addr]time.Duration{},
		links: map[netip.Addr]*link{},
	}
}

// SetLink makes addr's access link a bottleneck of rate bytes/s in each
// direction with a queue of queue bytes (tail drop beyond): what it sends
// and what is sent to it wait their turn, as on a real uplink and
// downlink, so congestion control meets a rate and loss, and a stalled or
// moved transfer takes the time it would. rate 0 removes the link.
func (n *Network) SetLink(addr netip.Addr, rate float64, queue int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if rate <= 0 {
		delete(n.links, addr.Unmap())
		return
	}
	n.links[addr.Unmap()] = &link{up: serializer{rate: rate, queue: queue}, down: serializer{rate: rate, queue: queue}}
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

// send delivers b from src to to after the links' queues and src's delay,
// or drops it.
func (n *Network) send(src *Conn, b []byte, to netip.AddrPort) {
	now := time.Now()
	at, ok := now, true
	n.mu.Lock()
	dst := n.conns[to]
	dropped := n.drop[src.addr.Addr()] || n.drop[to.Addr()]
	delay := n.delay[src.addr.Addr()]
	if l := n.links[src.addr.Addr()]; l != nil && !dropped && dst != nil {
		at, ok = l.up.admit(at, len(b))
	}
	if l := n.links[to.Addr()]; l != nil && ok && !dropped && dst != nil {
		at, ok = l.down.admit(at, len(b))
	}
	n.mu.Unlock()
	if dst == nil || dropped || !ok {
		return // UDP: nobody there, a dead link or a full queue loses the datagram
	}
	d := datagram{b: append([]byte(nil), b...), from: src.addr}
	ln := src.lineTo(to)
	at = at.Add(delay)
	if !at.After(now) && ln.empty() {
		dst.deliver(d)
		return
	}
	ln.push(at, dst, d)
}

// line delivers a sender's delayed datagrams to one receiver in the order
// they were sent (one line per receiver: a slow link to one does not hold
// up another),
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
	net   *Network
	addr  netip.AddrPort
	mu    sync.Mutex
	lines map[netip.AddrPort]*line // what it sent that is still in flight, by receiver
	q     *pktqueue.Queue
}

var _ net.PacketConn = (*Conn)(nil)

func (c *Conn) deliver(d datagram) {
	c.q.TryPush(pktqueue.Datagram{B: d.b, From: net.UDPAddrFromAddrPort(d.from)})
}

// lineTo is the line of what c sends to.
func (c *Conn) lineTo(to netip.AddrPort) *line {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lines == nil {
		c.lines = map[netip.AddrPort]*line{}
	}
	l := c.lines[to]
	if l == nil {
		l = &line{}
		c.lines[to] = l
	}
	return l
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
	c.mu.Lock()
	for _, l := range c.lines {
		l.stop()
	}
	c.mu.Unlock()
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
