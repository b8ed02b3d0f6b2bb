// Package socks5 is the SOCKS5 wire format (RFC 1928) ct-client's SOCKS
// front-end speaks: the greeting, the request and its address forms, the
// reply codes, and the UDP request header of an association. It is pure
// parsing, apart from the client so that every parser has its fuzz target
// beside it and no state.
package socks5

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
)

// SOCKS5 protocol constants (RFC 1928).
const (
	Version         = 5
	NoAuth          = 0x00
	NoMethod        = 0xff
	CmdConnect      = 0x01
	CmdBind         = 0x02
	CmdUDP          = 0x03
	AtypIPv4        = 0x01
	AtypDomain      = 0x03
	AtypIPv6        = 0x04
	OK              = 0x00
	Failure         = 0x01
	NotAllowed      = 0x02
	HostUnreach     = 0x04
	Refused         = 0x05
	CmdUnsupported  = 0x07
	AtypUnsupported = 0x08
)

// Request is a parsed SOCKS5 request: the command and its target as
// host:port (a domain name as given, an IPv6 address in brackets).
type Request struct {
	Cmd    byte
	Target string
}

// Error is a malformed SOCKS5 message; code is the reply it gets.
type Error struct {
	Code byte // the reply it gets
	Msg  string
}

func (e *Error) Error() string { return "socks5: " + e.Msg }

// ReadGreeting reads the method negotiation and says whether the
// client offers "no authentication".
func ReadGreeting(r io.Reader) (bool, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return false, err
	}
	if h[0] != Version {
		return false, &Error{Failure, fmt.Sprintf("version %d, want 5", h[0])}
	}
	methods := make([]byte, h[1])
	if _, err := io.ReadFull(r, methods); err != nil {
		return false, err
	}
	for _, m := range methods {
		if m == NoAuth {
			return true, nil
		}
	}
	return false, nil
}

// ReadRequest reads a SOCKS5 request (RFC 1928 §4).
func ReadRequest(r io.Reader) (Request, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Request{}, err
	}
	if h[0] != Version {
		return Request{}, &Error{Failure, fmt.Sprintf("request version %d, want 5", h[0])}
	}
	if h[2] != 0 {
		return Request{}, &Error{Failure, "reserved byte not zero"}
	}
	host, err := readAddr(r, h[3])
	if err != nil {
		return Request{}, err
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return Request{}, err
	}
	port := binary.BigEndian.Uint16(pb[:]) // 0 is valid in UDP ASSOCIATE
	return Request{Cmd: h[1], Target: net.JoinHostPort(host, strconv.Itoa(int(port)))}, nil
}

// readAddr reads an address of type atyp: the host part of a target.
func readAddr(r io.Reader, atyp byte) (string, error) {
	switch atyp {
	case AtypIPv4:
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom4(b).String(), nil
	case AtypIPv6:
		var b [16]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return "", err
		}
		return netip.AddrFrom16(b).Unmap().String(), nil
	case AtypDomain:
		var n [1]byte
		if _, err := io.ReadFull(r, n[:]); err != nil {
			return "", err
		}
		name := make([]byte, n[0])
		if _, err := io.ReadFull(r, name); err != nil {
			return "", err
		}
		if len(name) == 0 {
			return "", &Error{Failure, "empty domain name"}
		}
		if !isDNSName(name) {
			return "", &Error{Failure, fmt.Sprintf("domain name %q: only letters, digits, '-', '_' and '.'", name)}
		}
		return string(name), nil
	}
	return "", &Error{AtypUnsupported, fmt.Sprintf("address type %d", atyp)}
}

// isDNSName says whether name holds only what a host name may (letters,
// digits, '-', '_', '.'): anything else ("]", ":", "/", controls) would
// make the target unparsable or smuggle a second address into it.
func isDNSName(name []byte) bool {
	for _, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.'
		if !ok {
			return false
		}
	}
	return true
}

// Reply is a reply with the given code and a zero bound address
// (ct-client's address toward the target is ct-server's, not worth
// telling; RFC 1928 lets the client ignore it for CONNECT).
func Reply(code byte) []byte {
	return []byte{Version, code, 0, AtypIPv4, 0, 0, 0, 0, 0, 0}
}

// Code maps an HTTP status of the tunnel's refusal to a SOCKS5 reply.
func Code(status int) byte {
	switch status {
	case http.StatusForbidden:
		return NotAllowed
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		return HostUnreach
	case http.StatusBadRequest:
		return Refused
	}
	return Failure
}

// ParseUDP splits a SOCKS5 UDP request header (RFC 1928 §7) off a
// datagram: the target as host:port, the raw address part (ATYP, address,
// port: replies carry it back) and the payload. Fragments are refused.
func ParseUDP(b []byte) (target string, addr, payload []byte, err error) {
	if len(b) < 4 {
		return "", nil, nil, errors.New("socks5 udp: short header")
	}
	if b[0] != 0 || b[1] != 0 {
		return "", nil, nil, errors.New("socks5 udp: reserved bytes not zero")
	}
	if b[2] != 0 {
		return "", nil, nil, errors.New("socks5 udp: fragments are not supported")
	}
	r := bytes.NewReader(b[4:])
	host, err := readAddr(r, b[3])
	if err != nil {
		return "", nil, nil, err
	}
	var pb [2]byte
	if _, err := io.ReadFull(r, pb[:]); err != nil {
		return "", nil, nil, err
	}
	port := binary.BigEndian.Uint16(pb[:])
	if port == 0 {
		return "", nil, nil, errors.New("socks5 udp: port 0")
	}
	end := len(b) - r.Len()
	return net.JoinHostPort(host, strconv.Itoa(int(port))), b[3:end], b[end:], nil
}
