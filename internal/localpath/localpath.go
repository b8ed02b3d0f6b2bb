// Package localpath is the one definition of a local path — a network
// interface a multi-homed client sends through — for pcm, the agent and
// the CLI: one --paths grammar, one rule for the address a path binds to,
// and interface discovery.
//
// The grammar of one item (a --paths list is items separated by commas):
//
//	[NAME=](ADDR|IFACE)[/ROLE]
//
// ADDR is an IP address; IFACE an interface name, resolved by the address
// rule (Pick). NAME defaults to the ADDR or IFACE as written. ROLE is
// passed on as written: the caller decides which roles it takes (the
// agent's backup and metered; pcm takes none).
package localpath

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Path is one parsed local path.
type Path struct {
	Name string
	Addr netip.Addr
	// Iface is the interface the address was taken from; "" when the
	// item gave an address.
	Iface string
	// Role is what followed "/" ("" for none).
	Role string
}

// AddrsFunc lists an interface's addresses and says whether it is a
// loopback interface (SystemAddrs; tests pass their own).
type AddrsFunc func(iface string) (addrs []netip.Addr, loopback bool, err error)

// SystemAddrs is the host's AddrsFunc.
func SystemAddrs(name string) ([]netip.Addr, bool, error) {
	ifc, err := net.InterfaceByName(name)
	if err != nil {
		return nil, false, fmt.Errorf("%q is neither an address nor an interface", name)
	}
	return ifaceAddrs(*ifc)
}

func ifaceAddrs(ifc net.Interface) ([]netip.Addr, bool, error) {
	addrs, err := ifc.Addrs()
	if err != nil {
		return nil, false, fmt.Errorf("interface %s: %w", ifc.Name, err)
	}
	var out []netip.Addr
	for _, a := range addrs {
		if pfx, err := netip.ParsePrefix(a.String()); err == nil {
			out = append(out, pfx.Addr())
		}
	}
	return out, ifc.Flags&net.FlagLoopback != 0, nil
}

// Pick is the address rule: a path over an interface binds to its first
// usable IPv4 address, else its first usable IPv6 one. Usable: global
// unicast or private; loopback only on a loopback interface; never
// link-local (an IPv6 link-local address needs a zone, and a socket bound
// to either kind cannot reach a server beyond the link).
func Pick(iface string, addrs []netip.Addr, loopback bool) (netip.Addr, error) {
	var v6 netip.Addr
	for _, a := range addrs {
		a = a.Unmap()
		if !(a.IsGlobalUnicast() || a.IsPrivate() || loopback && a.IsLoopback()) || a.IsLinkLocalUnicast() {
			continue
		}
		if a.Is4() {
			return a, nil
		}
		if !v6.IsValid() {
			v6 = a
		}
	}
	if v6.IsValid() {
		return v6, nil
	}
	return netip.Addr{}, fmt.Errorf("interface %s has no usable address", iface)
}

// Parse parses one item of the grammar; addrs resolves interfaces.
func Parse(s string, addrs AddrsFunc) (Path, error) {
	spec, role, hasRole := strings.Cut(strings.TrimSpace(s), "/")
	name, target, named := strings.Cut(spec, "=")
	if !named {
		target = name
	}
	if name == "" || target == "" || hasRole && role == "" {
		return Path{}, fmt.Errorf("path %q: want [NAME=](ADDRESS|INTERFACE)[/ROLE]", s)
	}
	if a, err := netip.ParseAddr(target); err == nil {
		return Path{Name: name, Addr: a, Role: role}, nil
	}
	list, loopback, err := addrs(target)
	if err != nil {
		return Path{}, fmt.Errorf("path %q: %w", s, err)
	}
	a, err := Pick(target, list, loopback)
	if err != nil {
		return Path{}, fmt.Errorf("path %q: %w", s, err)
	}
	return Path{Name: name, Addr: a, Iface: target, Role: role}, nil
}

// ParseList parses a comma-separated list of items; names must differ.
func ParseList(spec string, addrs AddrsFunc) ([]Path, error) {
	var out []Path
	seen := map[string]bool{}
	for _, item := range strings.Split(spec, ",") {
		p, err := Parse(item, addrs)
		if err != nil {
			return nil, err
		}
		if seen[p.Name] {
			return nil, fmt.Errorf("path %q: the name %s is given twice", item, p.Name)
		}
		seen[p.Name] = true
		out = append(out, p)
	}
	return out, nil
}

// Discover lists one Path per interface that is up and not a loopback, at
// its address by the rule (Pick); interfaces without one are left out.
func Discover() ([]Path, error) {
	ifaces, err := net.Interfaces()
	if err != nil {
		return nil, fmt.Errorf("list interfaces: %w", err)
	}
	var out []Path
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagLoopback != 0 || ifc.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, _, err := ifaceAddrs(ifc)
		if err != nil {
			continue
		}
		if a, err := Pick(ifc.Name, addrs, false); err == nil {
			out = append(out, Path{Name: ifc.Name, Addr: a, Iface: ifc.Name})
		}
	}
	if len(out) == 0 {
		return nil, errors.New("no non-loopback address on this host: give the paths")
	}
	return out, nil
}
