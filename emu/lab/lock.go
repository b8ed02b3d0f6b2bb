package lab

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// lockDir holds one lock file per running lab. The lock is an flock(2) on
// the file, which the kernel releases when the process dies, so a crashed
// lab never blocks the next one; the file holds the owner's pid for `lab
// down`.
const lockDir = "/run/hetquic"

func lockPath(name string) string { return filepath.Join(lockDir, "lab-"+name+".lock") }

// lock is a held lab lock.
type lock struct {
	f    *os.File
	path string
}

// ErrInUse is what errors.Is finds in Up's error when a live process
// holds the lab name's lock: a caller may pick another name.
var ErrInUse = errors.New("lab name in use")

// errInUse says that a live process holds the lab's lock.
type errInUse struct {
	name string
	pid  int
}

func (e errInUse) Error() string {
	return fmt.Sprintf("lab %q is up (pid %d); stop it first: hetquic lab down --name %s", e.name, e.pid, e.name)
}

// Is makes errors.Is(err, ErrInUse) true.
func (e errInUse) Is(target error) bool { return target == ErrInUse }

// acquireLock takes the lab's lock without waiting.
func acquireLock(name string) (*lock, error) {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return nil, fmt.Errorf("lab lock: %w", err)
	}
	p := lockPath(name)
	for range 5 {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o644)
		if err != nil {
			return nil, fmt.Errorf("lab lock: %w", err)
		}
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, unix.EWOULDBLOCK) {
				return nil, errInUse{name, readPid(p)}
			}
			return nil, fmt.Errorf("lab lock: %w", err)
		}
		// The previous owner unlinks the file before unlocking; if that
		// happened between our open and flock, we hold a dead inode: retry.
		var a, b unix.Stat_t
		if unix.Fstat(int(f.Fd()), &a) == nil && unix.Stat(p, &b) == nil && a.Ino == b.Ino && a.Dev == b.Dev {
			f.Truncate(0)
			f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
			return &lock{f: f, path: p}, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("lab lock %s: keeps changing under us", p)
}

// release removes and unlocks the lock file.
func (l *lock) release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	l.f.Close() // releases the flock
	l.f = nil
}

func readPid(p string) int {
	b, err := os.ReadFile(p)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// lockHeld reports whether a live process holds the lab's lock, and its pid.
func lockHeld(name string) (bool, int) {
	l, err := acquireLock(name)
	var iu errInUse
	if errors.As(err, &iu) {
		return true, iu.pid
	}
	if err == nil {
		l.release()
	}
	return false, 0
}

// stopOwner asks the process that holds the lab's lock to stop (SIGTERM, so
// it cleans up itself) and waits up to wait for the lock to be released.
func stopOwner(name string, wait time.Duration) error {
	held, pid := lockHeld(name)
	if !held {
		return nil
	}
	if pid <= 1 || pid == os.Getpid() {
		return fmt.Errorf("lab %q is held by an unknown process (lock %s)", name, lockPath(name))
	}
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop lab %q (pid %d): %w", name, pid, err)
	}
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		if held, _ := lockHeld(name); !held {
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("lab %q: pid %d did not stop within %v", name, pid, wait)
}
