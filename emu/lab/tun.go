package lab

import (
	"fmt"
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// openTUN creates the TUN device name inside the namespace ns and returns
// its file, non-blocking (so reads park on Go's poller and Close ends them).
// The device is not persistent: it disappears when the file is closed or the
// process dies, so a crashed lab leaves no TUN device behind.
func openTUN(ns, name string) (*os.File, error) {
	if len(name) >= unix.IFNAMSIZ {
		return nil, fmt.Errorf("tun %q: name longer than %d bytes", name, unix.IFNAMSIZ-1)
	}
	var f *os.File
	err := inNetns(ns, func() error {
		// The device is created in the namespace of the thread that opens
		// /dev/net/tun.
		fd, err := unix.Open("/dev/net/tun", unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open /dev/net/tun: %w", err)
		}
		var ifr [unix.IFNAMSIZ + 24]byte // struct ifreq: name, then flags
		copy(ifr[:unix.IFNAMSIZ], name)
		*(*uint16)(unsafe.Pointer(&ifr[unix.IFNAMSIZ])) = unix.IFF_TUN | unix.IFF_NO_PI
		if _, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.TUNSETIFF, uintptr(unsafe.Pointer(&ifr[0]))); errno != 0 {
			unix.Close(fd)
			return fmt.Errorf("tun %s in %s: TUNSETIFF: %w", name, ns, errno)
		}
		f = os.NewFile(uintptr(fd), "tun:"+ns+"/"+name)
		return nil
	})
	return f, err
}
