package lab

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// netnsDir is where `ip netns add` bind-mounts named network namespaces.
const netnsDir = "/var/run/netns"

// ipCmd is the iproute2 binary; lookIP finds it once.
var ipCmd string

// lookIP finds the ip command or says clearly that iproute2 is missing.
func lookIP() (string, error) {
	if ipCmd != "" {
		return ipCmd, nil
	}
	p, err := exec.LookPath("ip")
	if err != nil {
		return "", errors.New("lab: the ip command (iproute2) is not installed; install it (apt-get install iproute2)")
	}
	ipCmd = p
	return p, nil
}

// ip runs `ip ARGS…` and returns its error with ip's own message.
func ip(args ...string) error {
	_, err := ipOut(args...)
	return err
}

// ipOut runs `ip ARGS…` and returns its standard output.
func ipOut(args ...string) (string, error) {
	bin, err := lookIP()
	if err != nil {
		return "", err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// nsExists reports whether the named namespace exists (is bind-mounted).
func nsExists(ns string) bool {
	_, err := os.Stat(filepath.Join(netnsDir, ns))
	return err == nil
}

// inNetns runs f on an OS thread switched into the named network namespace;
// sockets and TUN devices f creates belong to that namespace. The thread is
// switched back before it is released; if that fails, the thread stays
// locked and Go discards it when the goroutine ends, so no other goroutine
// ever runs in the wrong namespace.
func inNetns(ns string, f func() error) error {
	target, err := os.Open(filepath.Join(netnsDir, ns))
	if err != nil {
		return fmt.Errorf("netns %s: %w", ns, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	// A fresh goroutine: if switching back fails it exits with its thread
	// locked, which terminates the thread.
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("netns: %w", err)
			return
		}
		defer self.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		ferr := f()
		if err := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- errors.Join(ferr, fmt.Errorf("setns back from %s: %w", ns, err))
			return // thread stays locked and dies with the goroutine
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}

// writeSysctl writes a /proc/sys file (key like "net/ipv4/ip_forward")
// inside the namespace.
func writeSysctl(ns string, kv map[string]string) error {
	return inNetns(ns, func() error {
		var errs []error
		for k, v := range kv {
			if err := os.WriteFile(filepath.Join("/proc/sys", k), []byte(v), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("sysctl %s in %s: %w", k, ns, err))
			}
		}
		return errors.Join(errs...)
	})
}

// nsPids lists the processes in the named namespace.
func nsPids(ns string) []int {
	out, err := ipOut("netns", "pids", ns)
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(out) {
		if p, err := strconv.Atoi(f); err == nil && p > 1 && p != os.Getpid() {
			pids = append(pids, p)
		}
	}
	return pids
}

// killNsProcs ends every process inside ns: SIGTERM, then SIGKILL after
// grace. These are the programs `lab exec` (or a test) started inside the
// lab; nothing outside the lab's namespaces is touched.
func killNsProcs(ns string, grace time.Duration) {
	pids := nsPids(ns)
	if len(pids) == 0 {
		return
	}
	for _, p := range pids {
		syscall.Kill(p, syscall.SIGTERM)
	}
	deadline := time.Now().Add(grace)
	for time.Now().Before(deadline) {
		if len(nsPids(ns)) == 0 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, p := range nsPids(ns) {
		syscall.Kill(p, syscall.SIGKILL)
	}
	deadline = time.Now().Add(2 * time.Second)
	for len(nsPids(ns)) > 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
}

// delNetns ends ns's processes and deletes it (its devices, addresses,
// routes, rules and MPTCP endpoints go with it). A namespace that does not
// exist is not an error.
func delNetns(ns string) error {
	if !nsExists(ns) {
		return nil
	}
	killNsProcs(ns, time.Second)
	if err := ip("netns", "del", ns); err != nil && nsExists(ns) {
		return err
	}
	return nil
}

// runIPBatch runs `ip -n NS -batch -` with script on its standard input.
func runIPBatch(bin, ns, script string) error {
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "-n", ns, "-batch", "-")
	cmd.Stdin = strings.NewReader(script)
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip -n %s -batch: %v: %s", ns, err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// ExecArgs returns the command line that runs argv inside the client
// ("client") or server ("server") namespace of the lab called name:
// `ip netns exec NS argv…`. The lab must be up.
func ExecArgs(name, side string, argv []string) ([]string, error) {
	if name == "" {
		name = DefaultName
	}
	if err := ValidName(name); err != nil {
		return nil, err
	}
	var ns string
	switch side {
	case "client":
		ns = ClientNS(name)
	case "server":
		ns = ServerNS(name)
	default:
		return nil, fmt.Errorf("lab exec: %q: want client or server", side)
	}
	if len(argv) == 0 {
		return nil, errors.New("lab exec: no command")
	}
	bin, err := lookIP()
	if err != nil {
		return nil, err
	}
	if !nsExists(ns) {
		return nil, fmt.Errorf("lab %q is not up (no namespace %s); start it with hetquic lab up", name, ns)
	}
	return append([]string{bin, "netns", "exec", ns}, argv...), nil
}
