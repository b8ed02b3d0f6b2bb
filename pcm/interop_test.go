package pcm

import (
	"bufio"
	"bytes"
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
	cmd := exec.Command("python3", "../interop/aioquic_server.py", "127.0.0.1", fmt.Sprint(port),
		filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem"))
	stdout, _ := cmd.StdoutPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := make(chan string, 1000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	select {
	case l := <-lines:
		if l != "listening" {
			t.Fatalf("aioquic server said %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("aioquic server did not start")
	}

	sel := polling(3)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := Dial(ctx, Config{
		Server: fmt.Sprintf("127.0.0.1:%d", port), ServerName: "localhost",
		TLS: &tls.Config{RootCAs: pair.Pool}, Paths: loopbackPaths(3), Selector: sel,
		ProbeTimeout: 2 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	onTarget := 0
	for i := range 30 {
		var body bytes.Buffer
		res, err := c.Get(ctx, "/bytes/5120", &body)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		checkPattern(t, body.Bytes(), 5120)
		if res.Path == i%3 {
			onTarget++
		}
	}
	// The server's log names the client address it saw for each request.
	seen := map[string]bool{}
	timeout := time.After(2 * time.Second)
collect:
	for len(seen) < 3 {
		select {
		case l, ok := <-lines:
			if !ok {
				break collect
			}
			if host, _, found := strings.Cut(l, ":"); found {
				seen[host] = true
			}
		case <-timeout:
			break collect
		}
	}
	t.Logf("aioquic saw client addresses %v; %d of 30 requests on the chosen path", seen, onTarget)
	if onTarget != 30 || len(seen) != 3 {
		t.Errorf("migration against aioquic: %d of 30 on target, server saw %v", onTarget, seen)
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
