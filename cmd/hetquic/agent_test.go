package main

import (
	"crypto/rand"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hetquic/hetquic/agent"
	"github.com/hetquic/hetquic/agent/identity"
)

// TestAgentToken: "agent token FILE" writes a private 256-bit token once.
func TestAgentToken(t *testing.T) {
	name := filepath.Join(t.TempDir(), "ct.token")
	if _, stderr, code := runCLI(t, "agent", "token", name); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st, err := os.Stat(name)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v", st.Mode(), err)
	}
	b, _ := os.ReadFile(name)
	if tok := strings.TrimSpace(string(b)); len(tok) != 43 {
		t.Fatalf("token %q", tok)
	}
	if _, stderr, code := runCLI(t, "agent", "token", name); code != 2 || !strings.Contains(stderr, "exists") {
		t.Fatalf("overwrite: exit %d: %s", code, stderr)
	}
}

// TestAgentServerBadInput: weak tokens and bad flags are one-line errors
// with exit code 2.
func TestAgentServerBadInput(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"agent", "server", "--self-signed", "--state-dir", t.TempDir(), "--allow", "a:80", "--token", "passwordpassword"}, "token too weak"},
		{[]string{"agent", "server", "--log-format", "xml"}, `--log-format "xml": want text or json`},
		{[]string{"agent", "server", "--self-signed", "--allow", "a:80"}, "hetquic agent token FILE"},
		{[]string{"agent", "client", "--server", "127.0.0.1:1", "--token", "t", "--paths", "127.0.0.1", "--ca", "/nonexistent.pem"}, "--ca: ca:"},
	} {
		_, stderr, code := runCLI(t, tc.args...)
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if code != 2 || !strings.Contains(lines[len(lines)-1], tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
}

// lockedBuffer collects a process's stderr for the test to search, and
// wakes whoever waits for a string in it.
type lockedBuffer struct {
	mu      sync.Mutex
	b       strings.Builder
	changed chan struct{} // closed and replaced on every write
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.changed != nil {
		close(l.changed)
		l.changed = nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitLine blocks until the buffer holds a whole line that contains s
// and returns that line: the event itself, however late a loaded machine
// delivers it. The long deadline only ends a test whose process never
// writes s.
func (l *lockedBuffer) waitLine(t *testing.T, s string) string {
	t.Helper()
	deadline := time.After(eventDeadline)
	for {
		l.mu.Lock()
		text := l.b.String()
		if _, after, ok := strings.Cut(text, s); ok && strings.Contains(after, "\n") {
			l.mu.Unlock()
			i := strings.LastIndex(text[:len(text)-len(after)], "\n") + 1
			line, _, _ := strings.Cut(text[i:], "\n")
			return line
		}
		if l.changed == nil {
			l.changed = make(chan struct{})
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("no line with %q in stderr after %v:\n%s", s, eventDeadline, l.String())
		}
	}
}

// eventDeadline bounds a wait for an event that must come: far above what
// any load delays it by, it fails a test only when the event never comes.
const eventDeadline = 2 * time.Minute

// waitFor polls cond (a state another process changes, with no event to
// wait on) until it holds or eventDeadline passes.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(eventDeadline); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestAgentServerReload: a real ct-server process with --tokens-dir tells
// systemd it is ready (READY=1 on $NOTIFY_SOCKET); after a token file is
// removed and another added, SIGHUP reloads them: the revoked client's
// open connection goes on, its next hello is refused with the reason, the
// new client gets in.
func TestAgentServerReload(t *testing.T) {
	dir := t.TempDir()
	tokens := filepath.Join(dir, "tokens")
	os.Mkdir(tokens, 0o700)
	for _, id := range []string{"alice", "bob"} {
		if _, err := identity.WriteTokenFile(filepath.Join(dir, id+".token"), rand.Read); err != nil {
			t.Fatal(err)
		}
	}
	tok := func(id string) string {
		b, _ := os.ReadFile(filepath.Join(dir, id+".token"))
		return strings.TrimSpace(string(b))
	}
	os.WriteFile(filepath.Join(tokens, "alice"), []byte(tok("alice")), 0o600)
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	ca := filepath.Join(dir, "ca.pem")
	ml, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	metrics := ml.Addr().String()
	ml.Close()
	cmd := exec.Command(hetquicBin, "agent", "server", "--listen", "127.0.0.1:0", "--self-signed", "--state-dir", filepath.Join(dir, "state"),
		"--write-ca", ca, "--tokens-dir", tokens, "--allow", "127.0.0.1:9", "--metrics", metrics, "-v")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+filepath.Join(dir, "notify"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() }()
	notify.SetReadDeadline(time.Now().Add(eventDeadline))
	buf := make([]byte, 64)
	if n, err := notify.Read(buf); err != nil || string(buf[:n]) != "READY=1" {
		t.Fatalf("sd_notify: %q %v; stderr %s", buf[:n], err, stderr.String())
	}
	// READY=1 and the stderr line are two channels: exec's copy of the
	// pipe may deliver the line after the datagram arrived.
	_, addr, _ := strings.Cut(stderr.waitLine(t, "ct-server on "), "ct-server on ")
	addr, _, _ = strings.Cut(addr, ",")
	client := func(id string) *agent.Client {
		c, err := agent.NewClient(agent.ClientConfig{Server: addr, ServerName: "localhost", CAFile: ca, Token: tok(id),
			Paths: []agent.LocalPath{{Name: "lo", Addr: netip.MustParseAddr("127.0.0.1")}}, ReconnectMax: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	alice := client("alice")
	waitFor(t, "alice connected", func() bool { return alice.Ready() == 1 })
	os.Remove(filepath.Join(tokens, "alice"))
	os.WriteFile(filepath.Join(tokens, "bob"), []byte(tok("bob")), 0o600)
	cmd.Process.Signal(syscall.SIGHUP)
	if n, err := notify.Read(buf); err != nil || string(buf[:n]) != "RELOADING=1" {
		t.Fatalf("sd_notify on SIGHUP: %q %v", buf[:n], err)
	}
	stderr.waitLine(t, "reloaded the configuration and token files")
	bob := client("bob")
	waitFor(t, "bob connected", func() bool { return bob.Ready() == 1 })
	alice2 := client("alice")
	stderr.waitLine(t, "unknown token")
	if alice.Ready() != 1 || alice2.Ready() != 0 {
		t.Fatalf("after revoking alice: her open connection %d (want 1), a new one %d (want 0)", alice.Ready(), alice2.Ready())
	}
	// agent status reads the metrics endpoint: bob's line and the refusal.
	out, errs, code := runCLI(t, "agent", "status", "--metrics", metrics)
	if code != 0 || !strings.HasPrefix(out, "ct-server: ") || !strings.Contains(out, "\nbob ") || !strings.Contains(out, "unauthorized") {
		t.Fatalf("agent status: exit %d\n%s%s", code, out, errs)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	_, errs, code = runCLI(t, "agent", "status", "--metrics", metrics)
	if lines := strings.Split(strings.TrimSpace(errs), "\n"); code != 1 || len(lines) != 1 || !strings.Contains(errs, "cannot reach") {
		t.Fatalf("agent status of a stopped server: exit %d, %q", code, errs)
	}
}

// TestAgentClientReload: SIGHUP makes a running ct-client read its file and
// token file again (it once killed it, exit 129); a file that does not
// load leaves the running configuration, with one log line, and the
// process serves on.
func TestAgentClientReload(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	if _, err := identity.WriteTokenFile(tokenFile, rand.Read); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "client.yaml")
	write := func(body string) {
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	base := "server: 127.0.0.1:9\nserver_name: localhost\ntoken_file: " + tokenFile + "\npaths: [lo=127.0.0.1]\nlisten: [127.0.0.1:0]\n"
	write(base)
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: filepath.Join(dir, "notify"), Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer notify.Close()
	cmd := exec.Command(hetquicBin, "agent", "client", "--config", conf, "-v")
	cmd.Env = append(os.Environ(), "NOTIFY_SOCKET="+filepath.Join(dir, "notify"))
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	}()
	notify.SetReadDeadline(time.Now().Add(20 * time.Second))
	buf := make([]byte, 64)
	expect := func(state string) {
		t.Helper()
		if n, err := notify.Read(buf); err != nil || string(buf[:n]) != state {
			t.Fatalf("sd_notify: %q %v, want %s; stderr %s", buf[:n], err, state, stderr.String())
		}
	}
	expect("READY=1")
	write(base + "priority: {video: 3}\napp_rule: port\n")
	cmd.Process.Signal(syscall.SIGHUP)
	expect("RELOADING=1")
	expect("READY=1")
	waitFor(t, "reloaded", func() bool { return strings.Contains(stderr.String(), "msg=reloaded") })
	// The paths reload too: one added is dialled, one removed retired.
	write(strings.Replace(base, "paths: [lo=127.0.0.1]", "paths: [lo=127.0.0.1, lo2=127.0.0.2]", 1))
	cmd.Process.Signal(syscall.SIGHUP)
	expect("RELOADING=1")
	expect("READY=1")
	waitFor(t, "path added", func() bool { return strings.Contains(stderr.String(), `msg="path added" side=ct-client path=lo2 `) })
	write(strings.Replace(base, "paths: [lo=127.0.0.1]", "paths: [lo2=127.0.0.2]", 1))
	cmd.Process.Signal(syscall.SIGHUP)
	expect("RELOADING=1")
	expect("READY=1")
	waitFor(t, "path removed", func() bool {
		return strings.Contains(stderr.String(), "msg=\"path removed; its transfers move to the others\" side=ct-client path=lo\n")
	})
	if strings.Contains(stderr.String(), "need a restart") {
		t.Errorf("a reload of paths asked for a restart: %s", stderr.String())
	}
	write(base + "paths: [lo=127.0.0.1\n") // an unclosed [
	cmd.Process.Signal(syscall.SIGHUP)
	expect("RELOADING=1")
	expect("READY=1")
	waitFor(t, "reload refused", func() bool {
		return strings.Contains(stderr.String(), "reload failed; the running configuration stays")
	})
	if !strings.Contains(stderr.String(), "client.yaml:6: did not find expected") {
		t.Errorf("the unclosed [ is on line 6; stderr %s", stderr.String())
	}
	select {
	case err := <-exited:
		exited <- err
		t.Fatalf("ct-client exited after SIGHUP: %v; stderr %s", err, stderr.String())
	default:
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := <-exited; err != nil {
		t.Fatalf("exit after SIGTERM: %v", err)
	}
	exited <- nil
	t.Logf("stderr: %s", stderr.String())
}
