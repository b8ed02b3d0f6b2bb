package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/citest"
)

// TestQuickStart runs agent/README.md's quick start as written, with the
// binary TestMain built as hetquic (instead of the go build line) and free
// ports instead of 8000, 4433 and 8080: the last command must print 200
// and the whole body (eventDeadline only ends a script that hangs).
func TestQuickStart(t *testing.T) {
	_, err := exec.LookPath("curl")
	citest.Require(t, "curl", err == nil)
	readme, err := os.ReadFile("../../agent/README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- quickstart -->")
	block, _, ok2 := strings.Cut(block, "<!-- /quickstart -->")
	if !ok || !ok2 {
		t.Fatal("agent/README.md has no quickstart block")
	}
	block = strings.TrimSpace(block)
	block = strings.TrimPrefix(block, "```sh")
	block = strings.TrimSuffix(block, "```")
	bin := filepath.Dir(hetquicBin)
	var lines []string
	for _, l := range strings.Split(block, "\n") {
		if strings.HasPrefix(l, "go build ") {
			l = "export PATH='" + bin + "':$PATH" // the binary TestMain built
		}
		lines = append(lines, l)
	}
	script := strings.Join(lines, "\n")
	for _, port := range []string{"8000", "8080"} {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, free, _ := net.SplitHostPort(l.Addr().String())
		l.Close()
		script = strings.ReplaceAll(script, "127.0.0.1:"+port, "127.0.0.1:"+free)
	}
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, free, _ := net.SplitHostPort(pc.LocalAddr().String())
	pc.Close()
	script = strings.ReplaceAll(script, "127.0.0.1:4433", "127.0.0.1:"+free)
	ctx, cancel := context.WithTimeout(context.Background(), eventDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	t.Cleanup(func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the script left behind
		}
	})
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("quick start: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "200 1000000") {
		t.Fatalf("quick start printed %q, want 200 1000000", out)
	}
	t.Logf("quick start: %q in %v", strings.TrimSpace(string(out)), time.Since(start).Round(time.Millisecond))
}
