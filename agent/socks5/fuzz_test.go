package socks5

import (
	"bytes"
	"net"
	"testing"

	"github.com/hetquic/hetquic/agent/wire"
)

// FuzzSocksRequest: the SOCKS5 greeting and request parsers never panic,
// and a parsed target is a host:port that wire.NormHostPort accepts or refuses
// with an error (never a panic).
func FuzzSocksRequest(f *testing.F) {
	f.Add([]byte{5, 1, 0, 5, 1, 0, 1, 127, 0, 0, 1, 0, 80})
	f.Add(append([]byte{5, 1, 0, 5, 1, 0, 3, 9}, "localhost\x01\xbb"...))
	f.Add(append(append([]byte{5, 1, 0, 5, 1, 0, 4}, make([]byte, 16)...), 0, 80))
	f.Add([]byte{5, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		r := bytes.NewReader(b)
		if ok, err := ReadGreeting(r); err != nil || !ok {
			return
		}
		req, err := ReadRequest(r)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(req.Target); err != nil {
			t.Fatalf("target %q does not split: %v", req.Target, err)
		}
		wire.NormHostPort(req.Target, "")
	})
}

// FuzzSocksUDP: the SOCKS5 UDP header parser never panics, its address
// part and payload are the datagram's bytes after the first three, and a
// target it returns splits as host:port.
func FuzzSocksUDP(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 127, 0, 0, 1, 0, 53, 'q'})
	f.Add(append([]byte{0, 0, 0, 3, 4}, "host\x00\x35data"...))
	f.Add(append(append([]byte{0, 0, 0, 4}, make([]byte, 16)...), 0, 53))
	f.Add([]byte{0, 0, 1, 1})
	f.Fuzz(func(t *testing.T, b []byte) {
		target, addr, payload, err := ParseUDP(b)
		if err != nil {
			return
		}
		if _, _, err := net.SplitHostPort(target); err != nil {
			t.Fatalf("target %q: %v", target, err)
		}
		if 3+len(addr)+len(payload) != len(b) {
			t.Fatalf("header %d + payload %d bytes of %d", len(addr), len(payload), len(b))
		}
	})
}
