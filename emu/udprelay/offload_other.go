//go:build !linux

package udprelay

import "net"

// offloads: UDP GSO and GRO are Linux's; elsewhere the relay moves one
// datagram per message.
func offloads(*net.UDPConn) (gso, gro bool) { return false, false }

// The offload helpers below are unreachable without offloads; they exist so
// that the relay compiles everywhere.

const segmentCmsgLen, groCmsgLen = 0, 0

func putSegmentCmsg(b []byte, _ int) []byte { return b[:0] }
func groSegment([]byte) int                 { return 0 }
func isGSOError(error) bool                 { return false }
