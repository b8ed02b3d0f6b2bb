package pcm

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hetquic/hetquic/internal/selfsigned"
)

// TestInteropAioquic migrates PCM-QUIC between three local addresses
// against aioquic's HTTP/3 stack (interop/aioquic_server.py): a server that
// shares no code with quic-go. CI installs aioquic; elsewhere the test
// skips with a message.
func TestInteropAioquic(t *testing.T) {
	srv := startAioquic(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{
		Server: srv.addr, ServerName: "localhost", TLS: srv.tls, Paths: loopbackPaths(3),
		Selector: polling(3), ProbeTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	onTarget := 0
	for i := range 30 {
		res := getPattern(ctx, t, c, i, 5120)
		if res.Path == i%3 {
			onTarget++
		}
	}
	// The server's log names the client address it saw for each request.
	seen := srv.clients(3)
	t.Logf("aioquic saw client addresses %v; %d of 30 requests on the chosen path", seen, onTarget)
	if onTarget != 30 || len(seen) != 3 {
		t.Errorf("migration against aioquic: %d of 30 on target, server saw %v", onTarget, seen)
	}
}

// A server that sends disable_active_migration: PCM warns once, stays on
// its path, and every request succeeds.
func TestMigrationRefused(t *testing.T) {
	srv := startAioquic(t, true)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var warnings []string
	c, err := Dial(ctx, Config{
		Server: srv.addr, ServerName: "localhost", TLS: srv.tls, Paths: loopbackPaths(3),
		Selector: polling(3), Logf: func(f string, a ...any) { warnings = append(warnings, fmt.Sprintf(f, a...)) },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 9 {
		res := getPattern(ctx, t, c, i, 2000)
		if res.Path != 0 || res.Switched {
			t.Errorf("request %d went on path %d (switched %v) although migration is disabled", i, res.Path, res.Switched)
		}
	}
	if len(warnings) == 0 || !strings.Contains(warnings[0], "migration unavailable") {
		t.Errorf("no clear warning: %q", warnings)
	}
	if seen := srv.clients(1); len(seen) != 1 {
		t.Errorf("server saw %v", seen)
	}
}

type aioquicServer struct {
	addr  string
	tls   *tls.Config
	lines chan string
}

// startAioquic runs interop/aioquic_server.py on a free loopback port; it
// skips the test when python3 or aioquic is missing (CI installs them).
func startAioquic(t *testing.T, noMigration bool) *aioquicServer {
	t.Helper()
	if err := exec.Command("python3", "-c", "import aioquic").Run(); err != nil {
		t.Skip("skipped: python3 with aioquic is not installed (pip install aioquic)")
	}
	pair, err := selfsigned.New()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM, keyPEM, err := pair.PEM()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "cert.pem"), certPEM, 0o600)
	os.WriteFile(filepath.Join(dir, "key.pem"), keyPEM, 0o600)
	port := freeUDPPort(t)
	args := []string{"../interop/aioquic_server.py", "127.0.0.1", fmt.Sprint(port),
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")}
	if noMigration {
		args = append(args, "--no-migration")
	}
	cmd := exec.Command("python3", args...)
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	s := &aioquicServer{addr: fmt.Sprintf("127.0.0.1:%d", port), tls: &tls.Config{RootCAs: pair.Pool}, lines: make(chan string, 1000)}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	select {
	case l := <-s.lines:
		if l != "listening" {
			t.Fatalf("aioquic server said %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("aioquic server did not start")
	}
	return s
}

// clients collects the client addresses in the server's log, waiting up to
// 2 s for `want` of them.
func (s *aioquicServer) clients(want int) map[string]bool {
	seen := map[string]bool{}
	timeout := time.After(2 * time.Second)
	for len(seen) < want {
		select {
		case l, ok := <-s.lines:
			if !ok {
				return seen
			}
			if host, _, found := strings.Cut(l, ":"); found {
				seen[host] = true
			}
		case <-timeout:
			return seen
		}
	}
	// Drain what is already there, to see addresses beyond want.
	for {
		select {
		case l := <-s.lines:
			if host, _, found := strings.Cut(l, ":"); found {
				seen[host] = true
			}
		default:
			return seen
		}
	}
}

func freeUDPPort(t *testing.T) int {
	t.Helper()
	c, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.LocalAddr().(*net.UDPAddr).Port
}
