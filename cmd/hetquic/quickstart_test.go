package main

import (
	"context"
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
// binary TestMain built as hetquic (instead of the go build line): the block
// must exit 0 and print 200 and the whole body (eventDeadline only ends a
// script that hangs). The same block asking
// for a path the app-server does not have (curl gets 404) must exit non-zero:
// a wrong answer is loud.
func TestQuickStart(t *testing.T) {
	_, err := exec.LookPath("curl")
	citest.Require(t, "curl", err == nil)
	script := quickStartScript(t)
	out, err := runQuickStart(t, script)
	if err != nil {
		t.Fatalf("quick start: %v\n%s", err, out)
	}
	if !strings.Contains(out, "200 1000000") {
		t.Fatalf("quick start printed %q, want 200 1000000", out)
	}
	wrong := strings.Replace(script, "/bytes/1000000", "/no-such-path", 1)
	if out, err := runQuickStart(t, wrong); err == nil {
		t.Fatalf("quick start with a 404 exited 0, printing %q", out)
	}
}

// quickStartScript is the quickstart block of agent/README.md, its go build
// line replaced by a PATH entry for the binary TestMain built.
func quickStartScript(t *testing.T) string {
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
			l = "export PATH='" + bin + "':$PATH" // TestMain's hetquic
		}
		lines = append(lines, l)
	}
	return strings.Join(lines, "\n")
}

// runQuickStart runs script in bash in a process group of its own (killed
// whole at the end) and returns its stdout.
func runQuickStart(t *testing.T, script string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), eventDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script)
	cmd.Dir = t.TempDir()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	defer func() {
		if cmd.Process != nil {
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // whatever the script left behind
		}
	}()
	start := time.Now()
	out, err := cmd.Output()
	t.Logf("quick start: %q in %v (%v)", strings.TrimSpace(string(out)), time.Since(start).Round(time.Millisecond), err)
	return string(out), err
}
