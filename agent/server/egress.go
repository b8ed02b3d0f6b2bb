package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
)

// Egress rules, after Stripe's Smokescreen and Envoy's original-destination
// filters: the allow-list names upstreams, but a name is only as safe as
// what it resolves to. An allow-listed name that resolves to an internal
// address — ct-server's loopback, the cloud's metadata service at
// 169.254.169.254, a private network — would make ct-server a bridge into
// its own network (a fake metadata secret could be fetched through
// `meta.test → 169.254.169.254`). So every upstream dial resolves the name
// itself, refuses addresses in internalRanges unless allow_internal lists
// them, and dials the address it checked (the connection is pinned to it:
// no second lookup a DNS rebinding could answer differently).
//
// An allow-list entry that is an IP literal (127.0.0.1:8000) names its
// address explicitly, so it is dialled as written: the operator chose it,
// no resolver did.

// Resolver looks up a host's addresses. *net.Resolver satisfies it; tests
// inject a fake (Config.Resolver).
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// internalRange is a range of addresses an upstream name may not resolve
// to, and what it is (for the refusal's message).
type internalRange struct {
	p    netip.Prefix
	what string
}

// internalRanges: loopback, link-local, private, carrier-grade NAT,
// unspecified, multicast, reserved, and the cloud metadata addresses
// outside those (RFC 6890's special-purpose registry, abridged to the
// ranges that reach something on or near the host).
var internalRanges = func() []internalRange {
	var rs []internalRange
	for _, r := range [][2]string{
		{"0.0.0.0/8", "unspecified, this network"},
		{"127.0.0.0/8", "loopback"},
		{"10.0.0.0/8", "private, RFC 1918"},
		{"172.16.0.0/12", "private, RFC 1918"},
		{"192.168.0.0/16", "private, RFC 1918"},
		{"100.64.0.0/10", "carrier-grade NAT, RFC 6598; Alibaba Cloud metadata 100.100.100.200"},
		{"169.254.0.0/16", "link-local, cloud metadata 169.254.169.254"},
		{"192.0.0.0/24", "IETF protocol assignments, Oracle Cloud metadata 192.0.0.192"},
		{"198.18.0.0/15", "benchmarking, RFC 2544"},
		{"224.0.0.0/4", "multicast"},
		{"240.0.0.0/4", "reserved, broadcast"},
		{"168.63.129.16/32", "Azure platform metadata, WireServer"},
		{"::/128", "unspecified"},
		{"::1/128", "loopback"},
		{"fe80::/10", "link-local"},
		{"fc00::/7", "unique local (private), AWS metadata fd00:ec2::254"},
		{"ff00::/8", "multicast"},
		{"64:ff9b:1::/48", "local-use NAT64, RFC 8215"},
	} {
		rs = append(rs, internalRange{netip.MustParsePrefix(r[0]), r[1]})
	}
	return rs
}()

// nat64 is the well-known NAT64 prefix (RFC 6052): its addresses embed an
// IPv4 address, which is checked instead.
var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// internalWhat says which internal range a holds, or "".
func internalWhat(a netip.Addr) string {
	a = a.Unmap().WithZone("")
	if nat64.Contains(a) {
		b := a.As16()
		a = netip.AddrFrom4([4]byte(b[12:]))
	}
	for _, r := range internalRanges {
		if r.p.Contains(a) {
			return r.what
		}
	}
	return ""
}

// ParseAllowInternal parses allow_internal entries: addresses (10.1.2.3,
// fd00::5) or prefixes (192.168.0.0/24). Bits set below a prefix's
// length are an error: 192.168.1.7/24 is more likely a typo than a wish
// for all of 192.168.1.0/24.
func ParseAllowInternal(entries []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, e := range entries {
		e = strings.TrimSpace(e)
		if a, err := netip.ParseAddr(e); err == nil {
			if a.Zone() != "" {
				return nil, fmt.Errorf("allow_internal %q: no zone, please", e)
			}
			a = a.Unmap()
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(e)
		if err != nil {
			return nil, fmt.Errorf("allow_internal %q: want an address (10.1.2.3) or a prefix (192.168.0.0/24)", e)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("allow_internal %q: bits set below /%d (did you mean %s?)", e, p.Bits(), p.Masked())
		}
		out = append(out, p)
	}
	return out, nil
}

// EgressError is an upstream refused because its name resolved to an
// internal address that allow_internal does not list.
type EgressError struct {
	Host string     // the allow-listed name
	Addr netip.Addr // what it resolved to
	What string     // the range's description
}

func (e *EgressError) Error() string {
	return fmt.Sprintf("upstream %s resolves to %s, an internal address (%s): refused (list it in allow_internal to allow it)", e.Host, e.Addr, e.What)
}

// egress dials upstreams under the rules above.
type egress struct {
	allowInternal []netip.Prefix
	resolver      Resolver
	connect       func(ctx context.Context, network, addr string) (net.Conn, error) // Config.Dial, per address
}

// refusal is the EgressError for a, or nil when a may be dialled.
func (e *egress) refusal(host string, a netip.Addr) *EgressError {
	what := internalWhat(a)
	if what == "" {
		return nil
	}
	for _, p := range e.allowInternal {
		if p.Contains(a.Unmap().WithZone("")) {
			return nil
		}
	}
	return &EgressError{Host: host, Addr: a.Unmap(), What: what}
}

// addrs resolves host and keeps the addresses that may be dialled; with
// none, the error says why (an *EgressError when they were all internal).
func (e *egress) addrs(ctx context.Context, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil // named by address in the allow-list
	}
	all, err := e.resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, err
	}
	var ok []netip.Addr
	var refused *EgressError
	for _, a := range all {
		if r := e.refusal(host, a); r != nil {
			if refused == nil {
				refused = r
			}
			continue
		}
		ok = append(ok, a.Unmap())
	}
	if len(ok) == 0 {
		if refused != nil {
			return nil, refused
		}
		return nil, fmt.Errorf("upstream %s: no addresses", host)
	}
	return ok, nil
}

// dial is a DialContext for upstreams: it resolves hostport, checks the
// addresses and dials the ones it checked, in order, until one connects.
func (e *egress) dial(ctx context.Context, network, hostport string) (net.Conn, error) {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		return nil, err
	}
	addrs, err := e.addrs(ctx, host)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, a := range addrs {
		c, err := e.connect(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// warnInternal returns a warning for each allow-list name that resolves
// to an internal address: refused unless allow_internal lists it, or
// allowed by allow_internal (worth knowing either way).
func (e *egress) warnInternal(ctx context.Context, allow []string) []string {
	var ws []string
	for _, hp := range allow {
		host, _, err := net.SplitHostPort(hp)
		if err != nil {
			continue
		}
		if _, err := netip.ParseAddr(host); err == nil {
			continue // named by address
		}
		all, err := e.resolver.LookupNetIP(ctx, "ip", host)
		if err != nil {
			continue // unresolvable now; checked again on every dial
		}
		for _, a := range all {
			what := internalWhat(a)
			switch {
			case what == "":
			case e.refusal(host, a) != nil:
				ws = append(ws, fmt.Sprintf("allow-list entry %s resolves to %s, an internal address (%s): requests to it will be refused unless allow_internal lists it", hp, a.Unmap(), what))
			default:
				ws = append(ws, fmt.Sprintf("allow-list entry %s resolves to %s, an internal address (%s), allowed by allow_internal", hp, a.Unmap(), what))
			}
		}
	}
	return ws
}
