package udprelay

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/hetquic/hetquic/scenario"
)

// FirstPathAddr is the client address of path 0 in Loopback; path i gets
// FirstPathAddr + i (127.0.0.11, 127.0.0.12, …). Every 127/8 address is on
// Linux's loopback interface, so binding them needs no setup.
var FirstPathAddr = netip.AddrFrom4([4]byte{127, 0, 0, 11})

// LoopbackPathAddrs returns n consecutive client addresses from FirstPathAddr.
func LoopbackPathAddrs(n int) []netip.Addr {
	out := make([]netip.Addr, n)
	a := FirstPathAddr
	for i := range out {
		out[i] = a
		a = a.Next()
	}
	return out
}

// Loopback starts a relay for s on 127.0.0.1 (a free port) in front of
// server, with client path addresses LoopbackPathAddrs. It is the helper for
// tests in other packages:
//
//	r, err := udprelay.Loopback(s, server.LocalAddr().(*net.UDPAddr).AddrPort(), 1)
//	defer r.Close()
//	conn, err := r.ListenPath(0) // a client socket on path 0; send to r.Addr()
func Loopback(s *scenario.Scenario, server netip.AddrPort, seed uint64) (*Relay, error) {
	return New(loopbackConfig(s, server, seed))
}

func loopbackConfig(s *scenario.Scenario, server netip.AddrPort, seed uint64) Config {
	return Config{
		Scenario: s,
		Listen:   netip.AddrPortFrom(netip.AddrFrom4([4]byte{127, 0, 0, 1}), 0),
		Server:   server,
		Paths:    LoopbackPathAddrs(len(s.Paths)),
		Seed:     seed,
	}
}

// ListenPath opens a client socket on path i's address (a free port).
func (r *Relay) ListenPath(i int) (*net.UDPConn, error) {
	if i < 0 || i >= len(r.paths) {
		return nil, fmt.Errorf("path %d: the relay has %d paths", i, len(r.paths))
	}
	return net.ListenUDP("udp", net.UDPAddrFromAddrPort(netip.AddrPortFrom(r.paths[i], 0)))
}
