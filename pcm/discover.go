package pcm

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
)

// DiscoverPaths lists one LocalPath per interface that is up and not a
// loopback, at its address (interfaceAddr): every network the host can
// reach the server through, as the PCM paper's client uses them. It is
// Config's default and `hetquic pcm`'s without --paths.
func DiscoverPaths() ([]LocalPath, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("pcm: list interfaces: %w", err)
	}
	var out []LocalPath
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		if a, ok := interfaceAddr(ifc); ok {
			out = append(out, LocalPath{Name: ifc.Name, Addr: a})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("pcm: no non-loopback address on this host: give the paths")
	}
	return out, nil
}

// InterfacePath is the LocalPath of the named interface (its address as
// DiscoverPaths picks it).
func InterfacePath(name string) (LocalPath, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return LocalPath{}, fmt.Errorf("pcm: no interface %q", name)
	}
	a, ok := interfaceAddr(*ifc)
	if !ok {
		return LocalPath{}, fmt.Errorf("pcm: interface %s has no address", name)
	}
	return LocalPath{Name: name, Addr: a}, nil
}

// interfaceAddr is the interface's first IPv4 address, else its first
// global IPv6 one: a link-local IPv6 address needs a zone a socket bound
// to it cannot reach a server through.
func interfaceAddr(ifc net.Interface) (netip.Addr, bool) {
	addrs, err := ifc.Addrs()
	if err != nil {
		return netip.Addr{}, false
	}
	var v6 netip.Addr
	for _, a := range addrs {
		pfx, err := netip.ParsePrefix(a.String())
		if err != nil {
			continue
		}
		if ip := pfx.Addr(); ip.Is4() {
			return ip, true
		} else if ip.IsGlobalUnicast() && !v6.IsValid() {
			v6 = ip
		}
	}
	return v6, v6.IsValid()
}
