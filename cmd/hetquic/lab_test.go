package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hetquic/hetquic/emu/lab"
	"github.com/hetquic/hetquic/internal/citest"
)

func TestLabBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"lab"}, "lab: missing subcommand"},
		{[]string{"lab", "sideways"}, "unknown subcommand \"sideways\""},
		{[]string{"lab", "up"}, "needs exactly one SCENARIO"},
		{[]string{"lab", "up", "no-such.yaml"}, "no-such.yaml"},
		{[]string{"lab", "up", "--name", "Bad-Name", "x.yaml"}, "lab name \"Bad-Name\""},
		{[]string{"lab", "exec", "middle", "--", "true"}, "want client or server"},
		{[]string{"lab", "exec", "client"}, "no command"},
		{[]string{"lab", "down", "extra"}, "unexpected argument"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if last := lines[len(lines)-1]; code != 2 || !strings.Contains(last, tc.want) {
			t.Errorf("%v: exit %d, last stderr line %q; want exit 2 and %q", tc.args, code, last, tc.want)
		}
	}
}

// TestLabCLI runs `hetquic lab up` with a control API, looks inside with
// `lab exec`, changes a path with `emu set`, stops it with `lab down`, and
// checks that nothing is left.
func TestLabCLI(t *testing.T) {
	if err := lab.Available(); err != nil {
		citest.Skip(t, fmt.Sprintf("lab tests: %v", err))
	}
	name := fmt.Sprintf("c%d_cli", os.Getpid()%100000)
	dir := t.TempDir()
	scen := filepath.Join(dir, "s.yaml")
	os.WriteFile(scen, []byte("name: cli\npaths:\n  - name: wifi0\n    down: {delay_ms: 5}\n  - name: lte0\n"), 0o644)
	sock := "unix:" + filepath.Join(dir, "control.sock")
	up := exec.Command(hetquicBin, "lab", "up", scen, "--name", name, "--control", sock)
	stderr, err := up.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := up.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		up.Process.Kill() // a no-op when it has exited
		lab.Down(name)
	}()
	sc := bufio.NewScanner(stderr)
	var log []string
	for sc.Scan() {
		log = append(log, sc.Text())
		if strings.Contains(sc.Text(), "run programs with") {
			break
		}
	}
	if !strings.Contains(strings.Join(log, "\n"), "wifi0=10.200.1.2") {
		t.Fatalf("lab up said:\n%s", strings.Join(log, "\n"))
	}
	drained := make(chan struct{})
	go func() {
		for sc.Scan() {
		}
		close(drained)
	}()

	out, errs, code := runCLI(t, "lab", "exec", "client", "--name", name, "--", "ip", "-br", "addr")
	if code != 0 || !strings.Contains(out, "wifi0") || !strings.Contains(out, "10.200.2.2/24") {
		t.Errorf("lab exec client: exit %d\n%s%s", code, out, errs)
	}
	out, errs, code = runCLI(t, "lab", "exec", "server", "--name", name, "--", "ip", "route", "get", "10.200.2.2")
	if code != 0 || !strings.Contains(out, "dev lte0") {
		t.Errorf("lab exec server: exit %d\n%s%s", code, out, errs)
	}
	if _, errs, code := runCLI(t, "emu", "set", "--control", sock, "--path", "lte0", "{up: {delay_ms: 7}}"); code != 0 {
		t.Errorf("emu set: exit %d: %s", code, errs)
	}
	out, errs, code = runCLI(t, "emu", "stats", "--control", sock, "--json")
	if code != 0 || !strings.Contains(out, `"lte0"`) || !strings.Contains(out, "read_errors") {
		t.Errorf("emu stats: exit %d\n%s%s", code, out, errs)
	}

	if _, errs, code := runCLI(t, "lab", "down", "--name", name); code != 0 || !strings.Contains(errs, "removed") {
		t.Errorf("lab down: exit %d: %s", code, errs)
	}
	done := make(chan error, 1)
	go func() { <-drained; done <- up.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("lab up after lab down: %v", err)
		}
	case <-time.After(10 * time.Second):
		up.Process.Signal(syscall.SIGKILL)
		t.Fatal("lab up did not stop")
	}
	if lab.Exists(name) {
		t.Error("namespaces left after lab down")
	}
	if _, errs, code := runCLI(t, "lab", "exec", "client", "--name", name, "--", "true"); code == 0 || !strings.Contains(errs, "not up") {
		t.Errorf("lab exec on a stopped lab: exit %d: %s", code, errs)
	}
}
