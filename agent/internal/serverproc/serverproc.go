// Package serverproc runs a real ct-server process for the agent's
// benchmarks (agent/abuse, agent/capacity): it writes the server's file,
// starts it on free loopback addresses with a self-signed certificate,
// waits until it is healthy, reads its memory and CPU from /proc, and
// stops it. A process of its own, not an in-process server, so that its
// RSS and CPU are ct-server's alone.
package serverproc

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Proc is a running ct-server: its process, the addresses it listens on
// and the CA file it wrote.
type Proc struct {
	Cmd                      *exec.Cmd
	UDPAddr, MetricsAddr, CA string
}

// stopGrace is how long Stop waits after SIGTERM before it kills: the
// server drains for 1 s (--drain), and a margin for its last writes.
const stopGrace = 5 * time.Second

// healthyWithin bounds WaitHealthy: a ct-server starts in well under a
// second; twenty leave room for a loaded machine.
const healthyWithin = 20 * time.Second

// Start writes conf (ct-server's YAML) to dir/server.yaml and starts
// ct-server through command (the caller's way to run "hetquic agent
// server" with args), with its state and CA file in dir. Its stderr goes
// to log (nil: discarded).
func Start(command func(args ...string) *exec.Cmd, dir, conf string, log io.Writer) (*Proc, error) {
	confFile := filepath.Join(dir, "server.yaml")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	udpAddr, err := FreeAddr("udp")
	if err != nil {
		return nil, err
	}
	metricsAddr, err := FreeAddr("tcp")
	if err != nil {
		return nil, err
	}
	ca := filepath.Join(dir, "ca.pem")
	cmd := command("--config", confFile, "--listen", udpAddr, "--self-signed", "--state-dir", filepath.Join(dir, "state"),
		"--write-ca", ca, "--metrics", metricsAddr, "--drain", "1s")
	if log != nil {
		cmd.Stderr = log
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ct-server: %w", err)
	}
	return &Proc{Cmd: cmd, UDPAddr: udpAddr, MetricsAddr: metricsAddr, CA: ca}, nil
}

// Stop ends ct-server with SIGTERM, killing it after stopGrace.
func (p *Proc) Stop() {
	p.Cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { p.Cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(stopGrace):
		p.Cmd.Process.Kill()
		<-done
	}
}

// WaitHealthy waits (up to healthyWithin) for ct-server's /healthz to
// answer 200.
func (p *Proc) WaitHealthy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, healthyWithin)
	defer cancel()
	for {
		resp, err := http.Get("http://" + p.MetricsAddr + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ct-server not healthy: %w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Pid is the server's process ID.
func (p *Proc) Pid() int { return p.Cmd.Process.Pid }

// FreeAddr returns a loopback address free for network "udp" or "tcp"
// just now (ct-server binds it a moment later).
func FreeAddr(network string) (string, error) {
	if network == "udp" {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer pc.Close()
		return pc.LocalAddr().String(), nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// Status reads a "kB" field of /proc/PID/status in bytes (0 if it
// cannot: not Linux, or the process is gone).
func Status(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// clockTick is /proc's unit of CPU time (USER_HZ, 100 on Linux).
const clockTick = 10 * time.Millisecond

// CPU is the user + system CPU time of process pid (0 if it cannot).
func CPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	return ParseStatCPU(string(b))
}

// ParseStatCPU reads utime + stime from a /proc/PID/stat line: the 12th
// and 13th fields after the command name, which may hold spaces and
// parentheses, so the fields are counted from its last ')'.
func ParseStatCPU(s string) time.Duration {
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 13 {
		return 0
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(u+st) * clockTick
}
