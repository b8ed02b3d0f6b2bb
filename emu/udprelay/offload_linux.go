package udprelay

import (
	"errors"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// offloads asks the kernel for UDP segmentation offload on c and reports
// what it granted. GSO (UDP_SEGMENT, Linux 4.18) has no switch: a kernel
// that knows the option answers getsockopt for it, and then accepts a
// UDP_SEGMENT cmsg per send. GRO (UDP_GRO, Linux 5.0) is a socket option
// that makes reads return a run of same-size datagrams of one flow as one
// buffer plus a UDP_GRO cmsg with the segment size. Either may be refused
// (an old kernel, a seccomp filter); the relay then moves one datagram per
// message, as it did before the offloads.
func offloads(c *net.UDPConn) (gso, gro bool) {
	rc, err := c.SyscallConn()
	if err != nil {
		return false, false
	}
	rc.Control(func(fd uintptr) {
		_, gerr := unix.GetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_SEGMENT)
		gso = gerr == nil
		gro = unix.SetsockoptInt(int(fd), unix.IPPROTO_UDP, unix.UDP_GRO, 1) == nil
	})
	return gso, gro
}

// segmentCmsgLen is the size of one UDP_SEGMENT control message.
var segmentCmsgLen = unix.CmsgSpace(2)

// putSegmentCmsg writes into b (segmentCmsgLen bytes, 8-byte aligned) the
// control message that makes one send a GSO send of size-byte segments.
func putSegmentCmsg(b []byte, size int) []byte {
	b = b[:segmentCmsgLen]
	clear(b)
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.IPPROTO_UDP
	h.Type = unix.UDP_SEGMENT
	h.SetLen(unix.CmsgLen(2))
	*(*uint16)(unsafe.Pointer(&b[unix.CmsgLen(0)])) = uint16(size)
	return b
}

// groCmsgLen is the receive control buffer a GRO read needs (one UDP_GRO
// message; nothing else is enabled on the relay's sockets).
var groCmsgLen = unix.CmsgSpace(4)

// groSegment returns the segment size of a GRO read's control data, or 0
// when there is none (the buffer is one datagram).
func groSegment(oob []byte) int {
	for len(oob) >= unix.CmsgLen(0) {
		h := (*unix.Cmsghdr)(unsafe.Pointer(&oob[0]))
		n := int(h.Len)
		if n < unix.CmsgLen(0) || n > len(oob) {
			return 0
		}
		if h.Level == unix.IPPROTO_UDP && h.Type == unix.UDP_GRO && n >= unix.CmsgLen(4) {
			return int(*(*int32)(unsafe.Pointer(&oob[unix.CmsgLen(0)])))
		}
		oob = oob[min(unix.CmsgSpace(n-unix.CmsgLen(0)), len(oob)):]
	}
	return 0
}

// isGSOError reports a send that failed because the route's device cannot
// checksum in hardware, which UDP_SEGMENT requires (udp_send_skb: EIO);
// the socket must then stop using GSO.
func isGSOError(err error) bool { return errors.Is(err, syscall.EIO) }
