package emu

import (
	"os"
	"syscall"
	"time"
	"unsafe"
)

// timerfdWaiter is a Waiter on a Linux timerfd (CLOCK_MONOTONIC, the clock
// of Go's monotonic time), read through the runtime's poller.
type timerfdWaiter struct {
	f  *os.File
	rc syscall.RawConn
}

const (
	clockMonotonic = 1
	tfdNonblock    = syscall.O_NONBLOCK
	tfdCloexec     = syscall.O_CLOEXEC
)

func newTimerfdWaiter() (*timerfdWaiter, error) {
	fd, _, errno := syscall.RawSyscall(syscall.SYS_TIMERFD_CREATE, clockMonotonic, tfdNonblock|tfdCloexec, 0)
	if errno != 0 {
		return nil, errno
	}
	f := os.NewFile(fd, "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &timerfdWaiter{f: f, rc: rc}, nil
}

type itimerspec struct {
	interval, value syscall.Timespec
}

func (w *timerfdWaiter) arm(d time.Duration) {
	var its itimerspec
	if d > 0 {
		its.value = syscall.NsecToTimespec(int64(d))
	}
	// Control keeps the fd open while it runs, so a concurrent Close
	// cannot make us arm a reused descriptor.
	w.rc.Control(func(fd uintptr) {
		syscall.RawSyscall6(syscall.SYS_TIMERFD_SETTIME, fd, 0, uintptr(unsafe.Pointer(&its)), 0, 0, 0)
	})
}

func (w *timerfdWaiter) Set(t time.Time) {
	if t.IsZero() {
		w.arm(0)
		return
	}
	w.arm(max(time.Until(t), 1))
}

func (w *timerfdWaiter) Wake() { w.arm(1) }

func (w *timerfdWaiter) Wait() bool {
	var buf [8]byte
	_, err := w.f.Read(buf[:])
	return err == nil
}

func (w *timerfdWaiter) Close() { w.f.Close() }
