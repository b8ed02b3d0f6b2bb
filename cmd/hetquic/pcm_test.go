package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// hetquic pcm get against hetquic serve: three requests over two loopback
// paths, the connection's qlog written to --qlog-dir; pcm bench's rounds
// with progress on stderr; and a URL that is not one refused with exit 2.
func TestPCMGetQlogDir(t *testing.T) {
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.pem")
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := udp.LocalAddr().String()
	udp.Close()
	srv := exec.Command(hetquicBin, "serve", "--self-signed", "--write-ca", ca, "--listen", addr, "--log", "")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(ca); err == nil {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatal("hetquic serve wrote no CA")
		}
	}
	qlogs := filepath.Join(dir, "qlog")
	_, stderr, code := runCLI(t, "pcm", "get", "https://"+addr+"/bytes/1000", "--ca", ca,
		"--paths", "127.0.0.11,127.0.0.12", "-n", "3", "--qlog-dir", qlogs)
	if code != 0 || strings.Count(stderr, "status 200 1000 bytes") != 3 {
		t.Fatalf("pcm get: exit %d\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(qlogs, "*.sqlog"))
	if len(files) != 1 {
		t.Errorf("--qlog-dir holds %v, want one connection's qlog", files)
	}
	stdout, stderr, code := runCLI(t, "pcm", "bench", "https://"+addr+"/bytes/1000", "--ca", ca, "--paths", "127.0.0.11,127.0.0.12", "--rounds", "3")
	if code != 0 || !strings.Contains(stdout, "in 3 requests") || !strings.Contains(stderr, "pcm bench: 3/3 runs") {
		t.Errorf("pcm bench: exit %d, no summary or no progress:\n%s\n%s", code, stdout, stderr)
	}
	_, stderr, code = runCLI(t, "pcm", "get", "bytes/14", "--paths", "127.0.0.11")
	if code != 2 || !strings.Contains(stderr, `"bytes/14"`) {
		t.Errorf("pcm get bytes/14: exit %d, %s", code, stderr)
	}
}

// TestPCMCutsBadInput: each bad flag of pcm cuts is one line naming that
// flag, and exit 2, before anything runs.
func TestPCMCutsBadInput(t *testing.T) {
	for _, tc := range []struct{ args []string }{
		{[]string{"--rtts", "20,30"}}, {[]string{"--rtts", "20,x,40"}}, {[]string{"--setups", "-1"}},
		{[]string{"--cpu-gets", "0"}}, {[]string{"--cpu-rounds", "1"}},
	} {
		_, stderr, code := runCLI(t, append([]string{"pcm", "cuts"}, tc.args...)...)
		if code != 2 || strings.Count(strings.TrimSpace(stderr), "\n") != 0 || !strings.Contains(stderr, tc.args[0]) {
			t.Errorf("%v: exit %d, stderr %q", tc.args, code, stderr)
		}
	}
}
