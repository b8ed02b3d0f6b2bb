package ops

import (
	"net"
	"os"
)

// SdNotify sends state (READY=1, RELOADING=1, STOPPING=1, STATUS=…) to
// the service manager over $NOTIFY_SOCKET, systemd's sd_notify protocol:
// one unixgram datagram; a name starting with @ is in the abstract
// namespace. Without $NOTIFY_SOCKET (not started by systemd with
// Type=notify) it does nothing and says so with sent false. A few lines
// of the protocol, so no dependency on go-systemd.
func SdNotify(state string) (sent bool, err error) {
	name := os.Getenv("NOTIFY_SOCKET")
	if name == "" {
		return false, nil
	}
	if name[0] == '@' {
		name = "\x00" + name[1:]
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: name, Net: "unixgram"})
	if err != nil {
		return false, err
	}
	defer c.Close()
	if _, err := c.Write([]byte(state)); err != nil {
		return false, err
	}
	return true, nil
}
