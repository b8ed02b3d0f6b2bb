package wire

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/quicvarint"
)

// connect-udp (RFC 9298) on a stream and RFC 9297 datagrams: see the
// package comment.
const (
	UDPPathPrefix = "/.well-known/masque/udp/"
	UDPUpgrade    = "connect-udp"
)

// UDPRequestPath is the RFC 9298 URI path for target host:port.
func UDPRequestPath(target string) (string, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return "", err
	}
	return UDPPathPrefix + url.PathEscape(host) + "/" + port + "/", nil
}

// ParseUDPPath reads the target host:port of an RFC 9298 request path.
func ParseUDPPath(p string) (string, error) {
	rest, ok := strings.CutPrefix(p, UDPPathPrefix)
	if !ok {
		return "", fmt.Errorf("connect-udp path %q: want %s{host}/{port}/", p, UDPPathPrefix)
	}
	host, port, ok := strings.Cut(strings.TrimSuffix(rest, "/"), "/")
	if !ok || host == "" || strings.Contains(port, "/") {
		return "", fmt.Errorf("connect-udp path %q: want %s{host}/{port}/", p, UDPPathPrefix)
	}
	h, err := url.PathUnescape(host)
	if err != nil {
		return "", fmt.Errorf("connect-udp host %q: %w", host, err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return "", fmt.Errorf("connect-udp port %q: want 1 to 65535", port)
	}
	return NormHostPort(net.JoinHostPort(h, port), "")
}

// AppendDatagram frames payload for the flow on stream id.
func AppendDatagram(b []byte, id quic.StreamID, payload []byte) []byte {
	b = quicvarint.Append(b, uint64(id)/4)
	b = quicvarint.Append(b, 0) // context ID 0: a UDP payload
	return append(b, payload...)
}

// ParseDatagram splits a DATAGRAM into its flow's stream ID and UDP
// payload; datagrams of other contexts are errors (none are registered).
func ParseDatagram(b []byte) (quic.StreamID, []byte, error) {
	q, n, err := quicvarint.Parse(b)
	if err != nil {
		return 0, nil, fmt.Errorf("datagram: quarter stream ID: %w", err)
	}
	if q > (1<<62-1)/4 {
		return 0, nil, errors.New("datagram: quarter stream ID too large")
	}
	ctxID, m, err := quicvarint.Parse(b[n:])
	if err != nil {
		return 0, nil, fmt.Errorf("datagram: context ID: %w", err)
	}
	if ctxID != 0 {
		return 0, nil, fmt.Errorf("datagram: context ID %d not registered", ctxID)
	}
	return quic.StreamID(q * 4), b[n+m:], nil
}

// MaxUDPPayload is the largest UDP payload read from a socket (either end).
const MaxUDPPayload = 64 << 10
